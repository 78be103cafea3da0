"""Smoke one extra of the INSTALLED wheel: `python scripts/ci/wheel_smoke.py EXTRA` (none, data, serve, hub,
mlflow, deepeval, ragas, ray), run by scripts/ci/test_wheel.sh with the python of a clean virtualenv that holds
the built wheel with that extra alone.

Standard library only (the no-extra venv has nothing else). Every model run uses one thread (`--threads 1`
on the CLI; Python snippets run pinned to one CPU, which is what the default `n_threads` follows). Each
check raises `SmokeError`; the script prints `wheel smoke [EXTRA] FAILED: what` and exits 1, else one
`ok` line per check. It never imports localjudge itself: it drives the installed CLI and snippets in
subprocesses, from a temporary directory, and first checks that `localjudge` resolves to the venv's
site-packages and not to a checkout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The page whose integration snippets run against the wheel: ONE constant. Snippets are found by what they
# call, not by their position or heading.
DOCS = ROOT / "docs" / "integrations.md"
SNIPPET_NEEDLES = {
    "mlflow": "mlflow.genai.evaluate",
    "deepeval": "LocalJudgeLLM",
    "ragas": "LocalJudgeRagasLLM",
    "data": "pd.DataFrame",
}
BIN = Path(sys.executable).parent
CLI = str(BIN / "localjudge")
QUIET_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_MODEL_CATALOG_URI": "",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "DO_NOT_TRACK": "true",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
}


# What pip resolved for localjudge's own requirements with this extra (the floors in pyproject.toml are
# checked against these and the test venv's: CONTRIBUTING.md, "Dependency floors").
RESOLVED = """
import importlib.metadata as md, re, sys
extra = sys.argv[1]
seen = []
for req in md.requires("localjudge") or []:
    name = re.match(r"[A-Za-z0-9._-]+", req).group(0)
    wanted = re.search(r'extra == "([^"]+)"', req)
    if name != "localjudge" and (wanted is None or wanted.group(1) == extra):
        try:
            seen.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass  # a marker that does not apply here (python_version)
print(", ".join(seen))
"""


class SmokeError(Exception):
    """One failed check, with what was expected and what came back."""


def one_cpu() -> None:
    """Pin the child to one CPU: the default n_threads (every CPU this process may use) becomes 1."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


class Smoke:
    """The checks for one extra, in a scratch directory with its own HOME and LOCALJUDGE_HOME."""

    def __init__(self, extra: str, work: Path) -> None:
        self.extra = extra
        self.work = work
        home = work / "home"
        home.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALJUDGE_", "HF_", "MLFLOW_", "PYTHON"))}
        self.env.update(QUIET_ENV, HOME=str(home), LOCALJUDGE_HOME=str(home / "localjudge"), HF_HOME=str(home / "hf"))

    def sh(self, *args: str, ok: tuple[int, ...] = (0,), stdin: str | None = None, timeout: float = 900, **env: str):
        """Run a command in the scratch dir; raise unless its exit code is in `ok`."""
        r = subprocess.run(
            list(args),
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.work,
            env={**self.env, **env},
            timeout=timeout,
            preexec_fn=one_cpu,
        )
        if r.returncode not in ok:
            raise SmokeError(f"{' '.join(args)[:200]} exited {r.returncode} (wanted {ok}): {r.stderr.strip()[-2000:]}")
        return r

    def cli(self, *args: str, **kw):
        """The installed `localjudge` command."""
        return self.sh(CLI, *args, **kw)

    def python(self, code: str, *args: str, **kw):
        """A Python snippet in this venv (with `args` as sys.argv[1:]), pinned to one CPU."""
        return self.sh(sys.executable, "-c", code, *args, **kw)

    def ok(self, what: str) -> None:
        print(f"wheel smoke [{self.extra}] ok: {what}", flush=True)

    # ---------------------------------------------------------------- checks shared by every extra
    def installed_not_checkout(self) -> None:
        r = self.python("import localjudge, localjudge.models, sys; print(localjudge.__file__)")
        where = Path(r.stdout.strip())
        if "site-packages" not in where.parts or ROOT in where.parents:
            raise SmokeError(f"localjudge imports from {where}, not from the venv's site-packages")
        self.ok(f"localjudge imports from the wheel ({where.parent})")
        versions = self.python(RESOLVED, self.extra).stdout.strip()
        self.ok(f"resolved {versions}")

    # ---------------------------------------------------------------- none: the base install
    def smoke_none(self) -> None:
        help_text = self.cli("--help").stdout
        if "judge" not in help_text or "run" not in help_text:
            raise SmokeError(f"localjudge --help lacks its commands: {help_text[:300]}")
        heavy = (
            self.python(
                "import sys, runpy; sys.argv=['localjudge','--help']\n"
                "try:\n    runpy.run_module('localjudge.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
                "print(sorted(m for m in ('pandas','pyarrow','scipy','starlette','uvicorn','mlflow','ray','huggingface_hub') if m in sys.modules), file=sys.stderr)"
            )
            .stderr.strip()
            .splitlines()[-1]
        )
        if heavy != "[]":
            raise SmokeError(f"localjudge --help imported optional extras: {heavy}")
        self.ok("--help (no optional extra imported)")
        verdict = json.loads(
            self.cli(
                "judge",
                "correctness",
                "--field",
                "input=What is the capital of France?",
                "--field",
                "output=Paris is the capital.",
                "--field",
                "ground_truth=Paris",
                "--threads",
                "1",
            ).stdout
        )
        if verdict.get("value") not in ("yes", "no"):
            raise SmokeError(f"judge correctness gave {verdict}")
        lines = self.cli(
            "judge", "score_lines", "--prompt", "Rate this haiku 1-5: old pond / frog jumps in / splash", "--threads", "1"
        )
        if not lines.stdout.strip():
            raise SmokeError("judge score_lines printed nothing")
        self.ok("judge correctness and judge score_lines on the default model")
        parsed = self.cli("parse", "score_lines", stdin="score: 4\njustification: mostly right\n").stdout
        if "4" not in parsed:
            raise SmokeError(f"parse score_lines gave {parsed!r}")
        bad = self.cli("parse", "score_lines", stdin="no score here\n", ok=(2,))
        if "Traceback" in bad.stderr:
            raise SmokeError(f"parse error is a traceback: {bad.stderr[-500:]}")
        self.ok("parse score_lines (exit 0; exit 2 on a parse error)")
        for args in (
            ("judges", "list"),
            ("judges", "show", "groundedness"),
            ("models", "list"),
            ("models", "verify", "smollm2-135m"),
        ):
            self.cli(*args)
        self.ok("judges list / show, models list / verify")
        out = self.work / "quickstart"
        self.cli(
            "run",
            str(ROOT / "examples" / "rag_sample.jsonl"),
            "--judge",
            "groundedness",
            "--judge",
            "correctness",
            "--out",
            str(out),
            "--limit",
            "2",
            "--threads",
            "1",
            "-q",
            ok=(0, 1),
        )
        summary = json.loads((out / "summary.json").read_text())
        if not (out / "results.jsonl").exists() or "groundedness" not in json.dumps(summary):
            raise SmokeError(f"the quick start run left no results: {sorted(p.name for p in out.iterdir())}")
        self.ok("quick start run (examples/rag_sample.jsonl, 2 rows x 2 judges)")
        made = self.cli("models", "optimize", "smollm2-135m", "--type", "Q4_0", "--no-measure", "--threads", "1").stdout
        if "use it: --model smollm2-135m-q4-0" not in made:
            raise SmokeError(f"models optimize said: {made[-500:]}")
        verdict = json.loads(
            self.cli(
                "judge", "yes_no_json", "--prompt", "Is 2+2=4?", "--model", "smollm2-135m-q4-0", "--fast", "--threads", "1"
            ).stdout
        )
        if verdict.get("value") not in ("yes", "no"):
            raise SmokeError(f"the converted model did not judge: {verdict}")
        self.ok("models optimize smollm2-135m --type Q4_0, then a judgement on the converted model")
        py = self.python(
            "import localjudge\n"
            'r = localjudge.judge("correctness", input="What is 2+2?", output="4", ground_truth="4")\n'
            "print(r.value, r.score, r.passed, r.rationale)\n"
        )
        if py.stdout.split()[0] not in ("yes", "no"):
            raise SmokeError(f"the Python quick start printed {py.stdout!r}")
        self.ok("Python quick start (localjudge.judge)")
        for args, extra in ((("serve", "--port", "0"), "serve"), (("models", "pull", "prometheus-2-7b"), "hub")):
            r = self.cli(*args, ok=(2,))
            self.one_line(r.stderr, f"localjudge[{extra}]", " ".join(args))
        self.ok("serve and models pull without their extra: one line naming it, exit 2")

    def one_line(self, stderr: str, needle: str, what: str) -> None:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        if len(lines) != 1 or needle not in lines[0] or "Traceback" in stderr:
            raise SmokeError(f"{what}: wanted one line with {needle!r}, got: {stderr.strip()[-1500:]}")

    # ---------------------------------------------------------------- data: parquet + the pandas snippet
    def smoke_data(self) -> None:
        rows = [json.loads(ln) for ln in (ROOT / "examples" / "rag_sample.jsonl").read_text().splitlines()[:2]]
        data = self.work / "rows.parquet"
        make = "import json, sys, pandas as pd; pd.DataFrame(json.loads(sys.stdin.read())).to_parquet(sys.argv[1])"
        self.python(make, str(data), stdin=json.dumps(rows))
        out = self.work / "parquet-run"
        self.cli("run", str(data), "-j", "relevance_to_query", "--fast", "--out", str(out), "--threads", "1", "-q", ok=(0, 1))
        results = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines() if ln.strip()]
        if len(results) != 2:
            raise SmokeError(f"the parquet run wrote {len(results)} results, wanted 2")
        self.ok("a parquet run (2 rows)")
        self.snippet("data")

    # ---------------------------------------------------------------- serve: one json_schema request
    def smoke_serve(self) -> None:
        proc = subprocess.Popen(
            [CLI, "serve", "--host", "127.0.0.1", "--port", "0", "--threads", "1", "--no-precompile"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.work,
            env=self.env,
        )
        try:
            url = None
            deadline = time.monotonic() + 300
            log: list[str] = []
            assert proc.stderr is not None
            while time.monotonic() < deadline and url is None:
                line = proc.stderr.readline()
                if not line:
                    break
                log.append(line.rstrip())
                m = re.search(r"localjudge serve: (\S+) on (http://127\.0\.0\.1:\d+/v1)", line)
                url, model = (m.group(2), m.group(1)) if m else (None, None)
            if url is None:
                raise SmokeError("localjudge serve did not start: " + " | ".join(log[-10:]))
            verdict = {
                "type": "object",
                "properties": {"rationale": {"type": "string"}, "result": {"enum": ["yes", "no"]}},
                "required": ["rationale", "result"],  # properties not required are optional, and may be left out
            }
            body = {
                "model": model,
                "messages": [{"role": "user", "content": "Is 'Paris' a correct answer to 'capital of France?'"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": verdict}},
            }
            req = urllib.request.Request(
                url + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req, timeout=600) as resp:
                answer = json.loads(resp.read())
            content = json.loads(answer["choices"][0]["message"]["content"])
            if content.get("result") not in ("yes", "no") or not isinstance(content.get("rationale"), str):
                raise SmokeError(f"the json_schema answer does not fit the schema: {content}")
            self.ok(f"serve answered a json_schema request ({content['result']})")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        if code != 0:
            raise SmokeError(f"localjudge serve exited {code} on SIGTERM")

    # ---------------------------------------------------------------- hub: pull from the loopback hub, no network
    def smoke_hub(self) -> None:
        sys.path.insert(0, str(ROOT / "tests"))
        from hub_server import FakeHub  # stdlib only

        src = (
            self.python("from localjudge.models.registry import resolve_model; print(resolve_model(None).path)")
            .stdout.strip()
            .splitlines()[-1]
        )
        with FakeHub(xet=True) as hub:
            hub.add("test/smol", "smol.gguf", Path(src))
            r = self.cli("models", "pull", "hf:test/smol/smol.gguf@main", "--name", "smol", HF_ENDPOINT=hub.url)
            if "recorded" not in r.stdout:
                raise SmokeError(f"models pull said: {r.stdout} {r.stderr}")
        self.cli("models", "verify", "smol")
        j = json.loads(
            self.cli("judge", "yes_no_json", "--prompt", "Is 2+2=4?", "--model", "smol", "--fast", "--threads", "1").stdout
        )
        if j.get("value") not in ("yes", "no"):
            raise SmokeError(f"judging with the pulled model gave {j}")
        self.ok("models pull from the loopback hub, verify, judge with it")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        r = self.cli("models", "pull", "prometheus-2-7b", ok=(3,), HF_ENDPOINT=f"http://127.0.0.1:{port}")
        self.one_line(r.stderr, "cannot reach the model hub", "models pull with no network")
        self.ok("models pull with no network: one line, exit 3")

    # ---------------------------------------------------------------- frameworks: the docs snippets
    def snippet(self, name: str) -> str:
        needle = SNIPPET_NEEDLES[name]
        found = [c for c in re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S) if needle in c]
        if len(found) != 1:
            raise SmokeError(f"{DOCS.name}: wanted one python snippet calling {needle}, found {len(found)}")
        r = self.python(found[0], MLFLOW_TRACKING_URI=f"sqlite:///{self.work / 'mlflow.db'}")
        last = (r.stdout.strip().splitlines() or [""])[-1]
        if name == "mlflow" and not ("correctness/mean" in last and "relevance_to_query/mean" in last):
            raise SmokeError(f"the MLflow snippet printed {last!r}")
        if name in ("deepeval", "ragas") and not 0.0 <= float(last) <= 1.0:
            raise SmokeError(f"the {name} snippet printed {last!r}")
        if name == "data" and last.split()[1] not in ("yes", "no"):
            raise SmokeError(f"the pandas snippet printed {last!r}")
        self.ok(f"the {name} snippet of {DOCS.name} ({last[:80]})")
        return last

    def smoke_mlflow(self) -> None:
        self.snippet("mlflow")

    def smoke_deepeval(self) -> None:
        self.snippet("deepeval")

    def smoke_ragas(self) -> None:
        self.snippet("ragas")

    # ---------------------------------------------------------------- ray: a 2-row run on a local cluster
    def smoke_ray(self) -> None:
        out = self.work / "ray-run"
        self.cli(
            "run",
            str(ROOT / "examples" / "rag_sample.jsonl"),
            "-j",
            "relevance_to_query",
            "--fast",
            "--limit",
            "2",
            "--engine",
            "ray",
            "--workers",
            "1",
            "--threads",
            "1",
            "--out",
            str(out),
            "-q",
            ok=(0, 1),
        )
        results = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines() if ln.strip()]
        if len(results) != 2 or any(r.get("error") for r in results):
            raise SmokeError(f"the ray run wrote {results}")
        self.ok("localjudge run --engine ray (2 rows)")


def main(argv: list[str]) -> int:
    """Run the smoke of the extra named in argv[0]; 0 when every check passed."""
    extras = ["none", "data", "serve", "hub", "mlflow", "deepeval", "ragas", "ray"]
    if len(argv) != 1 or argv[0] not in extras:
        print(f"usage: wheel_smoke.py {{{','.join(extras)}}}", file=sys.stderr)
        return 2
    extra = argv[0]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"wheel-smoke-{extra}-") as tmp:
        smoke = Smoke(extra, Path(tmp))
        try:
            smoke.installed_not_checkout()
            getattr(smoke, f"smoke_{extra}")()
        except (SmokeError, subprocess.TimeoutExpired, OSError, ValueError, KeyError, IndexError) as e:
            print(f"wheel smoke [{extra}] FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            return 1
    print(f"wheel smoke [{extra}] passed in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
