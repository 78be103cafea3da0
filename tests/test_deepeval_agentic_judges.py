"""deepeval_argument_correctness against the installed DeepEval's own ArgumentCorrectnessMetric: the same test
case run through DeepEval (with a recording model that answers canned JSON) and through the judge (a scripted
engine answering the same JSON) sends byte-identical prompts and gives the same score."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
pytest.importorskip("deepeval")

from deepeval.metrics import ArgumentCorrectnessMetric  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402
from deepeval.test_case import ToolCall as DEToolCall  # noqa: E402
from deepeval_support import RecordingLLM  # noqa: E402

import localjudge  # noqa: E402
from localjudge.conversations import from_messages  # noqa: E402
from localjudge.conversations.deepeval_case import input_text, tools_called_text  # noqa: E402
from localjudge.engine.base import ScriptedEngine  # noqa: E402
from localjudge.judges import get_judge  # noqa: E402

NAME = "deepeval_argument_correctness"


def messages(args: dict[str, Any], second: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    calls = [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(args)}}]
    if second is not None:
        calls.append({"id": "c2", "type": "function", "function": {"name": "convert_units", "arguments": json.dumps(second)}})
    return [
        {"role": "user", "content": "What is the weather in Paris tomorrow?"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21C"},
        {"role": "assistant", "content": "Sunny and 21C."},
    ]


def run_both(msgs: list[dict[str, Any]], answers: list[dict[str, Any]]) -> tuple[list[str], float, Any, list[str]]:
    """(DeepEval's prompts, its score, the judge's result, the judge's prompts) on the same canned answers."""
    conv = from_messages(msgs)
    texts = [json.dumps(a) for a in answers]
    model = RecordingLLM.canned(texts)
    metric = ArgumentCorrectnessMetric(model=model, async_mode=False)
    case = LLMTestCase(
        input=input_text(conv),
        actual_output="",
        tools_called=[DEToolCall(name=c.name, input_parameters=c.arguments or None) for c in conv.tool_calls()],
    )
    score = metric.measure(case, _show_indicator=False)
    queue, ours = list(texts), []

    def answer(msgs: Any, fmt: Any) -> str:
        ours.append(msgs[-1].content)
        return queue.pop(0)

    res = get_judge(NAME).evaluate(
        ScriptedEngine(answer), deepeval_input=input_text(conv), deepeval_tools_called=tools_called_text(conv.tool_calls())
    )
    return model.prompts, score, res, ours


def test_prompts_and_score_match_deepeval_with_one_wrong_argument():
    msgs = messages({"city": "Paris", "day": "tomorrow"}, {"value": 21, "to": "fahrenheit"})
    answers = [
        {"verdicts": [{"verdict": "yes", "reason": ""}, {"verdict": "no", "reason": "not asked"}]},
        {"reason": "The score is 0.50 because one call was off."},
    ]
    theirs, score, res, ours = run_both(msgs, answers)
    assert len(theirs) == 2 and ours == theirs
    assert res.score == score == 0.5 and res.rationale == "The score is 0.50 because one call was off."


def test_an_argument_of_the_wrong_type_is_printed_as_deepeval_prints_it():
    msgs = messages({"city": ["Paris"], "day": 1, "metric": True, "note": "café"})
    answers = [{"verdicts": [{"verdict": "no", "reason": "city must be a string"}]}, {"reason": "r"}]
    theirs, score, res, ours = run_both(msgs, answers)
    assert ours == theirs and res.score == score == 0.0


def test_no_arguments_and_no_tool_calls_match_deepeval():
    theirs, score, res, ours = run_both(messages({}), [{"verdicts": [{"verdict": "yes", "reason": ""}]}, {"reason": "ok"}])
    assert ours == theirs and res.score == score == 1.0
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    theirs, score, res, ours = run_both(plain, [])
    assert theirs == ours == [] and res.score == score == 1.0 and res.rationale == "No tool calls provided"


def test_a_verdicts_output_that_does_not_parse_is_unscored_naming_the_stage():
    res = get_judge(NAME).evaluate(ScriptedEngine(["not json"]), deepeval_input="hi", deepeval_tools_called="[ToolCall()]")
    assert res.score is None and res.unscored_reason == "parse_error"
    assert res.error is not None and res.error.startswith("generate_verdicts:")


def test_tool_call_granularity_judges_each_call_on_the_user_turns_before_it():
    msgs = messages({"city": "Paris"}, {"value": 21}) + [
        {"role": "user", "content": "And in Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c3", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}
            ],
        },
    ]
    seen: list[str] = []

    def answer(m: Any, fmt: Any) -> str:
        seen.append(m[-1].content)
        if "\nTool Calls:\n" in m[-1].content:  # the verdicts call (the reason call has no tool calls)
            return json.dumps({"verdicts": [{"verdict": "no" if "Rome" in m[-1].content else "yes", "reason": "x"}]})
        return json.dumps({"reason": "r"})

    run = localjudge.evaluate([{"id": "w", "messages": msgs}], [NAME], engine=ScriptedEngine(answer), conversation="tool_call")
    assert [(r.tool_call_index, r.result.score) for r in run.results] == [(0, 1.0), (1, 1.0), (2, 0.0)]
    verdict_prompts = [p for p in seen if "\nTool Calls:\n" in p]
    assert [p.rsplit("Tool Calls:", 1)[1].count("ToolCall(") for p in verdict_prompts] == [1, 1, 1]
    assert "And in Rome?" not in verdict_prompts[1]
    assert "Input:\nWhat is the weather in Paris tomorrow?\nAnd in Rome?\n" in verdict_prompts[2]


def test_the_judge_file_is_what_the_script_writes_from_the_installed_package():
    from pathlib import Path

    from scripts.catalog import make_deepeval_agentic_judges as mod

    root = Path(__file__).resolve().parent.parent
    path = root / "localjudge" / "judges" / "builtin" / f"{NAME}.toml"
    assert path.read_text(encoding="utf-8") == mod.toml()
