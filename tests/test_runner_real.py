"""Acceptance on the real default model: 15 mixed rows x 3 judges through `localjudge run`, stopped with
SIGTERM and then SIGKILL mid-run, resumed: every (row, judge) exactly once; a re-run loads no model.

The rows are the first 15 of runner_mixed30.jsonl (labels 1 / 0.6 / 0, list and string contexts, the blank
answer of row 13 followed by a good row): the resume properties need an interruption and a resume, not 30 rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_runner_resume import assert_each_cell_once, stored

pytestmark = pytest.mark.system

SOURCE = Path(__file__).parent / "data" / "runner_mixed30.jsonl"
N_ROWS = 15
JUDGES = ["correctness", "relevance_to_query", "groundedness"]
N_CELLS = N_ROWS * len(JUDGES)
N_BLANK = len(JUDGES)  # row 13 has a blank answer: an input error for each judge, no inference


def keyed(out: Path) -> int:
    import sqlite3

    with sqlite3.connect(out / "results.sqlite", timeout=30) as c:
        return c.execute("SELECT COUNT(*) FROM results WHERE cache_key IS NOT NULL").fetchone()[0]


def wait_until(out: Path, n: int, proc: subprocess.Popen, timeout_s: float = 900) -> None:
    deadline = time.time() + timeout_s
    while stored(out) < n:
        assert proc.poll() is None, f"run ended early with {proc.returncode}"
        assert time.time() < deadline, f"fewer than {n} results after {timeout_s} s"
        time.sleep(0.2)


@pytest.mark.slow
def test_real_run_interrupted_twice_resumes_to_each_cell_once_and_reruns_from_cache(tmp_path, _localjudge_home):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(SOURCE.read_text().splitlines(keepends=True)[:N_ROWS]))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "localjudge", "run", str(data), *sum((["-j", j] for j in JUDGES), []), "--out", str(out)]
    env = {**os.environ, "LOCALJUDGE_HOME": str(_localjudge_home)}

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(out, 3, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "run the same command again to resume" in err.lower()
    meta = json.loads((out / "run.json").read_text())
    first = stored(out)
    assert meta["status"] == "interrupted" and len((out / "results.jsonl").read_text().splitlines()) == first

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(out, first + 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    done = keyed(out)
    assert done < N_CELLS - N_BLANK

    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    assert r.returncode == 1, r.stderr  # the blank answer leaves row 13 unscored
    assert_each_cell_once(out, N_CELLS)
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["reused"] == done and counts["evaluated"] == N_CELLS - N_BLANK - done  # only the rest ran
    assert counts["failed"] == N_BLANK and counts["engine_loaded"]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {r["result"]["unscored_reason"] for r in rows if r["row_index"] == 13} == {"empty_value"}
    assert all(r["result"]["value"] in ("yes", "no") for r in rows if r["row_index"] != 13)
    assert all(r["record"]["model_sha256"] == rows[0]["record"]["model_sha256"] for r in rows if r["record"])
    summary = json.loads((out / "summary.json").read_text())
    assert {j: s["n"] for j, s in summary["judges"].items()} == dict.fromkeys(JUDGES, N_ROWS)

    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 1, again.stderr
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["evaluated"] == 0 and not counts["engine_loaded"] and counts["reused"] == N_CELLS - N_BLANK
    assert [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()] == rows
