"""SIGKILL at 20 random moments of one run: every finished result survives exactly once, and the
resumed run's export equals an uninterrupted run's (scripted engine, runner in a subprocess).

Each kill lands in one of three phases chosen at random: start-up (imports, opening and migrating
the store, re-reading finished cells), mid-run (while judgements run and commit) or, once all cells
are done, the export. The engine logs each call when it starts, so the test can count the judgements
a kill interrupted: at most the one in flight. LOCALJUDGE_KILL_SEED=<n> draws other kill moments.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner_support import comparable_rows, failing_engine, scripted_engine, tiny_judges

from localjudge import evaluate
from localjudge.store.results import JudgeResult

pytestmark = pytest.mark.system

TESTS = Path(__file__).parent
N_ROWS, JUDGES, N_KILLS, DELAY_S = 12, 2, 20, 0.05
SEED = int(os.environ.get("LOCALJUDGE_KILL_SEED", "2"))  # kill moments are random but reproducible; vary to explore
N_CELLS = N_ROWS * JUDGES


def make_data(path: Path) -> Path:
    rows = []
    for i in range(N_ROWS):
        row = {"id": f"r{i}", "input": f"question {i}", "output": "wrong" if i % 3 == 0 else f"fine {i}"}
        if i == 5:
            row["output"] = "garbled"  # an unparseable verdict: unscored, cached like any result
        if i == 8:
            del row["output"]  # a bad row: a per-row input error, written again on every resume
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n")
    return path


def start(data: Path, out: Path, log: Path) -> subprocess.Popen:
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(TESTS)!r})
        from runner_support import scripted_text, tiny_judges
        from localjudge.engine.base import ScriptedEngine
        from localjudge import evaluate

        def fn(messages, fmt):
            with open({str(log)!r}, "a") as f:
                f.write("call\\n")
            time.sleep({DELAY_S})
            return scripted_text(messages, fmt)

        judges = tiny_judges()
        evaluate({str(data)!r}, judges, engine=ScriptedEngine(fn, model_id="scripted"), out={str(out)!r}, chunk_size=4)
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def snapshot(out: Path) -> dict[tuple[int, str], tuple[str | None, str]]:
    """The store's cells: (row, judge) -> (cache_key, result JSON); checks integrity and whole rows."""
    db = out / "results.sqlite"
    if not db.exists():
        return {}
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        if not c.execute("SELECT 1 FROM sqlite_master WHERE name = 'results'").fetchone():
            return {}  # killed before the first migration committed
        assert c.execute("SELECT COUNT(DISTINCT run_id) FROM results").fetchone()[0] <= 1
        dup = c.execute("SELECT row_index, judge, COUNT(*) FROM results GROUP BY row_index, judge HAVING COUNT(*) > 1")
        assert dup.fetchall() == []
        rows = c.execute("SELECT row_index, judge, cache_key, result FROM results").fetchall()
    for _, _, _, res in rows:
        JudgeResult.model_validate_json(res)  # no half-written row
    return {(r, j): (k, res) for r, j, k, res in rows}


def check_export(out: Path, cells: dict) -> None:
    """results.jsonl is replaced atomically: absent, or whole lines that match stored cells."""
    p = out / "results.jsonl"
    if not p.exists():
        return
    for line in p.read_text().splitlines():
        r = json.loads(line)
        assert (r["row_index"], r["judge"]) in cells


def comparable(out: Path) -> tuple[list[dict], dict]:
    """results.jsonl rows sorted, without run-specific fields (run id, timings), and the per-judge summary."""
    return comparable_rows(out), json.loads((out / "summary.json").read_text())["judges"]


def judged(cells: dict) -> int:
    """Stored cells that needed the engine (row 8 is a bad row: it never reaches it)."""
    return sum(1 for r, _ in cells if r != 8)


def wait_kill(proc: subprocess.Popen, out: Path, log: Path, rng: random.Random, done: int) -> str:
    """Kill `proc` at a random moment of a random phase; returns the phase, or "finished" if it ended first."""
    spawned, before = time.time(), calls(log)
    if done < N_CELLS:
        phase = "startup" if rng.random() < 0.25 else "mid-run"
    else:
        phase = "startup" if rng.random() < 0.5 else "export"
    deadline = time.time() + 30
    if phase == "mid-run":  # this process's first judgement, then a random part of the next few
        while calls(log) == before and proc.poll() is None and time.time() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 5 * DELAY_S))
    elif phase == "export":  # this process has opened the store and written run.json: re-reading, then exports
        meta = out / "run.json"
        while proc.poll() is None and time.time() < deadline and not (meta.exists() and meta.stat().st_mtime >= spawned):
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.03))
    else:
        time.sleep(rng.uniform(0, 0.6))
    if proc.poll() is not None:
        assert proc.returncode == 0, proc.stderr.read()
        return "finished"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    return phase


@pytest.mark.slow
def test_twenty_sigkills_at_random_moments_lose_nothing_and_export_equals_an_uninterrupted_run(tmp_path):
    t0 = time.perf_counter()
    data, out, log = make_data(tmp_path / "d.jsonl"), tmp_path / "run", tmp_path / "calls.log"
    rng = random.Random(SEED)
    cells: dict = {}
    finished = 0
    kills: dict[str, int] = {"startup": 0, "mid-run": 0, "export": 0}
    while sum(kills.values()) < N_KILLS:
        calls_before = calls(log)
        proc = start(data, out, log)
        phase = wait_kill(proc, out, log, rng, len(cells))
        now = snapshot(out)
        for cell, stored in cells.items():  # a finished result is never lost nor rewritten differently
            assert now.get(cell) == stored, f"cell {cell} changed after a kill in phase {phase}"
        check_export(out, now)
        new_cells, made = judged(now) - judged(cells), calls(log) - calls_before
        # every judgement that ran was committed, except at most the one in flight when killed
        assert made - new_cells in ((0,) if phase == "finished" else (0, 1)), (phase, made, new_cells)
        cells = now
        if phase == "finished":
            finished += 1
        else:
            kills[phase] += 1
    killed_with = len(cells)

    eng = scripted_engine()
    run = evaluate(data, tiny_judges(), engine=eng, out=out, chunk_size=4)
    assert eng.calls == (N_ROWS - 1) * JUDGES - judged(cells)
    assert len(run.results) == N_CELLS and len(snapshot(out)) == N_CELLS
    assert run.counts.reused + run.counts.evaluated + run.counts.failed == N_CELLS
    again = failing_engine()
    assert evaluate(data, tiny_judges(), engine=again, out=out).counts.evaluated == 0 and again.calls == 0

    ref = tmp_path / "reference"
    evaluate(data, tiny_judges(), engine=scripted_engine(), out=ref, chunk_size=4)
    assert comparable(out) == comparable(ref)
    assert calls(log) - judged(cells) <= N_KILLS  # across all processes: at most one lost judgement per kill
    elapsed = time.perf_counter() - t0
    print(
        f"\n{N_KILLS} SIGKILLs (seed {SEED}): {kills}, {finished} runs finished before their kill; {killed_with}/{N_CELLS} cells "
        f"done after the last kill; {calls(log)} engine calls in the killed processes for {judged(cells)} judged cells; "
        f"{elapsed:.1f} s"
    )
