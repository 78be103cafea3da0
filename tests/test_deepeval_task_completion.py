"""deepeval_task_completion against the installed DeepEval's own TaskCompletionMetric: the same test case run
through DeepEval (with a recording model that answers canned JSON) and through the judge (a scripted engine
answering the same JSON) sends byte-identical prompts and gives the same score and reason."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
pytest.importorskip("deepeval")

from deepeval.metrics import TaskCompletionMetric  # noqa: E402
from deepeval.metrics.utils import print_tools_called  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402
from deepeval.test_case import ToolCall as DEToolCall  # noqa: E402
from deepeval_support import RecordingLLM  # noqa: E402

import localjudge  # noqa: E402
from localjudge.conversations import from_messages  # noqa: E402
from localjudge.conversations.deepeval_case import (  # noqa: E402
    actual_output_text,
    call_outputs,
    input_text,
    print_tools_called_text,
)
from localjudge.engine.base import ScriptedEngine  # noqa: E402
from localjudge.judges import get_judge  # noqa: E402
from localjudge.judges.judge import Judge  # noqa: E402

NAME = "deepeval_task_completion"


WEATHER = [
    {"role": "user", "content": "What is the weather in Paris tomorrow?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris", "n": [1, 2.5], "ok": true, "note": "café"}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21C"},
    {"role": "assistant", "content": "Sunny and 21C in Paris tomorrow."},
]
PLAIN = [{"role": "user", "content": "Say hi in French."}, {"role": "assistant", "content": "Bonjour !"}]


def de_case(msgs: list[dict[str, Any]]) -> LLMTestCase:
    conv = from_messages(msgs)
    outs = call_outputs(conv)
    calls = [
        DEToolCall(name=c.name, input_parameters=c.arguments or None, output=outs.get(c.id or "")) for c in conv.tool_calls()
    ]
    return LLMTestCase(input=input_text(conv), actual_output=actual_output_text(conv), tools_called=calls or None)


def run_both(
    msgs: list[dict[str, Any]], answers: list[dict[str, Any]], strict: bool = False
) -> tuple[list[str], Any, Any, list[str]]:
    """(DeepEval's prompts, its metric after measure, the judge's result, the judge's prompts) on the same answers."""
    texts = [json.dumps(a) for a in answers]
    model = RecordingLLM.canned(texts)
    metric = TaskCompletionMetric(model=model, async_mode=False, strict_mode=strict)
    metric.measure(de_case(msgs), _show_indicator=False)
    queue, ours = list(texts), []

    def answer(m: Any, fmt: Any) -> str:
        ours.append(m[-1].content)
        return queue.pop(0)

    judge = get_judge(NAME)
    if strict:
        judge = Judge(judge.spec.model_copy(update={"deepeval_strict_mode": True}))
    conv = from_messages(msgs)
    res = judge.evaluate(
        ScriptedEngine(answer),
        deepeval_input=input_text(conv),
        deepeval_actual_output=actual_output_text(conv),
        deepeval_tools_called_json=print_tools_called_text(conv.tool_calls(), call_outputs(conv)),
    )
    return model.prompts, metric, res, ours


TASK = {"task": "Get tomorrow's weather in Paris.", "outcome": "The system reported sunny, 21C for Paris tomorrow."}


def test_tools_called_print_byte_equal_to_deepevals_print_tools_called():
    conv = from_messages(WEATHER)
    case = de_case(WEATHER)
    assert print_tools_called_text(conv.tool_calls(), call_outputs(conv)) == print_tools_called(case.tools_called)
    assert print_tools_called_text([], {}) == print_tools_called([]) == ""


def test_prompts_score_and_reason_match_deepeval_with_tool_calls():
    theirs, metric, res, ours = run_both(WEATHER, [TASK, {"verdict": 0.85, "reason": "Mostly done."}])
    assert len(theirs) == 2 and ours == theirs
    assert res.score == metric.score == 0.85 and res.rationale == metric.reason == "Mostly done."
    assert res.details["task"] == metric.task and res.details["outcome"] == metric.outcome


def test_prompts_and_score_match_deepeval_without_tool_calls():
    theirs, metric, res, ours = run_both(PLAIN, [TASK, {"verdict": 1.0, "reason": "Done."}])
    assert len(theirs) == 2 and ours == theirs
    assert "tools called:\n\nresponse: Bonjour !" in ours[0]
    assert res.score == metric.score == 1.0


@pytest.mark.parametrize(("verdict", "want"), [(0.9, 0.0), (1.0, 1.0)])
def test_strict_mode_zeroes_a_verdict_under_one_as_deepeval_does(verdict: float, want: float):
    theirs, metric, res, ours = run_both(WEATHER, [TASK, {"verdict": verdict, "reason": "r"}], strict=True)
    assert ours == theirs and res.score == metric.score == want


def test_an_output_that_does_not_parse_is_unscored_naming_the_stage():
    res = get_judge(NAME).evaluate(
        ScriptedEngine([json.dumps(TASK), "no json"]),
        deepeval_input="hi",
        deepeval_actual_output="",
        deepeval_tools_called_json="",
    )
    assert res.score is None and res.unscored_reason == "parse_error"
    assert res.error is not None and res.error.startswith("generate_verdict:") and res.details["task"] == TASK["task"]
    res = get_judge(NAME).evaluate(
        ScriptedEngine(["{"]), deepeval_input="hi", deepeval_actual_output="", deepeval_tools_called_json=""
    )
    assert res.error is not None and res.error.startswith("extract_goal_and_outcome:")


def test_a_conversation_run_fills_the_metric_inputs_from_the_messages():
    seen: list[str] = []

    def answer(m: Any, fmt: Any) -> str:
        seen.append(m[-1].content)
        return json.dumps(TASK) if len(seen) == 1 else json.dumps({"verdict": 0.5, "reason": "half"})

    run = localjudge.evaluate([{"id": "w", "messages": WEATHER}], [NAME], engine=ScriptedEngine(answer))
    assert [r.result.score for r in run.results] == [0.5]
    theirs, _, _, _ = run_both(WEATHER, [TASK, {"verdict": 0.5, "reason": "half"}])
    assert seen == theirs


def test_the_judge_file_is_what_the_script_writes_from_the_installed_package():
    from pathlib import Path

    from scripts.catalog import make_deepeval_agentic_judges as mod

    root = Path(__file__).resolve().parent.parent
    path = root / "localjudge" / "judges" / "builtin" / f"{NAME}.toml"
    assert path.read_text(encoding="utf-8") == mod.toml(NAME)
