"""The trace judge's loop on the scripted engine: prompt, action format, tools, caps, context limits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from localjudge.agent import ActionFormat, RatingAction, RatingType, ToolAction, ToolLimits, TraceJudge, load_trace
from localjudge.agent.loop import INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE, render_trace_prompt
from localjudge.engine import ScriptedEngine
from localjudge.errors import InputError, ParseError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"
RAG = EXAMPLES / "rag_agent.mlflow.json"
TOOL = EXAMPLES / "tool_agent.otel.json"
INSTR = "Check that the final answer in {{ trace }} is supported by the retrieved documents."


def scripted(*texts: str, n_ctx: int = 100_000):
    """An engine replaying `texts` that also records the format of every call."""
    queue = list(texts)
    fmts: list[ActionFormat] = []

    def fn(messages, fmt):
        fmts.append(fmt)
        return queue.pop(0)

    eng = ScriptedEngine(fn, n_ctx=n_ctx)
    eng.fmts = fmts
    return eng


def last_user(engine, call: int) -> str:
    return engine.prompts[call][-1].content


# ----------------------------------------------------------------------------------------- prompt


def test_prompt_is_mlflows_trace_prompt_with_rating_fields_and_instructions():
    text = render_trace_prompt(INSTR, RatingType.parse("yes/no"))
    assert text.startswith(
        "You are an expert judge tasked with evaluating the performance of an AI\nagent on a particular query."
    )
    assert "refer to a placeholder called {{ trace }}. To read the actual trace" in text
    assert (
        "Evaluation Rating Fields\n------------------------\n- result (Literal['yes', 'no']): the evaluation rating: "
        '"yes" or "no"\n- rationale (str): '
    ) in text
    assert text.endswith(f"Instructions\n------------------------\n{INSTR}\n")
    assert text == INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE.format(
        evaluation_rating_fields=text.split("------------------------\n")[1].split("\n\nInstructions")[0], instructions=INSTR
    )
    first = render_trace_prompt(INSTR, RatingType.parse("int:1-5"), rationale_first=True)
    assert "\n- rationale (str): " in first and first.index("- rationale") < first.index(
        "- result (int): the evaluation rating: an integer from 1 to 5"
    )


def test_instructions_braces_are_kept_verbatim():
    assert "use {x} and {{ y }}" in render_trace_prompt("use {x} and {{ y }}", RatingType.parse("bool"))


# ------------------------------------------------------------------------------------ result types


@pytest.mark.parametrize(
    "spec,kind,example",
    [
        ("yes/no", "yes_no", '"yes"'),
        ("yes_no", "yes_no", '"yes"'),
        ("bool", "bool", "true"),
        (bool, "bool", "true"),
        ("int:1-5", "int", "5"),
        ("1..10", "int", "10"),
        ("float:0-1", "float", "1"),
        ("float:0-1:1", "float", "1"),
        ("labels:good,bad", "labels", '"good"'),
        ("pass|fail", "labels", '"pass"'),
        ({"type": "int", "min": 0, "max": 3}, "int", "3"),
        ({"type": "labels", "labels": ["a", "b"]}, "labels", '"a"'),
    ],
)
def test_result_type_specs_parse(spec, kind, example):
    rt = RatingType.parse(spec)
    assert rt.kind == kind and rt.example() == example


@pytest.mark.parametrize(
    "spec", ["maybe", "int:5-1", "int:1-5:2", "labels:a", "labels:a=1,b", "labels:a=x,b=0", {"type": "nope"}]
)
def test_bad_result_types_are_input_errors(spec):
    with pytest.raises(InputError):
        RatingType.parse(spec)


@pytest.mark.parametrize(
    "spec,text,value,score",
    [
        ("yes/no", '{"result": "no", "rationale": "r"}', "no", 0.0),
        ("bool", '{"result": true, "rationale": "r"}', True, 1.0),
        ("int:1-5", '{"result": 4, "rationale": "r"}', 4, 0.75),
        ("float:0-2", '{"result": 0.5, "rationale": "r"}', 0.5, 0.25),
        ("labels:good=1,meh=0.5,bad=0", '{"result": "meh", "rationale": "r"}', "meh", 0.5),
        ("labels:good,bad", '{"result": "bad", "rationale": "r"}', "bad", None),
    ],
)
def test_action_format_parses_and_normalises_each_rating_type(spec, text, value, score):
    fmt = ActionFormat(spec)
    assert re.fullmatch(fmt.regex(), text)
    v = fmt.parse(text)
    assert isinstance(v, RatingAction) and v.result == value and fmt.normalise(v) == score


def test_action_regex_is_the_union_of_tool_calls_and_rating():
    fmt = ActionFormat("yes/no")
    rx = re.compile(fmt.regex())
    for ok in [
        '{"tool": "get_trace_info"}',
        '{"tool": "list_spans", "page": 12}',
        '{"tool": "get_span", "span_id": "0xAB=="}',
        '{"tool": "get_span", "span_id": "tr-1a_2.b:c+/="}',
        '{"tool": "search_trace", "pattern": "err(or)?\\\\s"}',
        '{"result": "yes", "rationale": "fine \\"q\\""}',
    ]:
        assert rx.fullmatch(ok), ok
        fmt.parse(ok)
    for bad in [
        '{"tool": "get_trace_info", "x": 1}',
        '{"tool": "list_spans", "page": 0}',
        '{"tool": "list_spans", "page": "1"}',
        '{"tool": "get_span", "span_id": "ab | parent cd"}',
        '{"tool": "get_span", "span_id": "ab}</x>"}',
        '{"tool": "drop_table"}',
        '{"result": "maybe", "rationale": ""}',
        '{"rationale": "r", "result": "yes"}',
        '{"tool": "get_trace_info"} ',
    ]:
        assert not rx.fullmatch(bad), bad
    tools_only = ActionFormat("yes/no", allow_rating=False)
    assert not re.fullmatch(tools_only.regex(), '{"result": "yes", "rationale": "r"}')
    rating_only = ActionFormat("yes/no", allow_tools=False)
    assert not re.fullmatch(rating_only.regex(), '{"tool": "get_trace_info"}')
    assert re.fullmatch(ActionFormat("yes/no", rationale_first=True).regex(), '{"rationale": "r", "result": "yes"}')
    assert fmt.max_tokens() == 48 + 40 + 5


def test_action_parse_accepts_loose_text_and_names_what_is_wrong():
    fmt = ActionFormat("int:1-5")
    assert fmt.parse('Sure! ```json\n{"Tool": "list_spans", "page": "2"}\n```') == ToolAction(
        tool="list_spans", arguments={"page": 2}
    )
    for text, why in [
        ("no json here", "no JSON object"),
        ('{"tool": "rm"}', "unknown tool 'rm'"),
        ('{"tool": "get_span"}', "needs the argument 'span_id'"),
        ('{"result": 9}', "outside 1..5"),
        ('{"tool": "list_spans", "page": 1.5}', "positive integer"),
        ('{"x": 1}', "lacks a 'tool' key or a 'result'"),
    ]:
        with pytest.raises(ParseError, match=re.escape(why)):
            fmt.parse(text)


# ------------------------------------------------------------------------------------------ loop


def test_loop_calls_tools_then_rates_and_records_the_calls():
    eng = scripted(
        '{"tool": "get_trace_info"}',
        '{"tool": "list_spans", "page": 1}',
        '{"tool": "get_span", "span_id": "b2c3d4e5f6071829"}',
        '{"result": "yes", "rationale": "15 days is in the doc"}',
    )
    r = TraceJudge(INSTR).judge(RAG, eng)
    assert r.scored and (r.value, r.score, r.passed, r.rationale) == ("yes", 1.0, True, "15 days is in the doc")
    assert r.verdict == {"rationale": "15 days is in the doc", "result": "yes"}
    calls = r.details["tool_calls"]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("get_trace_info", {}),
        ("list_spans", {"page": 1}),
        ("get_span", {"span_id": "b2c3d4e5f6071829"}),
    ]
    assert all(c["result_chars"] > 0 and not c["error"] for c in calls)
    assert r.details["actions"] == 4 and r.usage.calls == 4 and r.details["trace_id"] == "tr-5f1c2a9e8b7d4c3fa1e2d3c4b5a69788"
    # each tool result reaches the model in the next prompt, with the budget line
    assert last_user(eng, 1).startswith("Result of get_trace_info():\ntrace_id: tr-5f1c2a9e8b7d4c3fa1e2d3c4b5a69788")
    assert last_user(eng, 1).endswith(
        "9 action(s) left. Call another tool, or give your final evaluation rating if you have enough information."
    )
    assert "Result of get_span(span_id='b2c3d4e5f6071829'):\n- span_id b2c3d4e5f6071829" in last_user(eng, 3)
    assert calls[2]["result_chars"] == len(last_user(eng, 3).split(":\n", 1)[1].rsplit("\n\n", 1)[0])
    assert [m.role for m in eng.prompts[3]] == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]


def test_unknown_span_id_returns_error_text_and_the_loop_continues():
    eng = scripted(
        '{"tool": "get_span", "span_id": "ffff"}',
        '{"tool": "get_span", "span_id": "2b3c4d5e6f708192"}',
        '{"result": "no", "rationale": "the forecast tool failed and the answer invented the weather"}',
    )
    r = TraceJudge(INSTR).judge(TOOL, eng)
    assert last_user(eng, 1).startswith(
        "Result of get_span(span_id='ffff'):\nError: no span with span_id 'ffff'. Known span ids:"
    )
    assert [c["error"] for c in r.details["tool_calls"]] == [True, False]
    assert r.scored and r.value == "no" and r.passed is False


def test_bad_regex_returns_error_text_and_the_loop_continues():
    eng = scripted(
        '{"tool": "search_trace", "pattern": "[unclosed"}',
        '{"tool": "search_trace", "pattern": "503"}',
        '{"result": "no", "rationale": "r"}',
    )
    r = TraceJudge(INSTR).judge(TOOL, eng)
    assert "Error: '[unclosed' is not a valid regular expression" in last_user(eng, 1)
    assert "«503»" in last_user(eng, 2)
    assert [c["error"] for c in r.details["tool_calls"]] == [True, False] and r.scored


def test_cap_reached_is_unscored_max_iterations_never_a_verdict():
    eng = scripted(*[f'{{"tool": "search_trace", "pattern": "p{i}"}}' for i in range(4)])
    r = TraceJudge(INSTR, max_iterations=4).judge(RAG, eng)
    assert not r.scored and r.unscored_reason == "max_iterations"
    assert r.value is None and r.score is None and r.passed is None and r.rationale is None
    assert "no rating after 4 actions" in r.error
    assert eng.calls == 4 and r.details["actions"] == 4 and len(r.details["tool_calls"]) == 4
    assert last_user(eng, 3).endswith(
        "1 action(s) left. Call another tool, or give your final evaluation rating if you have enough information."
    )


def test_invalid_action_is_reported_to_the_model_and_the_loop_continues():
    eng = scripted("I think yes", '{"tool": "get_trace_info"}', '{"result": "yes", "rationale": "ok"}')
    r = TraceJudge(INSTR).judge(RAG, eng)
    assert r.scored and r.details["invalid_actions"] == [{"action": 1, "error": "no JSON object found", "text": "I think yes"}]
    assert last_user(eng, 1).startswith("Error in your last action:\nnot a valid action (no JSON object found)")


def test_first_action_is_constrained_to_tool_calls():
    eng = scripted('{"tool": "search_trace", "pattern": "vacation"}', '{"result": "yes", "rationale": "r"}')
    TraceJudge(INSTR).judge(RAG, eng)
    first, second = eng.fmts
    assert not first.allow_rating and '"result"' not in first.regex()
    assert second.allow_rating and [t.name for t in second.tools] == ["get_trace_info", "list_spans", "get_span", "search_trace"]
    eng = scripted('{"result": "yes", "rationale": "blind"}')
    r = TraceJudge(INSTR, first_action="any", max_iterations=1).judge(RAG, eng)
    assert eng.fmts[0].allow_rating and r.value == "yes" and r.details["tool_calls"] == []


def test_tools_with_nothing_new_to_show_leave_the_union():
    eng = scripted(
        '{"tool": "get_trace_info"}',
        '{"tool": "list_spans", "page": 1}',
        '{"tool": "search_trace", "pattern": "x"}',
        '{"result": "yes", "rationale": "r"}',
    )
    TraceJudge(INSTR).judge(RAG, eng)
    names = [[t.name for t in f.tools] for f in eng.fmts]
    assert names[1] == ["list_spans", "get_span", "search_trace"]  # get_trace_info shown in full
    assert names[2] == names[3] == ["get_span", "search_trace"]  # the only page of spans shown in full
    eng = scripted('{"tool": "get_trace_info"}', '{"tool": "get_trace_info"}', '{"result": "yes", "rationale": "r"}')
    TraceJudge(INSTR, retire_exhausted=False).judge(RAG, eng)
    assert "get_trace_info" in [t.name for t in eng.fmts[1].tools]
    assert last_user(eng, 2).startswith("Result of get_trace_info():\n(same call as action 1; its result is shown above)")


def test_tool_budget_leaves_only_the_rating():
    eng = scripted('{"tool": "get_span", "span_id": "2b3c4d5e6f708192"}', '{"result": "no", "rationale": "made up"}')
    r = TraceJudge(INSTR, max_tool_calls=1).judge(TOOL, eng)
    assert not eng.fmts[1].tools and eng.fmts[1].allow_rating and '"tool"' not in eng.fmts[1].regex()
    assert last_user(eng, 1).endswith("No tool call left: give your final evaluation rating now.")
    assert "(1 of them tool calls at most)" in eng.prompts[0][1].content
    assert r.scored and r.details["rating_after_tool_budget"] is True
    with pytest.raises(InputError, match="max_tool_calls"):
        TraceJudge(INSTR, max_tool_calls=0)
    with pytest.raises(InputError, match="max_iterations"):
        TraceJudge(INSTR, max_iterations=1)


def test_context_limit_summarises_then_drops_older_results():
    spans = [
        {"traceId": "t", "spanId": f"s{i}", "name": f"step{i}", "attributes": {"input.value": " ".join(["word"] * 400)}}
        for i in range(4)
    ]
    lim = ToolLimits(page_size=1, value_chars=5000, field_chars=5000, result_chars=5000)
    judge = TraceJudge(INSTR, limits=lim)
    probe = ScriptedEngine(["x"])
    head = probe.count_tokens(judge.messages())
    reserve = judge.fmt.max_tokens() + 8
    n_ctx = head + reserve + 700  # room for one full result (~450 tokens with its notes) and a few summaries
    actions = [f'{{"tool": "list_spans", "page": {p}}}' for p in (1, 2, 3, 4)] + [
        '{"tool": "list_spans", "page": 1}',
        '{"result": "yes", "rationale": "r"}',
    ]
    eng = scripted(*actions, n_ctx=n_ctx)
    r = judge.judge(load_trace({"spans": spans}), eng)
    assert r.scored and eng.calls == 6
    for prompt, fmt in zip(eng.prompts, eng.fmts, strict=True):  # every prompt the engine saw fitted the window
        assert eng.count_tokens(prompt) + fmt.max_tokens() <= n_ctx
    comp = r.details["context_compactions"]
    assert comp and comp[0]["to"] == "summary" and comp[0]["tool"] == "list_spans(page=1)"
    assert any(c["to"] == "dropped" for c in comp)
    last = eng.prompts[-1]
    texts = [m.content for m in last if m.role == "user"][1:]
    assert "[result dropped to save context" in texts[0] and "call list_spans(page=1) again if you need it]" in texts[0]
    assert any(
        "…[summarised to save context: " in m.content and "call list_spans(page=1) again to see it all]" in m.content
        for m in eng.prompts[2]
    )  # summarised before anything is dropped
    assert texts[-1].count("word") == 400  # the newest result is always shown whole
    # the repeated call is shown in full again, because the first result was dropped
    assert r.details["tool_calls"][4]["repeat"] is True and "(same call" not in texts[-1]


def test_prompt_too_long_for_the_window_is_unscored():
    judge = TraceJudge(INSTR)
    eng = scripted('{"tool": "get_trace_info"}', n_ctx=200)
    r = judge.judge(RAG, eng)
    assert r.unscored_reason == "prompt_too_long" and "context window 200" in r.error and eng.calls == 0


# ------------------------------------------------------------------------------------ batch + API


def test_judge_column_scores_good_rows_and_marks_bad_rows_invalid_trace():
    rows = [json.loads(RAG.read_text()), '{"not": "a trace"}', str(TOOL)]
    script = ['{"tool": "get_trace_info"}', '{"result": "yes", "rationale": "r"}'] * 2
    eng = scripted(*script)
    seen = []
    out = TraceJudge(INSTR).judge_column(rows, eng, progress=lambda i, r: seen.append(i))
    assert [r.unscored_reason for r in out] == [None, "invalid_trace", None]
    assert "neither an MLflow trace export" in out[1].error
    assert [r.details.get("trace_format") for r in out] == ["mlflow", None, "otel"]
    assert seen == [0, 1, 2] and eng.calls == 4


def test_judge_trace_function_and_spec():
    from localjudge.agent import judge_trace

    eng = scripted('{"tool": "get_trace_info"}', '{"result": 3, "rationale": "ok"}')
    r = judge_trace(RAG, INSTR, "int:1-5", eng, max_iterations=3)
    assert (r.value, r.score, r.passed, r.judge, r.format) == (3, 0.5, True, "instructions_trace", "trace_action")
    spec = TraceJudge(INSTR, "int:1-5", max_iterations=3).spec()
    assert spec["rating"] == {"kind": "int", "lo": 1.0, "hi": 5.0, "decimals": 0} and spec["max_iterations"] == 3
    assert TraceJudge(INSTR).spec() != TraceJudge(INSTR + " ").spec()
    with pytest.raises(InputError, match="instructions are empty"):
        TraceJudge("  ")


def test_batch_runner_judges_a_trace_column(tmp_path):
    from localjudge import evaluate

    # the runner passes text: a trace column holds JSON text or a path to a trace file
    rows = [{"id": "a", "trace": str(RAG)}, {"id": "b", "trace": TOOL.read_text()}, {"id": "c", "trace": '{"nothing": "here"}'}]

    def fn(messages, fmt):  # a tool call first, then a rating
        return '{"tool": "get_trace_info"}' if len(messages) == 2 else '{"result": "yes", "rationale": "ok"}'

    eng = ScriptedEngine(fn)
    judge = TraceJudge(INSTR)
    first = evaluate(rows, [judge], engine=eng, out=tmp_path / "run")
    lines = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    by_id = {x["row_id"]: x for x in lines}
    assert by_id["a"]["result"]["value"] == "yes" and by_id["b"]["result"]["value"] == "yes"
    assert by_id["a"]["result"]["details"]["tool_calls"][0]["name"] == "get_trace_info"
    assert by_id["c"]["result"]["unscored_reason"] == "input_error" and "neither" in by_id["c"]["error"]
    assert by_id["a"]["cache_key"] != by_id["b"]["cache_key"] and eng.calls == 4
    again = evaluate(rows, [judge], engine=eng, out=tmp_path / "run")  # resumed: nothing re-run
    assert eng.calls == 4 and again.summary.judges[judge.name].n_scored == first.summary.judges[judge.name].n_scored == 2
