"""Escalation cascades (Jung et al. 2024, "Trust or Escalate", arXiv 2407.18370): a cheap model judges every
(row, judge) cell; a cell whose confidence is below a threshold is judged again by a stronger model, whose verdict
then stands.

    run = evaluate("data.jsonl", ["correctness"], model="smollm2-135m", escalate_to="gemma3-270m",
                   escalate_below=0.8, options={"probs": True}, out="runs/cascade")
    run.summary.record.cascade["judges"]["correctness"]["fraction_escalated"]

Confidence of a result (`confidence`): with `--probs`, the probability the model gave the verdict it chose (a yes/no
judge: P(yes) for a yes, 1 - P(yes) for a no; a score judge: 1 - |expected score - chosen score|, both normalised);
for a pairwise judge run with `--both-orders`, 1 when both orders agree and 0 when they do not. An unscored first
result has confidence 0 (it is escalated). Both models' results are stored (`JUDGE@FIRST`, `JUDGE@STRONG`, see
members.py) and the cascade's under `JUDGE`, with `details["cascade"]` saying which model decided and why.

The summary reports per judge the fraction escalated, the first model's agreement with the strong one on the
escalated cells, and the time saved against running the strong model on every cell (estimated from the strong
model's mean time per escalated cell; `scripts/bench.py cascade` measures both side by side).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..labels.agreement import Kind, judge_kind, judge_value
from ..store.db import Store
from ..store.results import JudgeResult, ResultRow
from .members import (
    finish_run,
    free_new_engines,
    labels_for,
    loaded_engine_keys,
    member_judge,
    resolve_judges,
    results_by_judge,
    run_as_member,
    sum_counts,
)

if TYPE_CHECKING:
    from ..engine.model_spec import ModelSpec
    from ..judges.protocol import JudgeProtocol
    from ..run.spec import RunSpec
    from ..run.types import RunResult


def confidence(r: JudgeResult) -> float | None:
    """How sure the model was of this verdict in [0, 1] (see the module docstring); None when it cannot be told
    (no token probabilities)."""
    if not r.scored:
        return 0.0
    if r.details.get("both_orders"):
        return 1.0 if r.details.get("consistent") else 0.0
    if r.expected_score is None or r.score is None:
        return None
    return max(0.0, min(1.0, 1.0 - abs(r.expected_score - r.score)))


def _same(kind: Kind, a: ResultRow, b: ResultRow) -> bool:
    if kind == "numeric":
        return a.result.passed == b.result.passed
    return judge_value(a, kind) == judge_value(b, kind)


def run_cascade(spec: RunSpec, progress: Callable[[Any], None] | None = None) -> RunResult:
    """Run the cascade `spec.trust` names (see the module docstring): `spec.model` first, then the escalation model."""
    from ..judges.pairwise import BothOrders

    escalate_to, escalate_below = spec.trust.escalate_to, spec.trust.escalate_below
    if escalate_below is None or not 0.0 <= escalate_below <= 1.0:
        raise InputError(f"--escalate-below {escalate_below}: give a confidence threshold between 0 and 1")
    assert escalate_to is not None  # dispatch sends no cascade without one
    opts = spec.decode
    js = resolve_judges(spec.judges, spec.judges_dir, spec.both_orders)
    if not opts.probs and not all(isinstance(j, BothOrders) for j in js):
        raise InputError(
            "--escalate-to needs a confidence for each verdict: add --probs (the probability of the chosen verdict), "
            "or --both-orders for pairwise judges (agreement across both orders)"
        )
    first: Any = spec.model.engine if spec.model.engine is not None else spec.model.spec
    lab_first, lab_strong = labels_for([first if first is not None else "default", escalate_to], "--escalate-to")
    strong = spec.model.member(escalate_to)

    def stage(m: ModelSpec, lab: str, rows: set[int] | None, jset: Sequence[JudgeProtocol], run_id: str | None) -> RunResult:
        return run_as_member(spec, jset, lab, m, run_id=run_id, rows=rows, executor=spec.executor, progress=progress)

    before = loaded_engine_keys()
    try:
        res1 = stage(spec.model, lab_first, None, js, None)
    finally:
        free_new_engines(before)
    n_rows = res1.n_rows
    with Store(res1.store_path) as store:
        by1 = results_by_judge(store, res1.run_id, [member_judge(j.name, lab_first) for j in js], n_rows)
    conf: dict[str, dict[int, float | None]] = {}
    for j in js:
        conf[j.name] = {i: confidence(r.result) for i, r in by1[member_judge(j.name, lab_first)].items()}
    results = [res1]
    before = loaded_engine_keys()
    try:
        for j in js:
            esc = {i for i, c in conf[j.name].items() if c is None or c < escalate_below}
            if esc:
                results.append(stage(strong, lab_strong, esc, [j], res1.run_id))
    finally:
        free_new_engines(before)
    names: list[str] = []
    stats: dict[str, Any] = {}
    with Store(res1.store_path) as store:
        for j in js:
            n1, n2 = member_judge(j.name, lab_first), member_judge(j.name, lab_strong)
            names += [j.name, n1, n2]
            by = results_by_judge(store, res1.run_id, [n1, n2], n_rows)
            kind, _ = judge_kind(list(by[n1].values()))
            stats[j.name] = store_cascade(store, j.name, kind, by[n1], by[n2], conf[j.name], escalate_below)
        counts = sum_counts(results)
        meta = dict(results[-1].summary.run)
        how = "agreement of both orders" if not opts.probs else "probability of the chosen verdict (--probs)"
        meta.update(cascade_meta(lab_first, lab_strong, escalate_below, how, stats))
        return finish_run(store, res1, js, names, n_rows, meta, counts, csv_raw=spec.csv_raw)


def store_cascade(
    store: Store,
    name: str,
    kind: Kind,
    first: dict[int, ResultRow],
    strong: dict[int, ResultRow],
    conf: dict[int, float | None],
    threshold: float,
) -> dict[str, Any]:
    """Store the cascade's result of every cell of one judge under `name` (the first stage's result, or the strong
    model's where the cell was escalated and it gave a verdict); return the judge's figures (fraction escalated,
    agreement of the first stage with the strong model on escalated cells, time saved)."""
    n_esc = agree = n_cmp = n_strong = 0
    first_ms = sum(r.result.timings.total_ms for r in first.values())
    strong_ms = 0.0
    for i, r1 in sorted(first.items()):
        c = conf.get(i)
        escalated = c is None or c < threshold
        r2 = strong.get(i) if escalated else None
        decided = r2 if r2 is not None and r2.result.scored else r1
        if escalated:
            n_esc += 1
            if r2 is not None:
                n_strong += 1
                strong_ms += r2.result.timings.total_ms
                if r1.result.scored and r2.result.scored:
                    n_cmp += 1
                    agree += int(_same(kind, r1, r2))
        details = {
            **decided.result.details,
            "cascade": {
                "escalated": escalated,
                "confidence": c,
                "threshold": threshold,
                "decided_by": decided.result.model_id,
                "first": judge_value(r1, kind) if r1.result.scored else None,
                "strong": judge_value(r2, kind) if r2 is not None and r2.result.scored else None,
            },
        }
        res = decided.result.model_copy(update={"judge": name, "details": details})
        keep = r1.model_dump(exclude={"judge", "result", "cache_key", "record", "error"})
        store.put(ResultRow(**keep, judge=name, result=res, error=decided.error))
    n = len(first)
    per_strong = strong_ms / n_strong if n_strong else None
    strong_all = per_strong * n if per_strong is not None else None
    return {
        "n": n,
        "escalated": n_esc,
        "fraction_escalated": n_esc / n if n else None,
        "first_agrees_with_strong_on_escalated": agree / n_cmp if n_cmp else None,
        "n_compared": n_cmp,
        "first_ms": first_ms,
        "strong_ms": strong_ms,
        "strong_on_every_row_ms_estimated": strong_all,
        "time_saved_ms_estimated": None if strong_all is None else strong_all - first_ms - strong_ms,
    }


def cascade_meta(first: str, strong: str, threshold: float, how: str, stats: dict[str, Any]) -> dict[str, Any]:
    """The run record's `model_id` and `cascade` fields: who judged first, who judged the cells below `threshold`,
    how confidence was told, and each judge's figures (`store_cascade`)."""
    return {
        "model_id": f"cascade:{first}->{strong}",
        "cascade": {"first": first, "escalate_to": strong, "threshold": threshold, "confidence": how, "judges": stats},
    }


def cascade_lines(cascade: dict[str, Any]) -> list[str]:
    """The cascade's figures for a terminal."""
    lines = [
        f"cascade {cascade['first']} -> {cascade['escalate_to']} below confidence {cascade['threshold']} ({cascade['confidence']})"
    ]
    for judge, s in cascade["judges"].items():
        frac = s["fraction_escalated"]
        ag = s["first_agrees_with_strong_on_escalated"]
        saved = s["time_saved_ms_estimated"]
        lines.append(
            f"  {judge}: escalated {s['escalated']} of {s['n']} ({'n/a' if frac is None else f'{frac:.1%}'}); "
            f"{'first' if cascade['first'] != 'panel' else 'panel'} agrees with {cascade['escalate_to']} on {'n/a' if ag is None else f'{ag:.1%}'} of {s['n_compared']} escalated; "
            f"time saved vs {cascade['escalate_to']} on every row: "
            + ("n/a" if saved is None else f"{saved / 1000:.1f}s (estimated from its time per escalated row)")
        )
    return lines
