"""One example judged by a panel or a cascade (`localjudge judge NAME --panel A,B` / `--escalate-to M`): the same
aggregation and confidence as whole runs (panel.py, cascade.py), without a store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..engine.backends import ModelRef
from ..engine.base import DecodeOptions
from ..errors import InputError
from ..judges.protocol import JudgeProtocol
from ..labels.agreement import Kind, judge_kind
from ..store.results import JudgeResult, ResultRow
from .members import free_new_engines, labels_for, loaded_engine_keys


def _judge_with(
    spec: str | None, judge: JudgeProtocol, options: DecodeOptions, model_options: Any, variables: Mapping[str, Any]
) -> JudgeResult:
    before = loaded_engine_keys()
    try:
        return judge.evaluate(ModelRef(spec, model_options).engine(), options=options, **variables)
    finally:
        free_new_engines(before)


def _panel(
    judge: JudgeProtocol,
    variables: Mapping[str, Any],
    members: Sequence[str],
    options: DecodeOptions,
    model_options: Any,
    aggregation: str,
    weights: Sequence[float] | None,
) -> tuple[JudgeResult, list[tuple[str, ResultRow]], Kind, dict[str, float]]:
    """The panel's verdict, its members' (label, row), the verdict kind and the weights by label."""
    from .panel import AGGREGATIONS, combine

    if len(members) < 2:
        raise InputError(f"--panel needs at least two models, got {len(members)}; separate them with commas")
    if aggregation not in AGGREGATIONS:
        raise InputError(f"--panel-aggregate {aggregation!r}: use one of {', '.join(AGGREGATIONS)}")
    labels = labels_for(members, "--panel")
    if weights is not None and (len(weights) != len(members) or any(not w > 0 for w in weights)):
        raise InputError(f"--panel-weights: give {len(members)} positive numbers, one per member in --panel order")
    got = {lab: _judge_with(m, judge, options, model_options, variables) for m, lab in zip(members, labels, strict=True)}
    rows = [(lab, ResultRow(row_index=0, row_id="0", judge=judge.name, result=r)) for lab, r in got.items()]
    kind, _ = judge_kind([r for _, r in rows])
    wmap = dict(zip(labels, weights or [1.0] * len(labels), strict=True))
    return combine(judge.name, kind, rows, wmap, aggregation, judge.pass_threshold), rows, kind, wmap


def judge_panel(
    judge: JudgeProtocol,
    variables: Mapping[str, Any],
    members: Sequence[str],
    *,
    options: DecodeOptions,
    model_options: Any = None,
    aggregation: str = "majority",
    weights: Sequence[float] | None = None,
) -> dict[str, Any]:
    """{"panel": the panel's result, "members": {member: result}} for one example (members judged one at a time)."""
    panel, rows, _, _ = _panel(judge, variables, members, options, model_options, aggregation, weights)
    return {"panel": panel.model_dump(), "members": {lab: r.result.model_dump() for lab, r in rows}}


def judge_panel_cascade(
    judge: JudgeProtocol,
    variables: Mapping[str, Any],
    members: Sequence[str],
    escalate_to: str,
    threshold: float,
    *,
    options: DecodeOptions,
    model_options: Any = None,
    aggregation: str = "majority",
    weights: Sequence[float] | None = None,
) -> dict[str, Any]:
    """A panel as a cascade's first stage on one example (see panel_cascade.py): {"result": the verdict that stands,
    "escalated", "confidence", "threshold", "panel": the panel's result, "members": {member: result}, "strong"}."""
    from .members import member_label
    from .panel_cascade import panel_confidence

    if member_label(escalate_to) in labels_for(members, "--panel"):
        raise InputError(f"--escalate-to {member_label(escalate_to)!r} is a panel member; escalate to a model outside the panel")
    panel, rows, kind, wmap = _panel(judge, variables, members, options, model_options, aggregation, weights)
    c = panel_confidence(kind, panel, rows, wmap, options.probs)
    first = {"panel": panel.model_dump(), "members": {lab: r.result.model_dump() for lab, r in rows}}
    return _escalate(panel, c, threshold, first, escalate_to, judge, options, model_options, variables)


def judge_cascade(
    judge: JudgeProtocol,
    variables: Mapping[str, Any],
    first: str | None,
    escalate_to: str,
    threshold: float,
    *,
    options: DecodeOptions,
    model_options: Any = None,
) -> dict[str, Any]:
    """{"result": the verdict that stands, "first": ..., "strong": ... or None, "confidence", "escalated"}."""
    from .cascade import confidence

    if not options.probs:
        raise InputError("--escalate-to needs --probs: the confidence is the probability of the chosen verdict")
    labels_for([first or "default", escalate_to], "--escalate-to")
    r1 = _judge_with(first, judge, options, model_options, variables)
    return _escalate(
        r1, confidence(r1), threshold, {"first": r1.model_dump()}, escalate_to, judge, options, model_options, variables
    )


def _escalate(
    r1: JudgeResult,
    c: float | None,
    threshold: float,
    first: dict[str, Any],
    escalate_to: str,
    judge: JudgeProtocol,
    options: DecodeOptions,
    model_options: Any,
    variables: Mapping[str, Any],
) -> dict[str, Any]:
    """The first stage's result `r1` (of confidence `c`) stands, or `escalate_to`'s when `c` is below the threshold:
    {"result", "escalated", "confidence", "threshold", **first (what the first stage shows), "strong"}."""
    escalated = c is None or c < threshold
    r2 = _judge_with(escalate_to, judge, options, model_options, variables) if escalated else None
    stands = r2 if r2 is not None and r2.scored else r1
    return {
        "result": stands.model_dump(),
        "escalated": escalated,
        "confidence": c,
        "threshold": threshold,
        **first,
        "strong": None if r2 is None else r2.model_dump(),
    }
