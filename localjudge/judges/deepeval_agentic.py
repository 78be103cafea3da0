"""The calls of DeepEval 4.3.1's LLM-judged agentic metrics ArgumentCorrectnessMetric and TaskCompletionMetric
(kind `deepeval_agentic`, which one by the judge file's `deepeval_agentic`), and their arithmetic as DeepEval
computes it (deepeval/metrics/argument_correctness/argument_correctness.py, task_completion/task_completion.py).

Stage 0 (`generate_verdicts`) gives a yes/no verdict per tool call in `{{deepeval_tools_called}}` on whether its
arguments address `{{deepeval_input}}` (with `--granularity tool_call` a row holds one call, so one verdict);
score = the fraction of `yes` verdicts (`score_qag_verdicts`; 1 when the model gives none). Stage 1
(`generate_reason`) explains the score from the `no` verdicts' reasons (Python's `str` of their list, as Jinja
prints it) and the score with two decimals. A row with no tool calls scores 1.0 with DeepEval's reason "No tool
calls provided" and no model call. An output that does not parse makes the result unscored (`parse_error`,
naming the stage); the calls made so far are kept on it.

TaskCompletion: stage 0 (`extract_goal_and_outcome`) reads `{{deepeval_input}}`, `{{deepeval_tools_called_json}}`
and `{{deepeval_actual_output}}` and gives the `task` and the `outcome`; stage 1 (`generate_verdict`) compares
them (`{{deepeval_task}}`, `{{deepeval_outcome}}`) and gives a `verdict` in [0, 1] and its `reason`; score = the
verdict. Both metrics apply DeepEval's `strict_mode` (`deepeval_strict_mode = true`: a score under 1 becomes 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.base import Calls
from ..errors import ParseError
from .context import CallContext
from .deepeval_trace_metrics import strict, trace_calls  # the kind's strict_mode rule, one copy (it imports nothing here)
from .sections import DeepEvalAgenticSection

NO_CALLS = "[]"  # deepeval_tools_called of a row without tool calls (conversations/deepeval_case.py)


def verdicts_score(verdicts: Sequence[str]) -> float:
    """`score_qag_verdicts` with passing = yes: the fraction of `yes`, 1 when there is no verdict."""
    if not verdicts:
        return 1.0
    return sum(v == "yes" for v in verdicts) / len(verdicts)


def incorrect_reasons_text(verdicts: Sequence[dict[str, Any]]) -> str:
    """The `no` verdicts' reasons as DeepEval's reason prompt prints their Python list (None when absent)."""
    return str([v.get("reason") for v in verdicts if v.get("verdict") == "no"])


def agentic_calls(ctx: CallContext[DeepEvalAgenticSection]) -> Calls:
    """The calls of the metric the judge file names (`METRICS`; see `Judge._calls`)."""
    return (yield from METRICS[ctx.section.deepeval_agentic].calls(ctx))


def task_completion_calls(ctx: CallContext[DeepEvalAgenticSection]) -> Calls:
    """TaskCompletionMetric's calls without a trace: the task and outcome, then the verdict on them."""
    sec, gens, outputs = ctx.section, ctx.gens, ctx.outputs
    fmts = ctx.judge.output_formats
    try:
        gens += yield [(ctx.messages(0), fmts[0])]
        extracted = fmts[0].value(fmts[0].parse(gens[-1].text))
        outputs["task"], outputs["outcome"] = str(extracted["task"]), str(extracted["outcome"])
        fields = {"deepeval_task": outputs["task"], "deepeval_outcome": outputs["outcome"]}
        gens += yield [(ctx.messages(1, fields), fmts[1])]
        verdict = fmts[1].value(fmts[1].parse(gens[-1].text))
        outputs["verdict"], outputs["reason"] = float(verdict["verdict"]), verdict.get("reason")
        score = strict(sec, outputs["verdict"])
        details = {**outputs, "strict_mode": sec.deepeval_strict_mode}
        return ctx.scored(fmts[1], score, score, outputs["reason"], outputs, details)
    except ParseError as e:
        return ctx.parse_failed(sec.stages[1 if "task" in outputs else 0].name, e)


def argument_correctness_calls(ctx: CallContext[DeepEvalAgenticSection]) -> Calls:
    """The metric's calls as a generator (see `Judge._calls`): yields requests, returns the `JudgeResult`."""
    sec, gens, outputs = ctx.section, ctx.gens, ctx.outputs
    fmts = ctx.judge.output_formats
    if str(ctx.raw.get("deepeval_tools_called", "")).strip() == NO_CALLS:
        return ctx.scored(fmts[1], 1.0, 1.0, "No tool calls provided", None, {"verdicts": []})
    try:
        gens += yield [(ctx.messages(0), fmts[0])]
        verdicts = outputs["verdicts"] = list(fmts[0].value(fmts[0].parse(gens[-1].text))["verdicts"])
        score = strict(sec, verdicts_score([v["verdict"] for v in verdicts]))
        fields = {"score": format(score, ".2f"), "incorrect_tool_calls_reasons": incorrect_reasons_text(verdicts)}
        gens += yield [(ctx.messages(1, fields), fmts[1])]
        reason = outputs["reason"] = fmts[1].value(fmts[1].parse(gens[-1].text))["reason"]
        return ctx.scored(fmts[1], score, score, reason, outputs, dict(outputs))
    except ParseError as e:
        return ctx.parse_failed(sec.stages[len(outputs)].name, e)


@dataclass(frozen=True)
class Metric:
    """One agentic metric: its calls, and the placeholders they fill between calls (its reason and verdict prompts
    read them)."""

    calls: Callable[[CallContext[DeepEvalAgenticSection]], Calls]
    fills: tuple[str, ...]


METRICS: dict[str, Metric] = {  # the judge file's `deepeval_agentic` -> its calls
    "argument_correctness": Metric(argument_correctness_calls, ("score", "incorrect_tool_calls_reasons")),
    "task_completion": Metric(task_completion_calls, ("deepeval_task", "deepeval_outcome")),
    # judges/deepeval_trace_metrics.py: the task (and the plan), then the score
    "step_efficiency": Metric(trace_calls, ("deepeval_task",)),
    "plan_adherence": Metric(trace_calls, ("deepeval_task", "deepeval_agent_plan")),
}
# the placeholders a judge of the kind may leave to its program (each metric's `fills`: a judge file's templates are
# checked against them with its declared variables when it loads)
FILLS = frozenset(name for m in METRICS.values() for name in m.fills)
