"""The calls of DeepEval 4.3.1's trace-based agentic metrics StepEfficiencyMetric and PlanAdherenceMetric (kind
`deepeval_agentic` with `deepeval_agentic = "step_efficiency"` / `"plan_adherence"`), and their arithmetic as
DeepEval's `measure` (async_mode=False) computes it (deepeval/metrics/step_efficiency, plan_adherence).

Both read `{{deepeval_trace_json}}`, the conversation as the trace dict DeepEval builds for the equivalent agent
run (conversations/deepeval_trace.py, which a run fills in). Stage 0 (`extract_task_from_trace`) gives the user's
`task`. StepEfficiency: stage 1 (`get_execution_efficiency`) scores the trace's steps for `{{deepeval_task}}`;
score = its `score`, reason = its `reason`. PlanAdherence: stage 1 (`extract_plan_from_trace`) gives the agent's
`plan` (a list of steps); an empty plan scores 1 with DeepEval's reason and no third call; else stage 2
(`evaluate_adherence`) reads the task, the plan's steps joined with a newline (`{{deepeval_agent_plan}}`) and the
trace, and gives the `score` and `reason`. `deepeval_strict_mode = true` makes a score under 1 a 0. An output
that does not parse makes the result unscored (`parse_error`, naming the stage), keeping the calls made."""

from __future__ import annotations

from ..engine.base import Calls
from ..errors import ParseError
from .context import CallContext
from .sections import DeepEvalAgenticSection

NO_PLAN_REASON = (
    "There were no plans to evaluate within the trace of your agent's execution. Please check if the agent's "
    "planning or reasoning or thinking is stored in any one of the trace attributes."
)


def strict(sec: DeepEvalAgenticSection, score: float) -> float:
    """DeepEval's `strict_mode` (its threshold then 1): 0 when the score is under 1; the rule of the whole
    deepeval_agentic kind, which imports it from here (it dispatches here, so the rule lives in the leaf)."""
    return 0.0 if sec.deepeval_strict_mode and score < 1 else score


def trace_calls(ctx: CallContext[DeepEvalAgenticSection]) -> Calls:
    """The metric's calls as a generator (see `Judge._calls`): yields requests, returns the `JudgeResult`."""
    sec, gens, outputs = ctx.section, ctx.gens, ctx.outputs
    fmts = ctx.judge.output_formats
    try:
        gens += yield [(ctx.messages(0), fmts[0])]
        outputs["task"] = str(fmts[0].value(fmts[0].parse(gens[-1].text))["task"])
        fields = {"deepeval_task": outputs["task"]}
        if sec.deepeval_agentic == "plan_adherence":
            gens += yield [(ctx.messages(1, fields), fmts[1])]
            plan = outputs["plan"] = [str(s) for s in fmts[1].value(fmts[1].parse(gens[-1].text))["plan"]]
            if not plan:
                details = {**outputs, "strict_mode": sec.deepeval_strict_mode}
                return ctx.scored(fmts[1], 1.0, 1.0, NO_PLAN_REASON, outputs, details)
            fields["deepeval_agent_plan"] = "\n".join(plan)
        last = len(fmts) - 1
        gens += yield [(ctx.messages(last, fields), fmts[last])]
        verdict = fmts[last].value(fmts[last].parse(gens[-1].text))
        outputs["score"], outputs["reason"] = float(verdict["score"]), str(verdict["reason"])
        score = strict(sec, outputs["score"])
        details = {**outputs, "strict_mode": sec.deepeval_strict_mode}
        return ctx.scored(fmts[last], score, score, outputs["reason"], outputs, details)
    except ParseError as e:
        return ctx.parse_failed(sec.stages[len(outputs)].name, e)
