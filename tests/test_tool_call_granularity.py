"""`--granularity tool_call`: one result per assistant tool call, judged by the model-free tool_call_exact /
_ordered / _subset judges (judges/toolmatch.py) against the row's expected calls, stored with the tool-call
index, aggregated per conversation, resumed; no model loaded; a row without expected calls is an unscored result
naming the field. The per-call rules are conversations/toolcalls.py's RAGAS / DeepEval scores on one-call lists."""

from __future__ import annotations

import itertools
import json
import sqlite3

import pytest
from click.testing import CliRunner

import localjudge
from localjudge.conversations.model import ToolCall
from localjudge.conversations.toolcalls import deepeval_tool_correctness, ragas_tool_call_accuracy
from localjudge.engine.backends import ModelRef
from localjudge.judges import get_judge
from localjudge.judges.toolmatch import match_score

JUDGES = ["tool_call_exact", "tool_call_ordered", "tool_call_subset"]


def _call(i, name, **args):
    return {"id": f"t{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


ROWS = [
    {  # two calls: the first as expected, the second with one wrong argument of two
        "id": "c1",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome, in C?"},
            {"role": "assistant", "content": None, "tool_calls": [_call(1, "weather", city="Paris", unit="C")]},
            {"role": "tool", "tool_call_id": "t1", "content": "18"},
            {"role": "assistant", "content": None, "tool_calls": [_call(2, "weather", city="Rome", unit="F")]},
            {"role": "tool", "tool_call_id": "t2", "content": "70"},
            {"role": "assistant", "content": "18 C and 70 F."},
        ],
        "expected_tool_calls": [
            {"name": "weather", "arguments": {"city": "Paris", "unit": "C"}},
            {"name": "weather", "arguments": {"city": "Rome", "unit": "C"}},
        ],
    },
    {  # calls reordered (JSON text of the expected list)
        "id": "c2",
        "messages": [
            {"role": "user", "content": "Book and pay."},
            {"role": "assistant", "content": None, "tool_calls": [_call(3, "pay", amount=5), _call(4, "book", seat=1)]},
            {"role": "assistant", "content": "Done."},
        ],
        "expected_tool_calls": json.dumps(
            [{"name": "book", "arguments": {"seat": 1}}, {"name": "pay", "arguments": {"amount": 5}}]
        ),
    },
    {  # no expected calls given
        "id": "c3",
        "messages": [
            {"role": "user", "content": "Search cats."},
            {"role": "assistant", "content": None, "tool_calls": [_call(5, "search", q="cats")]},
            {"role": "assistant", "content": "Cats."},
        ],
    },
]


class _NoModel(ModelRef):
    """A model reference that fails the test if the run loads it."""

    def engine(self):
        raise AssertionError("a run of model-free judges loaded the model")


def _evaluate(tmp_path):
    return localjudge.evaluate(ROWS, JUDGES, model="smollm2-135m", out=tmp_path / "r", conversation="tool_call")


def test_each_tool_call_is_one_result_per_judge_stored_with_its_index_and_aggregated(tmp_path, monkeypatch):
    monkeypatch.setattr(ModelRef, "engine", _NoModel.engine)
    run = _evaluate(tmp_path)
    got = {(r.judge, r.conversation_id, r.tool_call_index): r.result.score for r in run.results}
    assert got == {
        ("tool_call_exact", "c1", 0): 1.0,
        ("tool_call_exact", "c1", 1): 0.0,
        ("tool_call_exact", "c2", 0): 0.0,
        ("tool_call_exact", "c2", 1): 0.0,
        ("tool_call_exact", "c3", 0): None,
        ("tool_call_ordered", "c1", 0): 1.0,
        ("tool_call_ordered", "c1", 1): 0.5,
        ("tool_call_ordered", "c2", 0): 0.0,
        ("tool_call_ordered", "c2", 1): 0.0,
        ("tool_call_ordered", "c3", 0): None,
        ("tool_call_subset", "c1", 0): 1.0,
        ("tool_call_subset", "c1", 1): 0.5,
        ("tool_call_subset", "c2", 0): 1.0,
        ("tool_call_subset", "c2", 1): 1.0,
        ("tool_call_subset", "c3", 0): None,
    }
    assert run.counts.engine_loaded is False
    # a conversation without expected calls: an unscored result naming the field, for each of its calls
    c3 = [r for r in run.results if r.conversation_id == "c3"]
    assert all(not r.result.scored and "'expected_tool_calls'" in (r.error or "") for r in c3)
    agg = run.summary.run["conversations"]["judges"]
    assert agg["tool_call_ordered"]["c1"] == {"turns": 2, "scored": 2, "mean": 0.75, "min": 0.5, "pass_fraction": 0.5}
    assert agg["tool_call_subset"]["c2"]["mean"] == 1.0 and agg["tool_call_exact"]["c3"]["scored"] == 0
    db = sqlite3.connect(tmp_path / "r" / "results.sqlite")
    rows = db.execute("SELECT DISTINCT conversation_id, turn_index, tool_call_index FROM results ORDER BY row_index").fetchall()
    assert rows == [("c1", None, 0), ("c1", None, 1), ("c2", None, 0), ("c2", None, 1), ("c3", None, 0)]
    # resumed: every cell is reused, nothing judged again
    again = _evaluate(tmp_path)
    assert again.counts.evaluated == 0 and again.counts.reused == 12 and again.counts.failed == 3


def test_cli_run_with_granularity_tool_call_reports_per_conversation(tmp_path, monkeypatch):
    monkeypatch.setattr(ModelRef, "engine", _NoModel.engine)
    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]), encoding="utf-8")
    out = tmp_path / "run"
    from localjudge.cli import main

    res = CliRunner().invoke(main, ["run", str(data), "-j", "tool_call_ordered", "--granularity", "tool_call", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "tool_call_ordered c1: 2/2 turns scored, mean 0.75, min 0.50" in res.output
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(x["conversation_id"], x["tool_call_index"]) for x in lines] == [("c1", 0), ("c1", 1), ("c2", 0), ("c2", 1)]


CALLS = [
    ToolCall(name="a", arguments={"x": 1, "y": "2"}),
    ToolCall(name="a", arguments={"x": 1, "y": 2}),
    ToolCall(name="a", arguments={"x": 1}),
    ToolCall(name="a", arguments={}),
    ToolCall(name="b", arguments={"x": 1, "z": {"k": 1, "j": 2}}),
    ToolCall(name="b", arguments={"x": 1, "z": {"k": 1, "j": 3}}),
]


@pytest.mark.parametrize("expected", [list(p) for n in (0, 1, 2) for p in itertools.permutations(CALLS[::2] + CALLS[4:5], n)])
def test_per_call_rules_are_ragas_and_deepeval_on_one_call_lists(expected):
    exp = [c.model_dump(include={"name", "arguments"}) for c in expected]
    for k, call in enumerate(CALLS):
        c = call.model_dump(include={"name", "arguments"})
        at = [expected[k]] if k < len(expected) else []
        assert match_score("ordered", c, k, exp) == (ragas_tool_call_accuracy([call], at) if at else 0.0)
        assert match_score("exact", c, k, exp) == (
            deepeval_tool_correctness([call], at, exact_match=True, input_parameters=True) if at else 0.0
        )
        assert match_score("subset", c, k, exp) == pytest.approx(
            deepeval_tool_correctness(expected, [call], input_parameters=True)
        )


def test_bad_tool_call_values_are_one_line_errors_naming_the_field():
    j = get_judge("tool_call_exact")
    with pytest.raises(localjudge.InputError, match="expected_tool_calls: not JSON"):
        j.judge_without_model(tool_call={"name": "a"}, tool_call_index=0, expected_tool_calls="[oops")
    with pytest.raises(localjudge.InputError, match=r"expected_tool_calls\[0\]: a call needs a 'name'"):
        j.judge_without_model(tool_call={"name": "a"}, tool_call_index=0, expected_tool_calls=[{"arguments": {}}])
    with pytest.raises(localjudge.InputError, match="tool_call_index"):
        j.judge_without_model(tool_call={"name": "a"}, tool_call_index=-1, expected_tool_calls="[]")
