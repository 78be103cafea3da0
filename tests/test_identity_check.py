"""The diff logic of scripts/tools/identity_check.py (the before/after check of a refactor), on small synthetic dumps:
the full 30-row run is a script (CONTRIBUTING "Before/after a refactor"), not a test."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.tools import identity_check as ic

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "tools" / "identity_check.py"


def _store(path: Path, run_id: str, stamp: str, value: str, total_ms: float) -> Path:
    """A tiny results.sqlite: one run, two result rows (one JSON cell with wall-clock timings)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, created TEXT, meta TEXT)")
    conn.execute("CREATE TABLE results (run_id TEXT, row_index INTEGER, judge TEXT, result TEXT, updated TEXT, "
                 "PRIMARY KEY (run_id, row_index, judge))")  # fmt: skip
    conn.execute("INSERT INTO runs VALUES (?, ?, ?)", (run_id, stamp, json.dumps({"run_id": run_id, "started": stamp})))
    for i in range(2):
        result = {"value": value if i == 1 else "yes", "timings": {"total_ms": total_ms}}
        conn.execute("INSERT INTO results VALUES (?, ?, 'correctness', ?, ?)", (run_id, i, json.dumps(result), stamp))
    conn.commit()
    conn.close()
    return path


def _dump(tmp: Path, name: str, **kw) -> Path:
    """The canonical dump of a synthetic side: its store and two progress events, as the script writes it."""
    work = tmp / name
    work.mkdir()
    store = _store(work / "results.sqlite", **kw)
    items = ic.sqlite_items(store, "plain/results.sqlite")
    items += [{"item": "plain/progress", "row": i, "values": {"cells_done": i, "elapsed_s": kw["total_ms"]}} for i in (1, 2)]
    out = tmp / f"{name}.jsonl"
    out.write_text("".join(line + "\n" for line in ic.canonical(items, str(work))))
    return out


def _compare(old: Path, new: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--compare", str(old), str(new)], capture_output=True, text=True, timeout=60
    )


@pytest.mark.system
def test_two_runs_of_the_same_code_differing_only_in_time_run_id_and_timings_compare_identical(tmp_path):
    old = _dump(tmp_path, "old", run_id="20261126-101010-abcdef", stamp="2026-11-26T10:10:10+0000", value="no", total_ms=1.5)
    new = _dump(tmp_path, "new", run_id="20261127-090909-012345", stamp="2026-11-27T09:09:09+0000", value="no", total_ms=9.0)
    r = _compare(old, new)
    assert r.returncode == 0, r.stdout
    assert "identical" in r.stdout


@pytest.mark.system
def test_one_byte_changed_in_a_stored_cell_exits_1_naming_the_table_and_the_row(tmp_path):
    old = _dump(tmp_path, "old", run_id="20261126-101010-abcdef", stamp="2026-11-26T10:10:10+0000", value="no", total_ms=1.5)
    new = _dump(tmp_path, "new", run_id="20261126-101010-abcdef", stamp="2026-11-26T10:10:10+0000", value="nO", total_ms=1.5)
    r = _compare(old, new)
    assert r.returncode == 1, r.stdout
    assert "DIFFERENT" in r.stdout
    first = r.stdout.split("DIFFERENT:\n", 1)[1].splitlines()[0]
    assert "plain/results.sqlite/results" in first and '"row_index": 1' in first and '"judge": "correctness"' in first
    assert '"nO"' in r.stdout and r.stdout.count("line ") == 1  # only that row differs


def test_a_line_only_one_side_has_is_a_difference():
    assert ic.compare(['{"item": "a", "row": 0}'], []) == ['line 1 (a 0): only in old: {"item": "a", "row": 0}']
    assert ic.compare([], []) == []


def _line(item: str, row, values) -> str:
    return json.dumps({"item": item, "row": row, "values": values}, sort_keys=True)


def test_an_append_only_migration_is_allowed_only_when_asked_and_never_hides_a_changed_old_value():
    old = [
        _line("plain/results.sqlite/_migrations", {"name": "003_x"}, {"name": "003_x"}),
        _line("plain/results.sqlite/results", {"row_index": 0}, {"value": "yes"}),
        _line("plain/run.json", 3, '  "store_schema_version": 3,'),
    ]
    grew = [
        old[0],
        _line("plain/results.sqlite/_migrations", {"name": "004_y"}, {"name": "004_y"}),
        _line("plain/results.sqlite/results", {"row_index": 0}, {"value": "yes", "format_spec": {"kind": "k"}}),
        _line("plain/run.json", 3, '  "store_schema_version": 4,'),
    ]
    assert ic.compare(old, grew)  # without --schema-grew every addition is a difference
    assert ic.compare(*ic.grown(old, grew)) == []
    changed = [*grew[:2], _line("plain/results.sqlite/results", {"row_index": 0}, {"value": "no", "format_spec": {}}), grew[3]]
    diffs = ic.compare(*ic.grown(old, changed))
    assert len(diffs) == 1 and "results" in diffs[0] and '"no"' in diffs[0]


def test_one_inserted_line_is_one_difference_not_a_shift_of_every_line_after_it():
    old = [_line("plain/results.sqlite/cache", {"k": i}, {"k": i}) for i in range(5)]
    new = [old[0], _line("plain/results.sqlite/extra", {"k": 9}, {}), *old[1:]]
    diffs = ic.compare(old, new)
    assert len(diffs) == 1 and "only in new" in diffs[0]


def _csv_dump(total_ms: str, rationale: str) -> list[str]:
    """A dump holding one results.csv export whose second record's rationale has a line break."""
    text = f'row_index,rationale,total_ms\n0,plain,{total_ms}\n1,"two\nlines: {rationale}",{total_ms}\n'
    return [
        json.dumps({"item": "plain/results.csv", "row": i, "values": ln}, sort_keys=True)
        for i, ln in enumerate(text.splitlines())
    ]


def test_a_csv_exports_wall_clock_column_is_masked_and_any_other_cell_still_differs(capsys):
    same = ic.report(_csv_dump("3465.9", "a"), _csv_dump("8937.9", "a"), "csv")
    assert same == 0, capsys.readouterr().out
    different = ic.report(_csv_dump("3465.9", "a"), _csv_dump("3465.9", "b"), "csv")
    out = capsys.readouterr().out
    assert different == 1 and "plain/results.csv 2" in out
