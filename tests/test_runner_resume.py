"""Interrupted runs (SIGKILL, SIGINT) resume with every (row, judge) exactly once; scripted engine in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner_support import failing_engine, scripted_engine, tiny_judges

from localjudge import evaluate

pytestmark = pytest.mark.system

TESTS = Path(__file__).parent
N_ROWS = 60


def make_data(path: Path, n: int = N_ROWS) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"r{i}", "input": f"question {i}", "output": "wrong" if i % 3 == 0 else "fine"}) + "\n")
    return path


def start_run(data: Path, out: Path, delay_s: float) -> subprocess.Popen:
    script = textwrap.dedent(f"""
        import signal, sys
        # Ctrl-C as a terminal delivers it: whatever the test process left (a library in an earlier test
        # may ignore or block SIGINT, and children inherit both), the child starts with Python's default
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}})
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.path.insert(0, {str(TESTS)!r})
        from runner_support import scripted_engine, tiny_judges
        from localjudge import evaluate
        judges = tiny_judges()
        evaluate({str(data)!r}, judges, engine=scripted_engine(delay_s={delay_s}), out={str(out)!r}, chunk_size=4)
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stored(out: Path) -> int:
    db = out / "results.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=10) as c:
            return c.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def wait_for(out: Path, n: int, proc: subprocess.Popen, timeout_s: float = 60) -> int:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        got = stored(out)
        if got >= n:
            return got
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} results after {timeout_s} s")


def assert_each_cell_once(out: Path, n_cells: int) -> None:
    with sqlite3.connect(out / "results.sqlite") as c:
        pairs = c.execute("SELECT row_index, judge, COUNT(*) FROM results GROUP BY row_index, judge").fetchall()
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(pairs) == n_cells and all(k == 1 for _, _, k in pairs)
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == n_cells and len({(r["row_index"], r["judge"]) for r in lines}) == n_cells


def test_sigkill_mid_run_then_resume_completes_only_the_rest(tmp_path):
    data, out = make_data(tmp_path / "d.jsonl"), tmp_path / "run"
    proc = start_run(data, out, delay_s=0.02)
    wait_for(out, 20, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    before = stored(out)
    assert 20 <= before < 2 * N_ROWS
    eng = scripted_engine()
    run = evaluate(data, tiny_judges(), engine=eng, out=out)
    assert eng.calls == 2 * N_ROWS - before  # nothing finished is redone, nothing is lost
    assert run.counts.reused == before and len(run.results) == 2 * N_ROWS
    assert_each_cell_once(out, 2 * N_ROWS)
    again = failing_engine()
    assert evaluate(data, tiny_judges(), engine=again, out=out).counts.evaluated == 0 and again.calls == 0


def test_ctrl_c_keeps_and_exports_finished_results(tmp_path):
    data, out = make_data(tmp_path / "d.jsonl"), tmp_path / "run"
    proc = start_run(data, out, delay_s=0.02)
    wait_for(out, 10, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    meta = json.loads((out / "run.json").read_text())
    n = stored(out)
    assert meta["status"] == "interrupted" and meta["counts"]["evaluated"] in (n, n + 1)
    assert len((out / "results.jsonl").read_text().splitlines()) == n
    eng = scripted_engine()
    evaluate(data, tiny_judges(), engine=eng, out=out)
    assert eng.calls == 2 * N_ROWS - n
    assert_each_cell_once(out, 2 * N_ROWS)


def test_two_runs_writing_the_same_store_at_once_do_not_corrupt_it(tmp_path):
    data, out = make_data(tmp_path / "d.jsonl"), tmp_path / "run"
    procs = [start_run(data, out, delay_s=0.005) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert_each_cell_once(out, 2 * N_ROWS)
    with sqlite3.connect(out / "results.sqlite") as c:
        assert c.execute("SELECT COUNT(DISTINCT run_id) FROM results").fetchone()[0] == 1
    assert not [p for p in os.listdir(out) if ".tmp" in p]
