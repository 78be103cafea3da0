"""The chained calls of DeepEval 4.3.1's GoalAccuracyMetric (kind `deepeval_conversation`, metric `goal_accuracy`,
deepeval/metrics/goal_accuracy/), as its `measure()` makes them with `async_mode=False`.

The turns are the judge's `deepeval_tool_turns` value (conversations/deepeval_tool_turns.py: DeepEval's turn dicts,
an assistant turn's `tools_called` already printed as DeepEval's `print_tools_called` prints them). They are cut
into DeepEval's unit interactions (`get_unit_interactions`); each unit is one goal: its leading user messages
(`User messages: \\n` then each `{content}\\n`) and its steps, one per assistant turn after the first turn, each the
assistant messages so far (`Assistant messages: \\n` then `{content} \\n`, plus `Tools called: \\n{printed} \\n` when
the turn called tools), joined with a newline. Stage 0 scores each goal's accuracy (`GoalScore`), stage 1 each
goal's plan (`PlanScore`): all goals first, then all plans. Score = the mean of the goal mean and the plan mean (an
empty mean is 0), 0 under `strict_mode` (threshold 1) when below 1. Stage 2 writes the final reason as free text
(DeepEval asks for no schema there) from the evaluations, the score and threshold as Python prints DeepEval's
values, and `result`: the PASS/FAIL branch DeepEval's Jinja template computes (`final_score|float >=
threshold|float`), computed here and filled in (the generator checks the branch sits where the judge file says).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine.base import Calls, Message
from ..formats import OutputFormat
from .context import CallContext, Judge
from .deepeval_topic_adherence import unit_interactions
from .deepeval_values import deepeval_turns
from .sections import DeepEvalConversation, DeepEvalConversationSection

TURNS = "deepeval_tool_turns"
# the placeholders its calls fill (DeepEval's template variables, `plan_evalautions` spelled as DeepEval spells it)
FILLS = ("task", "steps_taken", "goal_evaluations", "plan_evalautions", "final_score", "threshold", "result")


def goals_and_steps(turns: list[dict[str, str]]) -> list[tuple[str, str]]:
    """Each unit interaction's (user goal, steps taken joined) as `GoalAccuracyMetric._goal_and_steps_taken` builds
    them and its calls join them."""
    out = []
    for unit in unit_interactions(turns):
        goal = "User messages: \n"
        for t in unit:
            if t["role"] != "user":
                break
            goal += t["content"] + "\n"
        steps, said = [], "Assistant messages: \n"
        for t in unit[1:]:
            if t["role"] == "assistant":
                said += f"{t['content']} \n"
                if t.get("tools_called"):
                    said += f"Tools called: \n{t['tools_called']} \n"
                steps.append(said)
        out.append((goal, "\n".join(steps)))
    return out


def _messages(judge: Judge, stage: int, raw: dict[str, Any], text: dict[str, str], fields: dict[str, str]) -> list[Message]:
    return judge._messages(stage, raw, {**text, **fields})


def _reason_fields(goals: list[dict[str, Any]], plans: list[dict[str, Any]], shown: float, threshold: float) -> dict[str, str]:
    return {
        "goal_evaluations": "".join(f"Score: {g['score']}, Reason: {g['reason']}" for g in goals),
        "plan_evalautions": "".join(f"Score: {p['score']}, Reason: {p['reason']} \n" for p in plans),
        "final_score": str(shown),
        "threshold": str(threshold),
        "result": "PASS" if float(shown) >= float(threshold) else "FAIL",
    }


def first_request(judge: Judge, cfg: DeepEvalConversation, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    """The first call: the first goal's accuracy score (the reason's, when there is no unit interaction)."""
    units = goals_and_steps(deepeval_turns(raw[TURNS], TURNS))
    if units:
        return _messages(judge, 0, raw, text, {"task": units[0][0], "steps_taken": units[0][1]})
    threshold: float = 1 if cfg.strict_mode else 0.5
    return _messages(judge, 2, raw, text, _reason_fields([], [], 0 if cfg.strict_mode else 0.0, threshold))


def goal_accuracy_calls(ctx: CallContext[DeepEvalConversationSection]) -> Calls:
    """GoalAccuracyMetric's calls: a goal score per unit, a plan score per unit, the free-text reason."""
    judge, raw, text, gens, outputs = ctx.judge, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = ctx.section.deepeval_conversation
    fmts = judge.output_formats
    units = goals_and_steps(deepeval_turns(raw[TURNS], TURNS))
    scored: list[list[dict[str, Any]]] = []
    for stage in (0, 1):
        got: list[dict[str, Any]] = []
        if units:
            asks: list[tuple[Sequence[Message], OutputFormat]] = [
                (_messages(judge, stage, raw, text, {"task": g, "steps_taken": s}), fmts[stage]) for g, s in units
            ]
            gens += yield asks
            for gen in gens[-len(units) :]:
                v = fmts[stage].value(fmts[stage].parse(gen.text))
                got.append({"score": float(v["score"]), "reason": v["reason"]})
        outputs["goal_scores" if stage == 0 else "plan_scores"] = got
        scored.append(got)
    goals, plans = scored
    threshold: float = 1 if cfg.strict_mode else 0.5
    score = (sum(g["score"] for g in goals) / (len(goals) or 1) + sum(p["score"] for p in plans) / (len(plans) or 1)) / 2
    shown: float = 0 if cfg.strict_mode and score < threshold else score  # DeepEval's int 0 when clamped
    gens += yield [(_messages(judge, 2, raw, text, _reason_fields(goals, plans, shown, threshold)), fmts[2])]
    reason = fmts[2].value(fmts[2].parse(gens[-1].text))
    details = {**outputs, "strict_mode": cfg.strict_mode}
    return ctx.scored(fmts[2], float(shown), float(shown), reason, outputs, details)
