"""MLflow 3.17's ToolCallCorrectness given expected calls: the fuzzy (LLM) mode is the built-in judge
`tool_call_correctness_expected`, whose prompt is byte for byte what the installed mlflow builds (the expected calls
rendered by `expected_calls_text` as MLflow's `_format_expected_calls` renders them); the exact mode
(`should_exact_match=True`) is `toolmatch.mlflow_exact_match`, checked against MLflow's own scorer."""

from __future__ import annotations

import importlib
import json
from typing import Any
from unittest import mock

import pytest

from localjudge.conversations import expected_calls_text, from_messages
from localjudge.conversations.dataset import ConversationDataset, ConversationOptions
from localjudge.conversations.model import ToolCall, ToolSpec
from localjudge.conversations.render import available_tools_text, tool_calls_text
from localjudge.datasets import open_dataset
from localjudge.errors import InputError
from localjudge.judges import get_judge
from localjudge.judges.toolmatch import mlflow_exact_match

prompts = importlib.import_module("mlflow.genai.judges.prompts.tool_call_correctness")


def _chat(calls: list[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Book a table for 2 at Chez Léa, 8pm."}]
    msgs += (
        []
        if not calls
        else [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                    for i, (n, a, _) in enumerate(calls)
                ],
            }
        ]
    )
    msgs += [{"role": "tool", "tool_call_id": f"c{i}", "content": out} for i, (_, _, out) in enumerate(calls) if out is not None]
    return msgs + [{"role": "assistant", "content": "Done."}]


CASES = [  # (actual calls (name, JSON arguments, output), expected calls, tools)
    (
        [("book", '{"venue": "Chez Léa", "people": 2}', "booked #42 {ok}"), ("menu", '{"venue": "Chez Léa"}', None)],
        [ToolCall(name="book", arguments={"venue": "Chez Léa", "people": 2}), ToolCall(name="menu", arguments={})],
        [
            ToolSpec(
                name="book",
                description="Book a table",
                parameters={"properties": {"venue": {"type": "string"}}, "required": ["venue"]},
            )
        ],
    ),
    ([], [ToolCall(name="search", arguments={"query": "MLflow", "filters": {"lang": ["en", "fr"]}})], []),
    (
        [("search", '{"query": "a \\"quoted\\"\\nline {x}"}', "3 hits")],
        [
            ToolCall(name="search", arguments={"query": 'a "quoted"\nline {x}'}),
            ToolCall(name="summarize", arguments={"max_length": 100}),
        ],
        [ToolSpec(name="search", description="Search"), ToolSpec(name="summarize")],
    ),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_expected_judge_sends_mlflows_own_prompt_given_expectations(case):
    from mlflow.genai.utils.type import FunctionCall
    from mlflow.types.chat import ChatTool, FunctionToolDefinition

    chat, expected, tools = CASES[case]
    conv = from_messages(_chat(chat))
    results = conv.results_by_call_id()
    mine = get_judge("tool_call_correctness_expected").render(
        request=conv.turns[0].content,
        tools_called=tool_calls_text(conv),
        available_tools=available_tools_text(tools),
        expected_calls=expected_calls_text(expected),
    )
    theirs = prompts.get_prompt(
        request=conv.turns[0].content,
        tools_called=[
            FunctionCall(name=c.name, arguments=c.arguments, outputs=results[c.id].content if c.id in results else None)
            for c in conv.tool_calls()
        ],
        available_tools=[
            ChatTool(
                type="function",
                function=FunctionToolDefinition(name=t.name, description=t.description, parameters=t.parameters or None),
            )
            for t in tools
        ],
        expected_calls=[FunctionCall(name=c.name, arguments=c.arguments) for c in expected],
    )
    assert [m.role for m in mine] == ["user"]
    assert mine[0].content == theirs


@pytest.mark.parametrize(
    "calls",
    [
        [],
        [ToolCall(name="t")],
        [ToolCall(name="é", arguments={"q": "Léa", "n": [1, 2.5, None, True]}), ToolCall(name="x", arguments={"b": 1, "a": {}})],
    ],
)
def test_expected_calls_text_is_mlflows_format_expected_calls(calls):
    from mlflow.genai.utils.type import FunctionCall

    theirs = prompts._format_expected_calls([FunctionCall(name=c.name, arguments=c.arguments) for c in calls], True)
    assert expected_calls_text(calls) == theirs


def test_a_conversation_row_has_expected_calls_from_the_data_rows_column(tmp_path):
    p = tmp_path / "d.jsonl"
    import json

    rows = [
        {"messages": _chat([("book", "{}", None)]), "expected_tool_calls": [{"name": "book", "arguments": {"people": 2}}]},
        {"messages": _chat([("book", "{}", None)])},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = list(ConversationDataset(open_dataset(str(p)), ConversationOptions()))
    assert out[0].values["expected_calls"] == 'Expected Tool Call 1: book\n  Arguments: {"people": 2}'
    assert "expected_calls" not in out[1].values


# ------------------------------------------------------------------ exact mode, against MLflow's own scorer

A = {"name": "search", "arguments": {"query": "MLflow", "k": 2}}
B = {"name": "summarize", "arguments": {"max_length": 100}}
C = {"name": "translate", "arguments": {"to": "fr"}}
EXACT = [  # (actual, expected)
    ([A, B], [A, B]),
    ([B, A], [A, B]),  # reordered
    ([A], [A, B]),  # missing call
    ([A, B, C], [A, B]),  # extra call
    ([], [A]),
    ([{"name": "search", "arguments": {"query": "MLflow", "k": "2"}}, B], [A, B]),  # wrong argument type
    ([{"name": "search", "arguments": {"query": "MLflow", "k": 2.0}}, B], [A, B]),  # 2.0 is not 2 to MLflow
    ([{"name": "search", "arguments": {"k": 2, "query": "MLflow"}}, B], [A, B]),  # key order does not matter
    ([{"name": "search", "arguments": {"query": "mlflow", "k": 2}}, B], [A, B]),  # case of a value
    ([{"name": "search", "arguments": {"query": "MLflow"}}, B], [A, B]),  # an argument missing
    ([{"name": "search", "arguments": {"query": "MLflow", "k": 2, "x": None}}, B], [A, B]),  # an extra argument
    ([{"name": "Search", "arguments": A["arguments"]}, B], [A, B]),  # name case
    ([A, B], [{"name": "search"}, {"name": "summarize"}]),  # names only (no arguments expected)
    ([B, A], [{"name": "search"}, {"name": "summarize"}]),
    ([{"name": "search", "arguments": {}}, B], [{"name": "search"}, B]),  # one call without arguments: names only
    ([A, A, B], [A, B, B]),  # duplicates: MLflow compares sets when order is ignored
    ([A, A], [A, A]),
    ([A, C], [A, B]),  # a wrong tool
    ([{"name": "search", "arguments": {"flag": True}}], [{"name": "search", "arguments": {"flag": 1}}]),
    ([{"name": "search", "arguments": {}}], [{"name": "search", "arguments": {}}]),
    ([{"name": "search", "arguments": {"n": {"a": [1, 2]}}}], [{"name": "search", "arguments": {"n": {"a": [2, 1]}}}]),
    ([C, B, A], [A, B, C]),
]


def _mlflow_verdict(actual: list[dict[str, Any]], expected: list[dict[str, Any]], ordered: bool) -> bool:
    """MLflow's scorer on a trace whose extracted calls are `actual` (the trace extraction is stood in; the
    comparison is the scorer's own code)."""
    from mlflow.genai.scorers import builtin_scorers as b
    from mlflow.genai.utils.type import FunctionCall

    calls = [FunctionCall(name=a["name"], arguments=a.get("arguments")) for a in actual]
    with (
        mock.patch.object(b, "extract_request_from_trace", lambda _: "req"),
        mock.patch.object(b, "extract_available_tools_from_trace", lambda _: []),
        mock.patch.object(b, "extract_tools_called_from_trace", lambda _: calls),
    ):
        scorer = b.ToolCallCorrectness(should_exact_match=True, should_consider_ordering=ordered)
        fb = scorer(trace=None, expectations={"expected_tool_calls": expected})
    return fb.value == "yes"


@pytest.mark.parametrize("ordered", [False, True])
def test_mlflow_exact_match_gives_mlflows_exact_verdict_on_every_case(ordered):
    verdicts = [(mlflow_exact_match(a, e, ordered=ordered), _mlflow_verdict(a, e, ordered)) for a, e in EXACT]
    assert [m for m, _ in verdicts] == [t for _, t in verdicts]
    assert len({t for _, t in verdicts}) == 2  # both verdicts occur


def test_mlflow_exact_match_takes_json_text_and_openai_items_and_names_bad_input():
    openai = [{"type": "function", "function": {"name": "search", "arguments": '{"query": "MLflow", "k": 2}'}}]
    assert mlflow_exact_match(openai, '[{"name": "search", "arguments": {"k": 2, "query": "MLflow"}}]', ordered=True)
    with pytest.raises(InputError, match=r"expected_tool_calls\[0\]"):
        mlflow_exact_match([A], [{"arguments": {}}], ordered=False)
    with pytest.raises(InputError, match="expected_tool_calls: give a non-empty list"):
        mlflow_exact_match([A], [], ordered=False)


@pytest.mark.parametrize("match", ["exact", "ordered", "subset"])
def test_no_per_call_rule_gives_mlflows_exact_verdict_so_the_whole_list_rule_is_needed(match):
    from localjudge.judges.toolmatch import match_score

    def per_call(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:  # every call scores 1
        return all(match_score(match, a, i, expected) == 1.0 for i, a in enumerate(actual))

    for ordered in (False, True):
        differ = [i for i, (a, e) in enumerate(EXACT) if per_call(a, e) != mlflow_exact_match(a, e, ordered=ordered)]
        assert 2 in differ  # a missing call: every call made scores 1, MLflow says no


# ------------------------------------------------------------------ exact mode as built-in judges, through a run

EXACT_JUDGES = {"mlflow_tool_call_exact": False, "mlflow_tool_call_exact_ordered": True}


def _exact_rows() -> list[dict[str, Any]]:
    return [
        {
            "id": f"case{i}",
            "messages": _chat([(a["name"], json.dumps(a.get("arguments", {})), None) for a in actual]),
            "expected_tool_calls": expected,
        }
        for i, (actual, expected) in enumerate(EXACT)
    ]


def _no_model(self):
    raise AssertionError("a run of model-free judges loaded the model")


def test_exact_judges_give_mlflows_own_verdict_on_every_case_in_a_session_run(tmp_path, monkeypatch):
    import localjudge
    from localjudge.engine.backends import ModelRef

    monkeypatch.setattr(ModelRef, "engine", _no_model)
    run = localjudge.evaluate(_exact_rows(), list(EXACT_JUDGES), model="smollm2-135m", out=tmp_path / "r", conversation="session")
    got = {(r.judge, r.conversation_id): r.result for r in run.results}
    for name, ordered in EXACT_JUDGES.items():
        want = [1.0 if _mlflow_verdict(a, e, ordered) else 0.0 for a, e in EXACT]
        assert [got[(name, f"case{i}")].score for i in range(len(EXACT))] == want, name
        assert got[(name, "case1")].details == {
            "match": "mlflow_exact",
            "ordered": ordered,
            "mlflow_value": "yes" if not ordered else "no",
        }
    assert run.counts.engine_loaded is False


def test_cli_judge_and_run_give_the_exact_verdict_of_a_conversation_with_expected_calls(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from localjudge.cli import main
    from localjudge.engine.backends import ModelRef

    monkeypatch.setattr(ModelRef, "engine", _no_model)
    rows = _exact_rows()
    conv = tmp_path / "chat.json"
    conv.write_text(json.dumps(rows[1]), encoding="utf-8")  # reordered calls: yes unordered, no ordered
    for name, want in (("mlflow_tool_call_exact", 1.0), ("mlflow_tool_call_exact_ordered", 0.0)):
        res = CliRunner().invoke(main, ["judge", name, "--conversation", str(conv), "--granularity", "session"])
        assert (res.exit_code, json.loads(res.output)["score"]) == (0, want), res.output
    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows[:3] + [{"id": "none", "messages": rows[0]["messages"]}]))
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main, ["run", str(data), "-j", "mlflow_tool_call_exact_ordered", "--granularity", "session", "--out", str(out)]
    )
    assert res.exit_code == 1 and "1 (missing_value: 1)" in res.output, res.output  # a row unscored: exit 1
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [x["result"]["score"] for x in lines] == [1.0, 0.0, 0.0, None]
    assert "'expected_tool_calls'" in lines[3]["error"]  # no expected calls: unscored, naming the column
