"""Plugins by entry point: the example package (examples/localjudge-plugin-example) adds the `keyword:` backend,
the `thumbs` format and the `thumbs_keywords` judge with no edit to localjudge, from the CLI, from Python and on
Ray workers; a broken plugin is one line naming it and leaves other commands alone; engines declare their
capabilities; format facts live on the formats; one sha256-of-a-file helper.

The example is a real installed package: CI installs it into .venv (scripts/test.sh); elsewhere it is installed
here with `pip install --no-deps --target DIR` and DIR goes on PYTHONPATH (entry points are read from its
dist-info). Plugin code runs in subprocesses, so this test session's own imports stay plugin-free.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import cli

from localjudge.cli import main
from localjudge.engine.backends import get_backend
from localjudge.engine.base import ScriptedEngine
from localjudge.engine.capabilities import ALL, Capability, CapabilityError, capabilities_of, require
from localjudge.formats import FORMATS, make_format
from localjudge.models.digest import sha256_file

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "localjudge-plugin-example"
REFUND = "Sorry about that, your refund is on its way."


@pytest.fixture(scope="session")
def plugin_env(tmp_path_factory, _localjudge_home):
    """The environment in which the example plugin is installed: this one (CI), or a `pip --target` dir on
    PYTHONPATH, also exported to this process's environment so a Ray cluster started later gives it to its
    workers."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    old = os.environ.get("PYTHONPATH")
    if importlib.util.find_spec("localjudge_plugin_example") is None:
        work = tmp_path_factory.mktemp("plugin")
        src, target = work / "src", work / "target"
        shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--target",
                str(target),
                str(src),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        env["PYTHONPATH"] = os.pathsep.join([str(target), env["PYTHONPATH"]])
        os.environ["PYTHONPATH"] = env["PYTHONPATH"]
    yield env
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


def on_path(env: dict[str, str]) -> dict[str, str]:
    """The PYTHONPATH of a fixture's environment, for `cli` to lay over the current one (what Ray set up since,
    its auth token, included)."""
    return {"PYTHONPATH": env["PYTHONPATH"]}


def python(env: dict[str, str], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": env["PYTHONPATH"]}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


# ----------------------------------------------------------------------------------------- the example


@pytest.mark.system
def test_the_plugin_backend_format_and_judge_work_from_the_cli(plugin_env):
    up = cli("judge", "thumbs_keywords", "--model", "keyword:refund", "--field", f"output={REFUND}", env=on_path(plugin_env))
    assert up.returncode == 0, up.stderr
    res = json.loads(up.stdout)
    assert res["value"] == "up" and res["passed"] is True and res["rationale"] == "the text mentions 'refund'"
    assert res["format"] == "thumbs(field_tokens=60)" and res["model_id"] == "keyword:refund"

    down = cli(
        "judge", "thumbs_keywords", "--model", "keyword:refund", "--option", "invert=true", "--probs", env=on_path(plugin_env)
    )
    assert down.returncode == 2 and "needs variable 'output'" in down.stderr  # the plugin judge's own variables
    down = cli(
        "judge", "thumbs_keywords", "--model", "keyword:refund", "--probs", "--field", "output=Hello.", env=on_path(plugin_env)
    )
    assert down.returncode == 0 and json.loads(down.stdout)["value"] == "down"
    assert json.loads(down.stdout)["expected_score"] == 0.0  # the backend declares token probabilities and gives them

    fmt = cli(
        "judge",
        "thumbs",
        "--prompt",
        "Is a refund a good answer?",
        "--model",
        "keyword:refund",
        "--fast",
        env=on_path(plugin_env),
    )
    assert fmt.returncode == 0 and json.loads(fmt.stdout)["raw_text"] == "thumb: up"  # a plugin format by name, fast variant
    parsed = cli("parse", "thumbs", stdin="Reason: polite and complete\nThumb: UP\n", env=on_path(plugin_env))
    assert parsed.returncode == 0 and json.loads(parsed.stdout)["value"] == "up"

    listed = cli("judges", "list", env=on_path(plugin_env))
    assert listed.returncode == 0 and "thumbs_keywords" in listed.stdout and "localjudge-plugin-example" in listed.stdout
    options = cli("models", "options", env=on_path(plugin_env))
    assert options.returncode == 0 and "keyword:  no model" in options.stdout and "invert" in options.stdout
    unknown = cli(
        "judge", "relevance_to_query", "--model", "nope:x", "--field", "input=q", "--field", "output=a", env=on_path(plugin_env)
    )
    assert unknown.returncode == 2 and "known: llama, scripted, server, keyword" in unknown.stderr


@pytest.mark.system
def test_the_plugin_format_constrains_the_real_model(plugin_env):
    r = cli(
        "judge",
        "thumbs_keywords",
        "--threads",
        "1",
        "--field",
        "input=What is 2+2?",
        "--field",
        "output=4",
        env=on_path(plugin_env),
    )
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["unscored_reason"] is None and res["value"] in ("up", "down")  # the regex held: it always parses
    assert res["raw_text"].startswith("reason: ") and res["raw_text"].split("\n")[1] in ("thumb: up", "thumb: down")


@pytest.mark.system
def test_the_plugin_works_from_python_batch_runs_and_agreement(plugin_env, tmp_path):
    code = """
        import json
        from localjudge import get_judge, load_engine, make_format
        from localjudge.labels.agreement import agree
        from localjudge import evaluate

        engine = load_engine("keyword:refund,sorry")
        judge = get_judge("thumbs_keywords")
        one = judge.evaluate(engine, output="Sorry, no.")
        rows = [{"id": "a", "output": "Your refund is sent."}, {"id": "b", "output": "Hello."}]
        run = evaluate(rows, ["thumbs_keywords"], model="keyword:refund", out="run")
        again = evaluate(rows, ["thumbs_keywords"], model="keyword:refund", out="run")
        results = list(run.results)
        labels = [{"id": "a", "label": "up"}, {"id": "b", "label": "up"}]
        rep = agree(list(again.results), labels, "label")
        print(json.dumps({
            "one": one.value, "fmt": make_format("thumbs").describe(),
            "values": [r.result.value for r in results], "backend": results[0].record.model_dump()["model_id"],
            "reused": again.counts.reused, "kind": rep.kind, "accuracy": rep.accuracy,
        }))
    """
    r = python(plugin_env, code, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["one"] == "up" and out["fmt"] == "thumbs(field_tokens=60)"
    assert out["values"] == ["up", "down"] and out["backend"] == "keyword:refund"
    assert out["reused"] == 2  # the plugin backend's identity keys the cache like any other
    assert out["kind"] == "categorical" and out["accuracy"] == 0.5  # the plugin format's label kind, from the format


@pytest.mark.system
@pytest.mark.slow
def test_the_plugin_backend_runs_on_ray_workers(plugin_env, ray_cluster, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"output": REFUND}) + "\n" + json.dumps({"output": "Hello."}) + "\n")
    args = ["run", str(data), "-j", "thumbs_keywords", "--model", "keyword:refund", "--engine", "ray"]
    r = cli(
        *args,
        "--ray-address",
        ray_cluster,
        "--workers",
        "1",
        "--out",
        str(tmp_path / "run"),
        "-q",
        env=on_path(plugin_env),
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted((x["row_index"], x["result"]["value"]) for x in rows) == [(0, "up"), (1, "down")]
    assert {x["record"]["model_id"] for x in rows} == {"keyword:refund"}


# ----------------------------------------------------------------------------------------- broken plugins


@pytest.fixture
def broken_env(plugin_env, tmp_path):
    """The plugin environment plus an installed distribution whose three entry points name a missing module."""
    info = tmp_path / "site" / "localjudge_broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: localjudge-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[localjudge.backends]\nbroken = no_such_module_xyz:Backend\n\n"
        "[localjudge.formats]\nbroken_fmt = no_such_module_xyz:Format\n\n"
        "[localjudge.judges]\nbroken = no_such_module_xyz.judges\n"
    )
    return {**plugin_env, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), plugin_env["PYTHONPATH"]])}


@pytest.mark.system
def test_a_broken_plugin_is_one_line_naming_it_and_other_commands_still_work(broken_env):
    scripted = ["--model", "scripted:", "--option", 'response={"rationale": "ok", "result": "yes"}']
    asked = cli(
        "judge", "relevance_to_query", "--model", "broken:x", "--field", "input=q", "--field", "output=a", env=on_path(broken_env)
    )
    assert asked.returncode == 2 and asked.stderr.count("\n") == 1 and "Traceback" not in asked.stderr
    assert "plugin 'localjudge-broken' entry point 'broken = no_such_module_xyz:Backend'" in asked.stderr
    fmt = cli("parse", "broken_fmt", stdin="x", env=on_path(broken_env))
    assert fmt.returncode == 2 and "entry point 'broken_fmt = no_such_module_xyz:Format'" in fmt.stderr
    assert fmt.stderr.count("\n") == 1

    other = cli("judge", "relevance_to_query", *scripted, "--field", "input=q", "--field", "output=a", env=on_path(broken_env))
    assert other.returncode == 0 and json.loads(other.stdout)["value"] == "yes"  # built-in judge: no plugin read
    plugin_judge = cli("judge", "thumbs_keywords", "--model", "keyword:x", "--field", "output=x", env=on_path(broken_env))
    assert plugin_judge.returncode == 0  # the working plugin's judge, with the broken one installed beside it
    listed = cli("judges", "list", env=on_path(broken_env))
    assert listed.returncode == 0 and "relevance_to_query" in listed.stdout and "thumbs_keywords" in listed.stdout
    assert "warning: plugin 'localjudge-broken' entry point 'broken = no_such_module_xyz.judges'" in listed.stderr
    options = cli("models", "options", env=on_path(broken_env))
    assert options.returncode == 0 and "broken:  (unavailable: plugin 'localjudge-broken'" in options.stdout
    missing = cli("judge", "no_such_judge", *scripted, "--field", "x=y", env=on_path(broken_env))
    assert missing.returncode == 2 and "unknown judge 'no_such_judge', and plugin 'localjudge-broken'" in missing.stderr


def install_plugin(site: Path, name: str, code: str) -> None:
    """A throwaway installed distribution `lj-NAME`: module `lj_NAME` (its `__init__` is `code`), declared as
    a judge folder (`NAME = lj_NAME`) and a backend (`NAME = lj_NAME:Backend`)."""
    (site / f"lj_{name}").mkdir(parents=True)
    (site / f"lj_{name}" / "__init__.py").write_text(textwrap.dedent(code))
    info = site / f"lj_{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: lj-{name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[localjudge.judges]\n{name} = lj_{name}\n\n[localjudge.backends]\n{name} = lj_{name}:Backend\n"
    )


def plugins_only(site: Path, timeout_s: str = "30") -> dict[str, str]:
    """The environment of the CLI with the distributions in `site` installed (and no other plugin) and a plugin
    import bound to `timeout_s` seconds."""
    return {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "LOCALJUDGE_PLUGIN_IMPORT_TIMEOUT": timeout_s}


@pytest.mark.system
@pytest.mark.parametrize(
    ("code", "raised"),
    [
        ("import sys\nsys.exit(7)\n", "SystemExit: 7"),
        ("raise KeyboardInterrupt\n", "KeyboardInterrupt: (no message)"),
        ("raise GeneratorExit\n", "GeneratorExit: (no message)"),
    ],
)
def test_a_plugin_that_exits_or_interrupts_while_importing_is_one_line_and_changes_no_exit_code(tmp_path, code, raised):
    site = tmp_path / "site"
    install_plugin(site, "bad", code)
    listed = cli("judges", "list", env=plugins_only(site))
    assert listed.returncode == 0, listed.stderr
    assert "relevance_to_query" in listed.stdout and "Aborted" not in listed.stderr
    assert (
        listed.stderr
        == f"warning: plugin 'lj-bad' entry point 'bad = lj_bad' (localjudge.judges) failed to load: {raised}; fix or uninstall it\n"
    )
    options = cli("models", "options", env=plugins_only(site))
    assert options.returncode == 0 and options.stdout.startswith("llama:"), options.stderr
    assert (
        f"bad:  (unavailable: plugin 'lj-bad' entry point 'bad = lj_bad:Backend' (localjudge.backends) failed to load: {raised}"
        in options.stdout
    )
    asked = cli(
        "judge", "relevance_to_query", "--model", "bad:x", "--field", "input=q", "--field", "output=a", env=plugins_only(site)
    )
    assert (
        asked.returncode == 2
        and asked.stderr.count("\n") == 1
        and f"'bad = lj_bad:Backend' (localjudge.backends) failed to load: {raised}" in asked.stderr
    )


def _terminal_sigint() -> None:
    """In the child before it runs: SIGINT as a terminal's Ctrl-C finds a command, unblocked and not ignored. A library
    an earlier test loaded into this test process may ignore or block SIGINT, and a child inherits both (in two whole-suite
    runs the command did not exit within 120 s of the signal; with SIGINT ignored here it never does); tests/test_runner_resume.py does the same."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.system
def test_a_plugin_whose_import_hangs_is_skipped_at_the_bound_and_a_real_ctrl_c_still_aborts(tmp_path):
    site, started = tmp_path / "site", tmp_path / "started"
    install_plugin(site, "hang", f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(600)\n")
    listed = cli("judges", "list", env=plugins_only(site, timeout_s="2"))
    assert listed.returncode == 0 and "relevance_to_query" in listed.stdout, listed.stderr
    assert listed.stderr == (
        "warning: plugin 'lj-hang' entry point 'hang = lj_hang' (localjudge.judges) did not finish importing in 2 s; "
        "skipped (fix or uninstall it, or raise LOCALJUDGE_PLUGIN_IMPORT_TIMEOUT)\n"
    )
    # in one process, the module that hung is not waited for again: its backend is refused at once
    code = """
        from localjudge.registry import plugins
        for group in (plugins.JUDGES, plugins.BACKENDS):
            try:
                plugins.load(plugins.find(group, "hang"))
            except plugins.PluginError as e:
                print(e)
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "LOCALJUDGE_PLUGIN_IMPORT_TIMEOUT": "2"}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == (
        "plugin 'lj-hang' entry point 'hang = lj_hang:Backend' (localjudge.backends) skipped: module 'lj_hang' did not "
        "finish importing earlier; fix or uninstall it"
    )
    # the user's own Ctrl-C while the plugin is importing is not the plugin's: the command aborts as always
    started.unlink()
    env["LOCALJUDGE_PLUGIN_IMPORT_TIMEOUT"] = "300"
    proc = subprocess.Popen(
        [sys.executable, "-m", "localjudge.cli", "judges", "list"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_terminal_sigint,
    )
    try:
        for _ in range(600):  # at most 60 s for the interpreter to reach the plugin's import
            if started.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert started.exists()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1 and err.strip() == "Aborted!" and out == ""


@pytest.mark.system
def test_help_and_built_in_commands_import_no_plugin(plugin_env, tmp_path):
    code = """
        import sys
        from click.testing import CliRunner
        from localjudge.cli import main
        assert CliRunner().invoke(main, ["--help"]).exit_code == 0
        r = CliRunner().invoke(main, ["judge", "relevance_to_query", "--model", "scripted:", "--option",
                                      'response={"result": "no"}', "--field", "input=q", "--field", "output=a"])
        assert r.exit_code == 0 and '"value": "no"' in r.output, r.output
        print(sorted(m for m in sys.modules if m.startswith("localjudge_plugin")))
    """
    r = python(plugin_env, code, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[]"


# ----------------------------------------------------------------------------------------- capabilities


@pytest.mark.system
def test_engines_and_backends_declare_their_capabilities(engine):
    assert capabilities_of(engine) == ALL  # llama.cpp: vocabulary, compile, token probabilities, streaming
    assert engine.vocab.pieces and engine.compile(make_format("yes_no_json")).initial is not None
    assert get_backend("llama").capabilities == ALL
    assert get_backend("server").capabilities == Capability.TOKEN_PROBS
    assert get_backend("scripted").capabilities == Capability.NONE
    assert capabilities_of(ScriptedEngine(["x"])) == Capability.NONE
    assert capabilities_of(ScriptedEngine(["x"], choice_steps=lambda m, f: [])) == Capability.TOKEN_PROBS
    assert capabilities_of(object()) == Capability.NONE  # an engine written before capabilities: can only generate


def test_a_missing_capability_is_one_line_naming_it_and_the_backend():
    with pytest.raises(CapabilityError) as e:
        require(ScriptedEngine(["x"]), Capability.TOKEN_PROBS, for_what="align")
    assert (
        str(e.value) == "model backend 'scripted' has no token probabilities, which align needs; use a llama: model (llama.cpp)"
    )
    assert e.value.exit_code == 2
    with pytest.raises(CapabilityError, match="'server' has no token vocabulary, no constraint compiler, which serve"):
        require(get_backend("server"), Capability.VOCABULARY | Capability.COMPILE, for_what="serve")
    require(get_backend("llama"), Capability.TOKEN_PROBS | Capability.STREAMING, for_what="anything")
    for cmd in (["judge", "relevance_to_query", "--field", "input=q", "--field", "output=a"], ["run", "rows.jsonl", "-j", "x"]):
        r = CliRunner().invoke(main, [*cmd, "--probs", "--model", "scripted:", "--option", "response=x"])
        assert r.exit_code == 2 and "model backend 'scripted' has no token probabilities, which --probs" in r.output


# ----------------------------------------------------------------------------------------- format facts


def test_each_format_states_how_its_results_compare_with_labels():
    """What agreement.py, pairwise.py and the MLflow adapter used to keep in side tables, now on the formats."""
    builtin = {k: cls for k, cls in FORMATS.items() if cls.__module__.startswith("localjudge.")}  # not a plugin's loaded earlier
    kinds = {k: cls.label_kind({}) for k, cls in builtin.items()}
    assert kinds == {
        "yes_no_json": ("categorical", ["yes", "no"]),
        "score_json": ("numeric", None),
        "pairwise_json": ("pairwise", [1, 2, "tie"]),
        "score_lines": ("numeric", None),
        "four_line": ("numeric", None),
        "choice": ("categorical", None),
        "statements": ("none", None),
        "verdict_list": ("numeric", None),
        "result_json": None,
        "json_schema": None,
        "text": None,
        "grammar": None,
        "prometheus": ("numeric", None),
        "flow_judge": ("numeric", None),
        "selene": ("numeric", None),
    }
    assert FORMATS["choice"].label_kind({"labels": ["a", 2]}) == ("categorical", ["a", "2"])
    assert FORMATS["prometheus"].label_kind({"mode": "relative"}) == ("pairwise", [1, 2, "tie"])
    assert [k for k, cls in builtin.items() if cls.is_pairwise({"mode": "relative"})] == ["pairwise_json", "prometheus", "selene"]
    assert [k for k, cls in builtin.items() if cls.is_pairwise({})] == ["pairwise_json"]
    ranges = {k: make_format(k, mode="absolute", min=1, max=7).score_range() for k in ("prometheus", "selene")}
    assert {k: (r.lo, r.hi) for k, r in ranges.items() if r} == {"prometheus": (1, 7), "selene": (1, 7)}
    assert make_format("score_json", min=0, max=10).score_range().hi == 10  # type: ignore[union-attr]
    assert make_format("score_lines").score_range().lo == 1  # type: ignore[union-attr]
    assert make_format("prometheus", mode="relative").score_range() is None  # its value is 1 or 2, not a score
    assert make_format("yes_no_json").score_range() is None and make_format("choice", labels=["a", "b"]).score_range() is None


def test_one_sha256_helper_reads_files_in_blocks(tmp_path):
    p = tmp_path / "blob.bin"
    data = os.urandom(3 * 1024 + 17)
    p.write_bytes(data)
    assert sha256_file(p, block=1024) == sha256_file(p) == hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------------------- docs/plugins.md

DOCS = ROOT / "docs" / "plugins.md"


def snippets(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


def test_the_docs_entry_points_are_the_example_plugins(plugin_env):
    (toml,) = snippets("toml")
    declared = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]["entry-points"]
    assert tomllib.loads(toml)["project"]["entry-points"] == declared


@pytest.mark.system
def test_the_docs_shell_snippets_run_as_written(plugin_env, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "localjudge").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m localjudge.cli "$@"\n')
    (bin_dir / "localjudge").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": plugin_env["PYTHONPATH"], "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    (block,) = snippets("bash")
    outputs = []
    for line in block.strip().splitlines():
        r = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", line], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
        )
        assert r.returncode == 0, (line, r.stderr[-2000:])
        outputs.append(r.stdout)
    assert json.loads(outputs[0])["value"] == "up" and json.loads(outputs[0])["rationale"] == "the text mentions 'refund'"
    assert json.loads(outputs[1])["format"] == "thumbs(field_tokens=60)" and json.loads(outputs[1])["unscored_reason"] is None
    assert json.loads(outputs[2])["value"] == "up"
    assert outputs[3].startswith("keyword:  no model")


@pytest.mark.system
def test_the_docs_python_snippets_run_as_written(plugin_env, tmp_path):
    found = snippets("python")
    assert len(found) == 3
    out = [python(plugin_env, code, tmp_path) for code in found]
    assert all(r.returncode == 0 for r in out), [r.stderr[-2000:] for r in out]
    assert out[0].stdout.splitlines() == ["up 1.0 the text mentions 'refund'", "down"]
    assert out[1].stdout.strip() == "no"
    assert out[2].stdout.splitlines() == [
        "Capability.NONE",
        "model backend 'scripted' has no token probabilities, which align needs; use a llama: model (llama.cpp)",
    ]
