"""A panel as a cascade's first stage: the panel judges every (row, judge) cell; a cell whose panel confidence is below
the threshold is judged again by the escalation model, whose verdict stands.

    run = evaluate("data.jsonl", ["correctness"], panel=["smollm2-135m", "qwen2.5-0.5b"],
                   escalate_to="gemma3-270m", escalate_below=0.9, out="runs/panel-cascade")
    run.summary.record.cascade["judges"]["correctness"]["fraction_escalated"]

Panel confidence (`panel_confidence`), in [0, 1]:
  * the weighted share of members whose verdict is the panel's: a yes/no or choice judge's value, a score judge's
    pass/fail, a pairwise judge's winner (with --both-orders a member whose two orders disagree says "tie", so it
    never counts for a winner). Three members that split 2 to 1 give 0.67, so `--escalate-below 0.9` escalates
    every split vote;
  * with --probs, each member's probability of the panel's verdict in place of its 0/1 vote: the probability of
    its own verdict (cascade.confidence) when it voted for the panel's verdict, one minus it when it voted
    otherwise (exact for two-valued verdicts), averaged with the weights; a member without probabilities counts
    its vote;
  * a tie or an unscored panel verdict has confidence 0 (always escalated), and so has a pairwise panel whose
    verdict is "tie" (its members' orders disagreed); a member without a verdict counts against.

Stored: each member under `JUDGE@MEMBER`, the panel's verdict under `JUDGE@panel`, the escalation model's under
`JUDGE@MODEL` (escalated rows only) and the verdict that stands under `JUDGE`, with `details["cascade"]` (confidence,
threshold, who decided). The summary has the panel's figures (`run["panel"]`) and the cascade's (`run["cascade"]`,
its `first` is "panel"): fraction escalated, the panel's agreement with the escalation model on escalated rows, and
the time saved against that model on every row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..labels.agreement import Kind, judge_value
from ..store.db import Store
from ..store.results import JudgeResult, ResultRow
from .cascade import cascade_meta, confidence, store_cascade
from .members import (
    finish_run,
    free_new_engines,
    loaded_engine_keys,
    member_judge,
    member_label,
    results_by_judge,
    run_as_member,
    sum_counts,
)
from .panel import judge_with_panel

if TYPE_CHECKING:
    from ..run.spec import RunSpec
    from ..run.types import RunResult

PANEL = "panel"  # the panel's own verdict is stored under JUDGE@panel


def _verdict(kind: Kind, r: JudgeResult) -> Any:
    if kind == "numeric":
        return r.passed
    return judge_value(ResultRow(row_index=0, row_id="", judge="", result=r), kind)


def panel_confidence(
    kind: Kind,
    verdict: JudgeResult,
    members: Sequence[tuple[str, ResultRow]],
    weights: dict[str, float],
    probs: bool = False,
) -> float:
    """How sure the panel was of its verdict on one cell, in [0, 1] (see the module docstring)."""
    if not verdict.scored or not members:
        return 0.0
    win = _verdict(kind, verdict)
    if kind == "pairwise" and win == "tie":  # the members' orders (or the members) disagree: nobody is sure
        return 0.0
    total = got = 0.0
    for lab, row in members:
        w = weights.get(lab, 1.0)
        total += w
        if not row.result.scored:
            continue
        agrees = _verdict(kind, row.result) == win
        c = confidence(row.result) if probs else None
        got += w * (float(agrees) if c is None else (c if agrees else 1.0 - c))
    return got / total if total else 0.0


def run_panel_cascade(spec: RunSpec, progress: Callable[[Any], None] | None = None) -> RunResult:
    """Run the panel cascade `spec.trust` names (see the module docstring)."""
    escalate_to, escalate_below = spec.trust.escalate_to, spec.trust.escalate_below
    if escalate_below is None or not 0.0 <= escalate_below <= 1.0:
        raise InputError(f"--escalate-below {escalate_below}: give a confidence threshold between 0 and 1")
    assert escalate_to is not None  # dispatch sends no panel cascade without one
    opts = spec.decode
    pr = judge_with_panel(spec, progress, verdict_as=PANEL, reserved=[escalate_to])
    run_id = pr.results[-1].run_id
    strong = member_label(escalate_to)
    strong_model = spec.model.member(escalate_to)
    conf: dict[str, dict[int, float | None]] = {
        j.name: {
            i: panel_confidence(pr.kinds[j.name], v, mem, pr.weights, opts.probs) for i, (v, mem) in pr.cells[j.name].items()
        }
        for j in pr.judges
    }
    stages: list[RunResult] = []
    before = loaded_engine_keys()
    try:
        for j in pr.judges:
            esc = {i for i, c in conf[j.name].items() if c is None or c < escalate_below}
            if esc:
                stages.append(
                    run_as_member(
                        spec, [j], strong, strong_model, run_id=run_id, rows=esc, executor=spec.executor, progress=progress
                    )
                )
    finally:
        free_new_engines(before)
    counts = sum_counts([*pr.results, *stages])
    counts.unscored += sum(s["n"] - s["decided"] for s in pr.meta["panel"]["judges"].values())  # the panel's ties
    names: list[str] = []
    stats: dict[str, Any] = {}
    with Store(pr.results[-1].store_path) as store:
        for j in pr.judges:
            first, second = member_judge(j.name, PANEL), member_judge(j.name, strong)
            names += [j.name, first, *(member_judge(j.name, lab) for lab in pr.labels), second]
            by = results_by_judge(store, run_id, [first, second], pr.n_rows)
            stats[j.name] = store_cascade(store, j.name, pr.kinds[j.name], by[first], by[second], conf[j.name], escalate_below)
        meta = pr.meta
        how = (
            "members' mean probability of the panel's verdict (--probs)"
            if opts.probs
            else "share of member votes for the panel's verdict"
        )
        meta.update(cascade_meta(PANEL, strong, escalate_below, how, stats))
        return finish_run(store, pr.results[-1], pr.judges, names, pr.n_rows, meta, counts, csv_raw=spec.csv_raw)


__all__ = ["PANEL", "panel_confidence", "run_panel_cascade"]
