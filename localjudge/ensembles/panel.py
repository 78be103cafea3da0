"""Judge panels (juries, Verga et al. 2024, arXiv 2404.18796): several models judge every (row, judge) cell and
the panel's verdict is their vote.

    from localjudge import evaluate
    run = evaluate("data.jsonl", ["correctness"], panel=["smollm2-135m", "gemma3-270m"], out="runs/panel")
    run.summary.record.panel["judges"]["correctness"]["fleiss_kappa"]

Members run one after the other in this process (each model loaded, run over every row, freed before the next),
or side by side on the workers of a Ray cluster with `executor="ray"` (each member its share of the workers, see
parallel.py). Member results are stored as ordinary results under
`JUDGE@MEMBER` (see members.py), so they are cached and resumed like any other; the panel's result goes under
`JUDGE` and is recomputed from the members' on every run (it costs no inference).

Aggregation: categorical verdicts (yes/no, choices, pairwise winners) by majority vote, weighted when `weights` are
given; a tie is stored as an unscored result with reason `panel_tie` (never broken silently) and counted in the
summary. Scores by `aggregation="mean"` (the default for score judges) or `"median"` (weighted with `weights`);
passed = the aggregate score >= the judge's pass threshold.
"""

from __future__ import annotations

import statistics
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine.base import Engine
from ..errors import InputError, UnscoredReason
from ..labels.agreement import Kind, judge_kind, judge_value
from ..run.aggregate import value_key
from ..store.db import Store
from ..store.results import JudgeResult, ResultRow, Timings, Usage
from .members import (
    MODEL_COLUMNS,
    finish_run,
    free_new_engines,
    labels_for,
    loaded_engine_keys,
    member_judge,
    member_label,
    resolve_judges,
    results_by_judge,
    run_as_member,
    same_family_warnings,
    sum_counts,
)

if TYPE_CHECKING:
    from ..judges.protocol import JudgeProtocol
    from ..run.spec import RunSpec
    from ..run.types import RunCounts, RunResult

AGGREGATIONS = ("majority", "mean", "median")


def fleiss_kappa(ratings: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa of items each rated by the same number (>= 2) of raters; None when undefined (no items, or
    every rating in one category)."""
    items = [r for r in ratings if len(r) >= 2]
    if not items or len({len(r) for r in items}) != 1:
        return None
    n = len(items[0])
    cats = sorted({c for r in items for c in r})
    counts = [Counter(r) for r in items]
    p_i = [(sum(v * v for v in c.values()) - n) / (n * (n - 1)) for c in counts]
    p_bar = sum(p_i) / len(items)
    p_j = [sum(c[k] for c in counts) / (len(items) * n) for k in cats]
    p_e = sum(p * p for p in p_j)
    if p_e >= 1:
        return None
    return (p_bar - p_e) / (1 - p_e)


def _weighted_median(xs: list[float], ws: list[float]) -> float:
    pairs = sorted(zip(xs, ws, strict=True))
    half, acc = sum(ws) / 2, 0.0
    for x, w in pairs:
        acc += w
        if acc >= half:
            return x
    return pairs[-1][0]


def combine(
    name: str,
    kind: Kind,
    members: Sequence[tuple[str, ResultRow]],
    weights: dict[str, float],
    aggregation: str,
    pass_threshold: float,
) -> JudgeResult:
    """The panel's result for one cell from its members' (label, stored row); see the module docstring."""
    scored = [(lab, r) for lab, r in members if r.result.scored and (kind == "numeric" or judge_value(r, kind) is not None)]
    usage = Usage(**{k: sum(getattr(r.result.usage, k) for _, r in members) for k in Usage.model_fields})
    timings = Timings(**{k: sum(getattr(r.result.timings, k) for _, r in members) for k in Timings.model_fields})
    first = members[0][1].result
    votes = {lab: (judge_value(r, kind) if kind != "numeric" else r.result.score) for lab, r in members if r.result.scored}
    details: dict[str, Any] = {"panel": {"members": votes, "aggregation": aggregation, "n_scored": len(scored)}}
    # what every panel result has: its name, the members' summed usage and timings, the votes
    common: dict[str, Any] = dict(
        judge=name,
        judge_version=first.judge_version,
        format=first.format,
        model_id="panel",
        usage=usage,
        timings=timings,
        details=details,
    )
    if not scored:
        why = "; ".join(f"{lab}: {r.result.unscored_reason or 'no verdict'}" for lab, r in members)
        return JudgeResult(**common, unscored_reason=UnscoredReason.PANEL_UNSCORED, error=f"no member scored ({why})")
    if kind == "numeric":
        xs = [float(r.result.score) for _, r in scored if r.result.score is not None]
        ws = [weights.get(lab, 1.0) for lab, r in scored if r.result.score is not None]
        if aggregation == "median":
            score = _weighted_median(xs, ws) if len(set(ws)) > 1 else statistics.median(xs)
        else:
            score = sum(x * w for x, w in zip(xs, ws, strict=True)) / sum(ws)
        vals = [r.result.value for _, r in scored]
        value: Any = None
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            value = statistics.median(vals) if aggregation == "median" else sum(vals) / len(vals)
        details["panel"]["score"] = score
        shown = ", ".join(f"{lab}={r.result.value}" for lab, r in scored)
        return scored[0][1].result.model_copy(
            update={
                **common,
                "value": value,
                "score": score,
                "passed": score >= pass_threshold,
                "rationale": f"panel {aggregation} of {len(scored)}: {shown}",
                "raw_text": "",
                "expected_score": None,
            }
        )
    tally: dict[Any, float] = {}
    for lab, r in scored:
        v = judge_value(r, kind)
        tally[v] = tally.get(v, 0.0) + weights.get(lab, 1.0)
    top = max(tally.values())
    leaders = [v for v, w in tally.items() if w == top]
    shown = ", ".join(f"{lab}={judge_value(r, kind)}" for lab, r in scored)
    details["panel"]["votes"] = {str(v): w for v, w in tally.items()}
    if len(leaders) > 1:
        return JudgeResult(
            **common,
            unscored_reason=UnscoredReason.PANEL_TIE,
            error=f"panel tie between {' and '.join(map(str, leaders))} ({shown}); add a member or give weights",
        )
    win = leaders[0]
    template = next(r.result for lab, r in scored if judge_value(r, kind) == win)
    exp = [r.result.expected_score for _, r in scored]
    return template.model_copy(
        update={
            **common,
            "rationale": f"panel majority {top:g} of {sum(tally.values()):g}: {shown}",
            "raw_text": "",
            "expected_score": sum(e for e in exp if e is not None) / len(exp) if all(e is not None for e in exp) else None,
        }
    )


def _judge_stats(
    kind: Kind, labels: Sequence[str], cells: dict[int, tuple[JudgeResult, list[tuple[str, ResultRow]]]]
) -> dict[str, Any]:
    """Ties, per-member agreement with the panel, Fleiss' kappa among members for one judge."""
    agreement: dict[str, dict[str, Any]] = {}
    for lab in labels:
        hits = n = 0
        for panel, members in cells.values():
            row = dict(members).get(lab)
            if row is None or not panel.scored or not row.result.scored:
                continue
            n += 1
            if kind == "numeric":
                hits += int(row.result.passed == panel.passed)
            else:
                hits += int(
                    judge_value(row, kind) == judge_value(ResultRow(row_index=0, row_id="", judge="", result=panel), kind)
                )
        agreement[lab] = {"agreement": hits / n if n else None, "n": n}
    ratings = []
    for _, members in cells.values():
        got = dict(members)
        if all(lab in got and got[lab].result.scored for lab in labels):
            ratings.append(
                [str(judge_value(got[lab], kind)) if kind != "numeric" else value_key(got[lab].result) for lab in labels]
            )
    n_tie = sum(1 for p, _ in cells.values() if p.unscored_reason == UnscoredReason.PANEL_TIE)
    return {
        "n": len(cells),
        "decided": sum(1 for p, _ in cells.values() if p.scored),
        "ties": n_tie,
        "member_agreement": agreement,
        "agreement_basis": "passed" if kind == "numeric" else "value",
        "fleiss_kappa": fleiss_kappa(ratings),
        "n_kappa": len(ratings),
    }


def _family_warnings(data: Any, labels: Sequence[str], limit: int | None) -> tuple[str | None, list[str]]:
    from ..datasets import open_dataset

    try:
        ds = open_dataset(data)
        col = next((c for c in MODEL_COLUMNS if c in ds.columns), None)
        if col is None:
            return None, []
        names = []
        for row in ds:
            if limit is not None and row.index >= limit:
                break
            names.append(row.values.get(col))
        return col, same_family_warnings(names, labels, col)
    except InputError:
        return None, []


@dataclass
class PanelRun:
    """A panel's members judged and its verdicts stored: what `run_panel` and a panel cascade (panel_cascade.py)
    finish their run from. `cells`: judge -> row index -> (the panel's verdict, its members' (label, row))."""

    results: list[RunResult]
    judges: list[JudgeProtocol]
    labels: list[str]
    weights: dict[str, float]
    names: list[str]
    meta: dict[str, Any]
    counts: RunCounts
    kinds: dict[str, Kind]
    cells: dict[str, dict[int, tuple[JudgeResult, list[tuple[str, ResultRow]]]]]
    n_rows: int


def run_panel(spec: RunSpec, progress: Callable[[Any], None] | None = None) -> RunResult:
    """Run the panel `spec.trust` names (see the module docstring); returns the finished run."""
    pr = judge_with_panel(spec, progress)
    last = pr.results[-1]
    with Store(last.store_path) as store:
        return finish_run(store, last, pr.judges, pr.names, pr.n_rows, pr.meta, pr.counts, csv_raw=spec.csv_raw)


def judge_with_panel(
    spec: RunSpec,
    progress: Callable[[Any], None] | None = None,
    *,
    verdict_as: str | None = None,
    reserved: Sequence[str | Engine] = (),
) -> PanelRun:
    """Every member over every cell, then the panel's verdict of each cell stored under `JUDGE` (or
    `JUDGE@<verdict_as>`, when the panel is a cascade's first stage); `reserved`: models that may not be members
    (a cascade's strong model). Bad input is refused before any inference."""
    data, limit, t = spec.data, spec.limit, spec.trust
    members = list(t.panel or ())
    aggregation, weights = t.aggregation, t.weights
    if spec.model.spec is not None or spec.model.engine is not None:
        raise InputError("--panel names every judge model; drop --model (or give it as a panel member)")
    if len(members) < 2:
        raise InputError(f"--panel needs at least two models, got {len(members)}; separate them with commas")
    if aggregation not in AGGREGATIONS:
        raise InputError(f"--panel-aggregate {aggregation!r}: use one of {', '.join(AGGREGATIONS)}")
    labels = labels_for(members, "--panel")
    if verdict_as is not None and verdict_as in labels:
        raise InputError(f"--panel: a member may not be named {verdict_as!r} (the panel's own verdict is stored so)")
    for r in reserved:
        if member_label(r) in labels:
            raise InputError(f"--escalate-to {member_label(r)!r} is a panel member; escalate to a model outside the panel")
    if weights is not None and (len(weights) != len(members) or any(not w > 0 for w in weights)):
        raise InputError(f"--panel-weights: give {len(members)} positive numbers, one per member in --panel order")
    wmap = dict(zip(labels, weights or [1.0] * len(labels), strict=True))
    js = resolve_judges(spec.judges, spec.judges_dir, spec.both_orders)
    col, warns = _family_warnings(data, labels, limit)
    for w in warns:
        warnings.warn(w, UserWarning, stacklevel=4)
    executor = spec.executor
    models = [spec.model.member(m) for m in members]  # each member's ModelRef is built once, when its run needs it

    def member(i: int, ex: Any, run_id: str | None) -> RunResult:
        shown = progress if ex is None or ex == "local" else None
        return run_as_member(spec, js, labels[i], models[i], run_id=run_id, executor=ex, progress=shown)

    results: list[RunResult] = []
    on_ray: dict[str, int] | None = None
    if executor is not None and executor != "local":
        from .parallel import new_run_id, run_members_on_ray

        if any(isinstance(m, Engine) for m in members):
            raise InputError("--engine ray: panel members must be model specs (the workers load them), not loaded engines")
        rid = new_run_id(spec.out)
        results, on_ray = run_members_on_ray(executor, len(members), models[0], lambda i, ex: member(i, ex, rid))
    else:
        run_id: str | None = None
        for i in range(len(members)):
            before = loaded_engine_keys()
            try:
                res = member(i, executor, run_id)
            finally:
                free_new_engines(before)  # this member's model, before the next one loads
            run_id = res.run_id
            results.append(res)
    last = results[-1]
    n_rows = max(r.n_rows for r in results)
    names: list[str] = []
    stats: dict[str, Any] = {}
    kinds: dict[str, Kind] = {}
    all_cells: dict[str, dict[int, tuple[JudgeResult, list[tuple[str, ResultRow]]]]] = {}
    with Store(last.store_path) as store:
        for j in js:
            mnames = [member_judge(j.name, lab) for lab in labels]
            vname = j.name if verdict_as is None else member_judge(j.name, verdict_as)
            names += [vname, *mnames]
            by = results_by_judge(store, last.run_id, mnames, n_rows)
            rows_any = [r for d in by.values() for r in d.values()]
            kind, _ = judge_kind(rows_any)
            cells: dict[int, tuple[JudgeResult, list[tuple[str, ResultRow]]]] = {}
            for idx in sorted({i for d in by.values() for i in d}):
                mem = [(lab, by[mn][idx]) for lab, mn in zip(labels, mnames, strict=True) if idx in by[mn]]
                panel_res = combine(vname, kind, mem, wmap, aggregation, j.pass_threshold)
                base = mem[0][1]
                err = panel_res.error if not panel_res.scored else None
                store.put(
                    ResultRow(
                        **base.model_dump(exclude={"judge", "result", "cache_key", "record", "error"}),
                        judge=vname,
                        result=panel_res,
                        error=err,
                    )
                )
                cells[idx] = (panel_res, mem)
            stats[j.name] = _judge_stats(kind, labels, cells)
            kinds[j.name], all_cells[j.name] = kind, cells
    counts = sum_counts(results)
    counts.unscored += sum(s["n"] - s["decided"] for s in stats.values())
    meta = dict(last.summary.run)
    meta.update(
        model_id="panel:" + ",".join(labels),
        panel={
            "members": labels,
            "member_models": [m if isinstance(m, str) else lab for m, lab in zip(members, labels, strict=True)],
            "aggregation": aggregation,
            "weights": wmap,
            "judges": stats,
            "data_model_column": col,
            "warnings": warns,
            "ray": on_ray,
        },
    )
    return PanelRun(results, js, labels, wmap, names, meta, counts, kinds, all_cells, n_rows)


def panel_lines(panel: dict[str, Any]) -> list[str]:
    """The panel's figures for a terminal: per judge, ties, Fleiss' kappa and each member's agreement with the panel."""
    lines = [f"panel of {len(panel['members'])} ({', '.join(panel['members'])}), {panel['aggregation']}"]
    for judge, s in panel["judges"].items():
        k = s.get("fleiss_kappa")
        lines.append(
            f"  {judge}: {s['decided']} of {s['n']} decided, {s['ties']} ties; Fleiss' kappa among members "
            f"{'n/a' if k is None else f'{k:.3f}'} (n={s['n_kappa']})"
        )
        for lab, a in s["member_agreement"].items():
            x = a["agreement"]
            lines.append(
                f"    {lab}: agrees with the panel on {'n/a' if x is None else f'{x:.1%}'} of {a['n']} ({s['agreement_basis']})"
            )
    lines += [f"warning: {w}" for w in panel.get("warnings") or []]
    return lines


__all__ = ["PanelRun", "combine", "fleiss_kappa", "judge_with_panel", "panel_lines", "run_panel"]
