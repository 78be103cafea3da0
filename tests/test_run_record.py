"""run.json is written from the typed `RunRecord` byte for byte as the dict it replaced wrote, and every record an
earlier release wrote still reads: scripted runs (plain, per turn, a panel) against checked-in run.json files written
by the dict writer (tests/data/run_record/, with the values that change between versions and runs masked), and the
stored records of the legacy stores (tests/data/legacy/) read and written back unchanged."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from view_support import feature_rows, panel_member

import localjudge
from localjudge.engine.base import ScriptedEngine
from localjudge.run.record import JudgeRef, RunRecord, stored_record
from localjudge.store.db import Store

EXPECTED = Path(__file__).parent / "data" / "run_record"
LEGACY = Path(__file__).parent / "data" / "legacy"
CONV = {
    "id": "c1",
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "bye!"},
    ],
}


def _yes(messages, fmt):
    return json.dumps({"rationale": "r", "result": "yes"})


def _masked(text: str) -> str:
    """run.json with what changes between runs and versions replaced by "X" (as in tests/data/run_record/)."""
    return re.sub(r'("(?:started|finished|run_id|version|localjudge_version)": )"[^"]*"', r'\1"X"', text)


RUNS = {
    "plain": lambda out: localjudge.evaluate(feature_rows(6), ["relevance_to_query"], engine=ScriptedEngine(_yes), out=out),
    "conv": lambda out: localjudge.evaluate(
        [CONV], ["conversation_completeness"], engine=ScriptedEngine(_yes), out=out, conversation="turn"
    ),
    "panel": lambda out: localjudge.evaluate(
        feature_rows(8), ["relevance_to_query"], panel=[panel_member(f"m{k}", 0.3) for k in range(3)], out=out
    ),
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_run_json_written_from_the_record_is_byte_identical_to_the_dict_writers(tmp_path, kind):
    run = RUNS[kind](tmp_path / "run")
    text = (tmp_path / "run" / "run.json").read_text(encoding="utf-8")
    assert _masked(text) == (EXPECTED / f"{kind}.run.json").read_text(encoding="utf-8")
    # the store keeps the same record, summary.json's `run` and the result's summary are it too
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as c:
        stored = c.execute("SELECT meta FROM runs").fetchone()[0]
    assert stored == json.dumps(json.loads(text), default=str)
    assert json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))["run"] == json.loads(text)
    assert run.summary.run == json.loads(text) and list(run.summary.run) == list(json.loads(text))
    # `record`, the documented way to read it, is that record by field, and writes back to the same dict
    assert run.summary.record.to_json() == run.summary.run and list(run.summary.record.to_json()) == list(run.summary.run)
    assert run.summary.record.panel == run.summary.run.get("panel") and run.summary.record.counts == run.summary.run["counts"]


def test_a_resumed_run_rewrites_the_same_run_json_with_its_own_counts(tmp_path):
    RUNS["plain"](tmp_path / "run")
    first = json.loads(_masked((tmp_path / "run" / "run.json").read_text(encoding="utf-8")))
    RUNS["plain"](tmp_path / "run")
    again = json.loads(_masked((tmp_path / "run" / "run.json").read_text(encoding="utf-8")))
    assert list(again) == list(first) and {**again, "counts": None} == {**first, "counts": None}
    assert again["counts"]["reused"] == 6 and again["counts"]["evaluated"] == 0


@pytest.mark.parametrize("store", sorted(p.name for p in LEGACY.glob("*.sqlite")))
def test_the_record_of_an_older_store_reads_and_writes_back_unchanged(tmp_path, store):
    with sqlite3.connect(LEGACY / store) as c:
        texts = [r[0] for r in c.execute("SELECT meta FROM runs")]
    for text in texts:
        record = RunRecord.read(json.loads(text))
        assert json.dumps(record.to_json(), default=str) == text
    with Store(LEGACY / store) as st:
        rid = st.latest_run()
        assert rid is not None
        assert stored_record(st, rid).to_json() == st.run_meta(rid)


def test_a_record_written_before_the_backend_seam_reads_with_its_fields_and_no_backend():
    with sqlite3.connect(LEGACY / "default.sqlite") as c:
        record = RunRecord.read(json.loads(c.execute("SELECT meta FROM runs").fetchone()[0]))
    assert record.backend is None and "backend" not in record.to_json()
    assert record.model_id == "smollm2-135m" and record.status == "finished" and record.rows == 3
    assert record.judge_names() == ["polite"] and record.counts is not None and record.counts["evaluated"] == 3


def test_a_panel_records_figures_read_by_field_and_keep_their_place():
    with sqlite3.connect(LEGACY / "panel_scripted.sqlite") as c:
        record = RunRecord.read(json.loads(c.execute("SELECT meta FROM runs").fetchone()[0]))
    assert record.panel is not None and record.panel["members"] == ["a.json", "b.json"] and record.cascade is None
    assert list(record.to_json())[-2:] == ["counts", "panel"]
    assert list(record.updated(cascade={"k": 1}, newer={}).to_json())[-4:] == ["counts", "panel", "cascade", "newer"]


def test_a_record_that_is_not_an_object_or_holds_a_damaged_field_still_reads():
    assert RunRecord.read([1, 2]).to_json() == {} and RunRecord.read(None).judge_names() == []
    record = RunRecord.read({"run_id": "r", "rows": {"not": "a number"}, "model_id": "m", "newer_key": [1]})
    assert record.rows is None and record.model_id == "m" and record.extra("newer_key") == [1]
    assert list(record.to_json()) == ["run_id", "model_id", "newer_key"]


def test_judges_named_by_a_bare_string_in_early_records_read_by_name():
    record = RunRecord.read({"judges": ["a", {"name": "b", "version": "v1:x"}]})
    assert record.judge_names() == ["a", "b"] and record.judges == ["a", JudgeRef(name="b", version="v1:x")]
    assert record.to_json()["judges"] == ["a", {"name": "b", "version": "v1:x"}]
