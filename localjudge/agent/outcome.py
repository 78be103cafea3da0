"""The `JudgeResult` of one trace judgement: what the agent loop did (actions, tool calls, invalid actions,
context compactions, usage, timings) as `details`, and the rating as the verdict or the reason it is unscored.

The loop (loop.py) keeps its record in a `Transcript` and ends with `trace_result`; the judge's settings come in
through `JudgeSettings`, the few attributes of a `TraceJudge` the result reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..engine.base import Generation
from ..store.results import JudgeResult, Timings, Usage
from .actions import ActionFormat, RatingAction, RatingType
from .tools import clip
from .trace import Trace


class JudgeSettings(Protocol):
    """What of a trace judge its result reports (a `TraceJudge` has them all)."""

    name: str
    fmt: ActionFormat
    rating: RatingType
    max_iterations: int
    first_action: Literal["tool", "any"]
    max_tool_calls: int | None
    pass_threshold: float

    @property
    def version(self) -> str: ...


@dataclass
class Transcript:
    """What the loop did with one trace so far: every generation, tool call, invalid action and compaction."""

    trace: Trace
    gens: list[Generation] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)


def trace_result(
    judge: JudgeSettings,
    log: Transcript,
    seconds: float,
    *,
    action: RatingAction | None = None,
    raw_text: str = "",
    unscored_reason: str | None = None,
    error: str | None = None,
    rating_only: bool = False,
    model_id: str = "",
) -> JudgeResult:
    """The result of a judgement that took `seconds`: rated by `action`, or unscored with `unscored_reason`."""
    tr, gens = log.trace, log.gens
    usage = Usage.of(gens)
    timings = Timings(prompt_ms=sum(g.prompt_ms for g in gens), decode_ms=sum(g.decode_ms for g in gens), total_ms=seconds * 1000)
    details = {
        "trace_id": tr.trace_id,
        "trace_format": tr.source_format,
        "n_spans": len(tr.spans),
        "result_type": judge.rating.spec(),
        "actions": len(gens),
        "max_iterations": judge.max_iterations,
        "action_texts": [clip(g.text, 300) for g in gens],
        "first_action": judge.first_action,
        "max_tool_calls": judge.max_tool_calls,
        "rating_after_tool_budget": rating_only and action is not None,
        "tool_calls": log.calls,
        "invalid_actions": log.invalid,
        "context_compactions": log.compactions,
        "seconds_per_action": round(seconds / len(gens), 3) if gens else None,
    }
    base = dict(
        judge=judge.name,
        judge_version=judge.version,
        format=judge.fmt.kind,
        model_id=gens[-1].model_id if gens else model_id,
        usage=usage,
        timings=timings,
        details=details,
        raw_text=raw_text,
    )
    if action is None:
        return JudgeResult(**base, unscored_reason=unscored_reason, error=error)
    score = judge.rating.normalise(action.result)
    return JudgeResult(
        **base,
        value=action.result,
        score=score,
        passed=None if score is None else score >= judge.pass_threshold,
        rationale=action.rationale,
        verdict=action.model_dump(),
    )
