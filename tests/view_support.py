"""Test support for `localjudge view`: synthetic runs written through the real store, and a real `localjudge view`
process on a free loopback port.

`make_run` writes what `localjudge run` writes (results in results.sqlite through `Store.put`, run metadata in
the store and in run.json, results.jsonl), for a yes/no judge whose expected scores spread over [0, 1]:
fast, and with hostile text where asked. `ViewServer` starts `python -m localjudge view ... --port 0` and
reads the address from its banner.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localjudge.store.db import Store
from localjudge.store.results import JudgeResult, Record, ResultRow, Usage

HOSTILE = [
    "</script><script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=2">',
    '<a href="javascript:window.__pwned=3">click</a>',
]


def result_row(
    run_id: str,
    i: int,
    judge: str = "polite",
    seed: int = 0,
    text: str | None = None,
    item: int | None = None,
    data: str = "question",
) -> ResultRow:
    """One yes/no result: expected score from a seeded draw, value yes when it is >= 0.5; its inputs are data item
    `item` (default `i`) of the data set whose questions start with `data`."""
    rng = random.Random(f"{seed}:{judge}:{i}")
    es = round(rng.random(), 4)
    yes = es >= 0.5
    k = i if item is None else item
    body = text if text is not None else f"answer {k}: thanks for asking, here is how it works"
    return ResultRow(
        run_id=run_id,
        row_index=i,
        row_id=f"r{i}",
        source=f"data.jsonl:{i + 1}",
        judge=judge,
        inputs={"input": f"{data} {k}", "output": body},
        cache_key=f"k{judge}{i}",
        record=Record(
            model_id="synthetic",
            model_sha256="0" * 64,
            judge_version="v1",
            format="yes_no_json(field_tokens=80)",
            prompt_hash="h" * 16,
            decode_options={},
            seed=0,
            localjudge_version="test",
        ),
        result=JudgeResult(
            judge=judge,
            judge_version="v1",
            format="yes_no_json(field_tokens=80)",
            value="yes" if yes else "no",
            score=1.0 if yes else 0.0,
            passed=yes,
            rationale=text if text is not None else f"the answer to question {i} is {'polite' if yes else 'curt'}",
            raw_text=json.dumps({"rationale": "…", "verdict": "yes" if yes else "no"}),
            model_id="synthetic",
            usage=Usage(prompt_tokens=90, output_tokens=20, calls=1),
            expected_score=es,
        ),
    )


def make_run(
    out: Path,
    n_rows: int,
    judges: Sequence[str] = ("polite",),
    status: str = "finished",
    hostile: Sequence[str] = (),
    fast: bool = False,
    planned: int | None = None,
    seed: int = 0,
    order: Sequence[int] | None = None,
    data: str = "question",
) -> Path:
    """A run directory of `n_rows` rows x `judges` (the first rows carry the `hostile` texts); `fast` writes without
    fsync (for large benchmark runs only); `planned`: the rows the run will have (default n_rows); `seed` draws other verdicts;
    row i holds data item `order[i]` (default i) of the data set whose questions start with `data`."""
    out.mkdir(parents=True, exist_ok=True)
    with Store(out / "results.sqlite") as st:
        if fast:
            st.conn.execute("PRAGMA synchronous = OFF")
        run_id = st.run_for_dir()
        meta = {
            "run_id": run_id,
            "data": "data.jsonl",
            "judges": [{"name": j, "version": "v1"} for j in judges],
            "model_id": "synthetic",
            "schema_version": 1,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "finished": None if status == "running" else time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "status": status,
            "rows": planned or n_rows,
        }
        st.set_run_meta(run_id, meta)
        rows = []
        for i in range(n_rows):
            for j in judges:
                item = None if order is None else order[i]
                r = result_row(run_id, i, j, seed=seed, text=hostile[i] if i < len(hostile) else None, item=item, data=data)
                st.put(r)
                if not fast:
                    rows.append(r)
    (out / "run.json").write_text(json.dumps(meta))
    if not fast:
        (out / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    return out


def add_rows(out: Path, start: int, stop: int, judges: Sequence[str] = ("polite",)) -> None:
    """Commit more results to a run directory's store, as a running `localjudge run` does."""
    with Store(out / "results.sqlite") as st:
        run_id = st.latest_run() or ""
        for i in range(start, stop):
            for j in judges:
                st.put(result_row(run_id, i, j))


def panel_member(name: str, noise: float) -> Any:
    """A scripted panel member of known bias: yes when the row's hidden `feature=X`, read with this member's own
    seeded gaussian error, exceeds 0.5 (as tests/test_panel.py's members)."""
    from localjudge.engine.base import ScriptedEngine

    def answer(messages: Any, fmt: Any) -> str:
        x = float(re.findall(r"feature=([0-9.]+)", messages[-1].content)[-1])
        err = random.Random(f"{name}:{x}").gauss(0, noise)
        verdict = "yes" if x + err > 0.5 else "no"
        why = f"{name} reads the answer as {'on' if verdict == 'yes' else 'off'} topic"
        return '{"rationale": "' + why + '", "result": "' + verdict + '"}'

    return ScriptedEngine(answer, model_id=name)


def feature_rows(n: int, seed: int = 3) -> list[dict[str, Any]]:
    """Rows whose answer hides a feature in [0, 1]; `label` is the truth (yes above 0.5)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        x = rng.random()
        out.append({"id": f"r{i}", "input": f"Q{i}?", "output": f"A. feature={x:.4f}", "label": "yes" if x > 0.5 else "no"})
    return out


def make_panel_run(out: Path, n_rows: int, members: int = 3, noise: float = 0.3) -> Any:
    """A finished panel run (relevance_to_query, `members` scripted members) in `out`; its RunResult."""
    from localjudge import evaluate

    return evaluate(
        feature_rows(n_rows), ["relevance_to_query"], panel=[panel_member(f"m{k}", noise) for k in range(members)], out=out
    )


class ViewServer:
    """A real `localjudge view` process (stopped with `stop()`)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "localjudge", "view", *args, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"on (http://[^/]+)/", line)
            if m:
                self.url = m.group(1)
                return
        self.stop()
        raise RuntimeError("localjudge view did not start:\n" + "".join(lines))

    def request(
        self, path: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, parsed JSON or text, headers) of one request."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text, hdrs = r.status, r.read().decode(), dict(r.headers)
        except urllib.error.HTTPError as e:
            status, text, hdrs = e.code, e.read().decode(), dict(e.headers)
        try:
            return status, json.loads(text), hdrs
        except json.JSONDecodeError:
            return status, text, hdrs

    def csrf(self, path: str = "/") -> str:
        """The CSRF token a page carries."""
        _, text, _ = self.request(path)
        m = re.search(r'name="csrf-token" content="([^"]+)"', text)
        assert m, text[:300]
        return m.group(1)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then kill)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
