"""A conversation row builds only the derived values its run's judges read (`ConversationDataset.needs`), never one
the data row already holds, counts its rows without building them, and builds each truncation cut once; with no
declared reader (the Python API iterating the rows) every value is built as before."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import localjudge
from localjudge.conversations import dataset as convds
from localjudge.conversations.dataset import DERIVED, ConversationDataset, ConversationOptions
from localjudge.conversations.readers import from_messages
from localjudge.datasets import open_dataset
from localjudge.engine.base import ScriptedEngine

MESSAGES = [
    {"role": "user", "content": "Book a table for two."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "book", "arguments": '{"n": 2}'}}],
    },
    {"role": "tool", "tool_call_id": "a", "content": "booked"},
    {"role": "assistant", "content": "Booked for two."},
    {"role": "user", "content": "And a taxi?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "b", "type": "function", "function": {"name": "taxi", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "b", "content": "ok"},
    {"role": "assistant", "content": "A taxi is coming."},
]


@pytest.fixture
def built(monkeypatch):
    """Counts each derived value built, by name (the real makers still build them)."""
    counts: Counter[str] = Counter()
    for name, derived in list(DERIVED.items()):

        def counted(c, r, _make=derived.make, _name=name):
            counts[_name] += 1
            return _make(c, r)

        monkeypatch.setitem(DERIVED, name, derived._replace(make=counted))
    return counts


def _ds(granularity="session", **cols):
    return ConversationDataset(
        open_dataset([{"id": "c1", "messages": MESSAGES, **cols}]), ConversationOptions(granularity=granularity)
    )


@pytest.mark.parametrize("granularity", ["session", "turn", "tool_call"])
def test_rows_with_declared_needs_hold_only_those_derived_values_and_the_same_text(granularity):
    every = list(_ds(granularity))
    ds = _ds(granularity)
    ds.needs = frozenset({"conversation", "deepeval_input"})
    lazy = list(ds)
    assert len(lazy) == len(every) > 0
    for full, row in zip(every, lazy, strict=True):
        derived = set(row.values) & set(DERIVED)
        assert derived == {"conversation", "deepeval_input"}
        assert {k: full.values[k] for k in row.values} == row.values  # same text, same order
        assert [k for k in full.values if k in row.values] == list(row.values)


def test_rows_without_declared_needs_hold_every_derived_value_as_before():
    (row,) = list(_ds(expected_tool_calls=[{"name": "book", "arguments": {"n": 2}}]))
    stated = {"expected_outcome", "scenario"}  # a framework case's fields: absent where the conversation states none
    assert set(DERIVED) - stated <= set(row.values) and not stated & set(row.values)
    assert row.values["expected_tool_calls"] == '[{"name": "book", "arguments": {"n": 2}}]'
    conv = from_messages(MESSAGES, id="c1")
    assert row.values["conversation"] == convds.conversation_text(conv)
    assert row.values["deepeval_trace_json"] == convds.deepeval_trace_json(conv)


def test_a_value_the_row_already_holds_is_not_built(built):
    (row,) = list(_ds(ragas_conversation="given text"))
    assert row.values["ragas_conversation"] == "given text"
    assert built["ragas_conversation"] == 0 and built["deepeval_turns"] == 1


def test_counting_and_listing_columns_build_no_value(built):
    ds = _ds("turn")
    assert ds.count() == 2 and "deepeval_trace_json" in ds.columns
    assert sum(built.values()) == 0


def test_tool_call_rows_build_the_conversations_values_once_not_per_call(built):
    rows = list(_ds("tool_call"))
    assert len(rows) == 2 and built["deepeval_trace_json"] == 1
    assert [json.loads(r.values["tool_call"])["name"] for r in rows] == ["book", "taxi"]
    assert [r.values["deepeval_tools_called"] for r in rows][0] != rows[1].values["deepeval_tools_called"]


def test_truncation_builds_each_cut_once_and_only_what_the_run_reads(built):
    long = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "w " * 20} for i in range(20)]
    ds = ConversationDataset(open_dataset([{"id": "c", "messages": long}]), ConversationOptions(truncate=True))
    ds.needs = frozenset({"conversation"})
    ds.fits = lambda values: len(values["conversation"]) < 800
    (row,) = list(ds)
    assert row.position is not None and row.position.truncated_turns is not None
    # the whole conversation, then one per bisection step: the cut kept is not built a second time
    steps = 1 + 1 + (18).bit_length()
    assert built["conversation"] <= steps and built["deepeval_turns"] == 0


def test_a_run_builds_only_the_values_its_judges_read_and_stores_the_same_results(tmp_path, built):
    engine = ScriptedEngine(lambda messages, fmt: json.dumps({"rationale": "fine", "result": "yes"}))
    run = localjudge.evaluate(
        [{"id": "c1", "messages": MESSAGES}],
        ["conversation_completeness"],
        engine=engine,
        out=tmp_path / "r",
        conversation="turn",
    )
    rows = list(run.results)
    assert len(rows) == 2 and all(r.result.value == "yes" for r in rows)
    assert set(built) == {"conversation"}  # no DeepEval / RAGAS / trace rendering for an MLflow judge
    conv = from_messages(MESSAGES, id="c1")
    assert rows[-1].inputs["conversation"] == convds.conversation_text(conv)
