"""DeepEval's trace-based agentic metrics against the installed package: a conversation's trace dict
(conversations/deepeval_trace.py) equals, key for key, the dict DeepEval builds from a REAL traced run
(`@observe` agent, llm and tool functions making the same calls, no network), and deepeval_step_efficiency /
deepeval_plan_adherence send byte-identical prompts and give the same score and reason as DeepEval's own
StepEfficiencyMetric / PlanAdherenceMetric (a recording model answering canned JSON) on that real trace."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("CONFIDENT_TRACE_FLUSH", "NO")
pytest.importorskip("deepeval")

from deepeval.metrics import PlanAdherenceMetric, StepEfficiencyMetric  # noqa: E402
from deepeval.test_case import LLMTestCase  # noqa: E402
from deepeval.tracing import observe  # noqa: E402
from deepeval.tracing.context import current_span_context  # noqa: E402
from deepeval.tracing.tracing import trace_manager  # noqa: E402
from deepeval.tracing.utils import make_json_serializable  # noqa: E402
from deepeval.utils import serialize_to_json  # noqa: E402
from deepeval_support import RecordingLLM  # noqa: E402

import localjudge  # noqa: E402
from localjudge.conversations import from_messages  # noqa: E402
from localjudge.conversations.deepeval_trace import deepeval_trace_dict, deepeval_trace_json  # noqa: E402
from localjudge.conversations.model import ToolSpec  # noqa: E402
from localjudge.engine.base import ScriptedEngine  # noqa: E402
from localjudge.judges import get_judge  # noqa: E402
from localjudge.judges.judge import Judge  # noqa: E402


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


# a system turn, a stated plan, two calls in one turn (one unanswered), non-ASCII text
WEATHER = [
    {"role": "system", "content": "You are a brief weather agent."},
    {"role": "user", "content": "Weather in Lyon — tomorrow, in °C?"},
    {
        "role": "assistant",
        "content": "Plan: 1. get the weather for Lyon. 2. search the forecast. 3. answer.",
        "tool_calls": [_call("c1", "get_weather", {"city": "Lyon", "unit": "C"}), _call("c2", "search", {"q": "Lyon", "n": 2})],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21 °C"},
    {"role": "assistant", "content": "Sunny tomorrow in Lyon, 21 °C."},
]
# two user turns, a failed call retried, available tools, no plan
TWO_TURNS = [
    {"role": "user", "content": "Find flights to Oslo."},
    {"role": "assistant", "content": "", "tool_calls": [_call("f1", "search", {"q": "flights Oslo", "n": 3})]},
    {"role": "tool", "tool_call_id": "f1", "content": "Error: timeout"},
    {"role": "assistant", "content": "The search timed out."},
    {"role": "user", "content": "Try again, just one."},
    {"role": "assistant", "content": "", "tool_calls": [_call("f2", "search", {"q": "flights Oslo", "n": 1})]},
    {"role": "tool", "tool_call_id": "f2", "content": "SK4321 at 09:10"},
    {"role": "assistant", "content": "SK4321 leaves at 09:10."},
]
AVAILABLE = [{"name": "search", "description": "web search"}, {"name": "get_weather"}]
TRACES = {"weather": (WEATHER, []), "two_turns": (TWO_TURNS, AVAILABLE)}

RESULTS: list[Any] = []  # what the next observed tool call returns


@observe(type="tool", name="get_weather")
def get_weather(city: str, unit: str) -> Any:
    return RESULTS.pop(0)


@observe(type="tool", name="search")
def search(q: str, n: int) -> Any:
    return RESULTS.pop(0)


@observe(type="llm")
def llm(messages: list[dict[str, str]]) -> str:
    return RESULTS.pop(0)


def real_trace(msgs: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The trace dict DeepEval builds (as its evaluate does for a metric that requires a trace) for an agent that
    makes the conversation's calls through `@observe` functions."""
    results = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
    tool_fns = {"get_weather": get_weather, "search": search}
    root: dict[str, Any] = {}

    @observe(type="agent", available_tools=[t["name"] for t in tools])
    def agent(input: str) -> str:
        root["span"] = current_span_context.get()
        seen: list[dict[str, str]] = []
        for m in msgs:
            if m["role"] == "assistant":
                RESULTS.append(m["content"])
                llm([dict(x) for x in seen])
                for tc in m.get("tool_calls", []):
                    RESULTS.append(results.get(tc["id"]))
                    tool_fns[tc["function"]["name"]](**json.loads(tc["function"]["arguments"]))
            seen.append({"role": m["role"], "content": m["content"]})
        return msgs[-1]["content"]

    agent("\n".join(m["content"] for m in msgs if m["role"] == "user"))
    return trace_manager.create_nested_spans_dict(root["span"])


def conv_of(name: str) -> Any:
    msgs, tools = TRACES[name]
    specs = [ToolSpec(name=t["name"], description=t.get("description", "")) for t in tools]
    return from_messages(msgs).model_copy(update={"available_tools": specs})


@pytest.mark.parametrize("name", sorted(TRACES))
def test_the_trace_dict_equals_deepevals_from_a_real_traced_run_key_for_key(name):
    theirs = real_trace(*TRACES[name])
    # DeepEval's dict holds its ToolCall models under tools_called; its metrics print them through
    # make_json_serializable, so the dicts are compared in that form (no ids or times: DeepEval drops them)
    assert deepeval_trace_dict(conv_of(name)) == make_json_serializable(theirs)
    assert deepeval_trace_json(conv_of(name)) == serialize_to_json(theirs, indent=2)


TASK = {"task": "Get tomorrow's weather in Lyon in °C."}
PLAN = {"plan": ["Get the weather for Lyon.", "Search the forecast.", "Answer."]}


def run_both(metric_cls: Any, judge_name: str, name: str, answers: list[dict[str, Any]], strict: bool = False):
    """(DeepEval's prompts, its metric after measure, the judge's result, the judge's prompts) on the same answers."""
    texts = [json.dumps(a, ensure_ascii=False) for a in answers]
    model = RecordingLLM.canned(list(texts))
    metric = metric_cls(model=model, async_mode=False, strict_mode=strict)
    case = LLMTestCase(input="None", actual_output="None")  # required fields; the prompts read only the trace
    case._trace_dict = real_trace(*TRACES[name])
    metric.measure(case, _show_indicator=False)
    queue, ours = list(texts), []

    def answer(m: Any, fmt: Any) -> str:
        ours.append(m[-1].content)
        return queue.pop(0)

    judge = get_judge(judge_name)
    if strict:
        judge = Judge(judge.spec.model_copy(update={"deepeval_strict_mode": True}))
    res = judge.evaluate(ScriptedEngine(answer), deepeval_trace_json=deepeval_trace_json(conv_of(name)))
    return model.prompts, metric, res, ours


@pytest.mark.parametrize("name", sorted(TRACES))
def test_step_efficiency_prompts_score_and_reason_match_deepeval(name):
    theirs, metric, res, ours = run_both(
        StepEfficiencyMetric, "deepeval_step_efficiency", name, [TASK, {"score": 0.75, "reason": "One extra search."}]
    )
    assert len(ours) == 2 and ours == theirs
    assert res.score == metric.score == 0.75 and res.rationale == metric.reason == "One extra search."


@pytest.mark.parametrize("name", sorted(TRACES))
def test_plan_adherence_prompts_score_and_reason_match_deepeval(name):
    verdict = {"score": 0.5, "reason": "Step 2 was not answered."}
    theirs, metric, res, ours = run_both(PlanAdherenceMetric, "deepeval_plan_adherence", name, [TASK, PLAN, verdict])
    assert len(ours) == 3 and ours == theirs
    assert res.score == metric.score == 0.5 and res.rationale == metric.reason == verdict["reason"]


def test_plan_adherence_without_a_plan_scores_one_with_deepevals_reason_and_no_third_call():
    theirs, metric, res, ours = run_both(PlanAdherenceMetric, "deepeval_plan_adherence", "two_turns", [TASK, {"plan": []}])
    assert len(ours) == 2 and ours == theirs
    assert res.score == metric.score == 1 and res.rationale == metric.reason


@pytest.mark.parametrize(("score", "want"), [(0.75, 0.0), (1.0, 1.0)])
def test_strict_mode_zeroes_a_score_under_one_as_deepeval_does(score, want):
    for cls, name, answers in (
        (StepEfficiencyMetric, "deepeval_step_efficiency", [TASK]),
        (PlanAdherenceMetric, "deepeval_plan_adherence", [TASK, PLAN]),
    ):
        theirs, metric, res, ours = run_both(cls, name, "weather", [*answers, {"score": score, "reason": "r"}], strict=True)
        assert ours == theirs and res.score == metric.score == want


def test_an_output_that_does_not_parse_is_unscored_naming_the_stage():
    trace = deepeval_trace_json(conv_of("weather"))
    res = get_judge("deepeval_plan_adherence").evaluate(ScriptedEngine([json.dumps(TASK), "no json"]), deepeval_trace_json=trace)
    assert res.score is None and res.unscored_reason == "parse_error"
    assert res.error is not None and res.error.startswith("extract_plan_from_trace:") and res.details["task"] == TASK["task"]
    res = get_judge("deepeval_step_efficiency").evaluate(ScriptedEngine(["{"]), deepeval_trace_json=trace)
    assert res.error is not None and res.error.startswith("extract_task_from_trace:")


def test_a_conversation_run_fills_the_trace_from_the_messages():
    seen: list[str] = []

    def answer(m: Any, fmt: Any) -> str:
        seen.append(m[-1].content)
        return json.dumps(TASK) if len(seen) == 1 else json.dumps({"score": 0.25, "reason": "slow"})

    run = localjudge.evaluate([{"id": "w", "messages": WEATHER}], ["deepeval_step_efficiency"], engine=ScriptedEngine(answer))
    assert [r.result.score for r in run.results] == [0.25]
    theirs, _, _, _ = run_both(
        StepEfficiencyMetric, "deepeval_step_efficiency", "weather", [TASK, {"score": 0.25, "reason": "slow"}]
    )
    assert seen == theirs


def test_the_judge_files_are_what_the_script_writes_from_the_installed_package():
    import importlib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    make = importlib.import_module("scripts.catalog.make_deepeval_trace_judges")
    for name in make.ABOUT:
        assert (root / "localjudge" / "judges" / "builtin" / f"{name}.toml").read_text(encoding="utf-8") == make.toml(name)
