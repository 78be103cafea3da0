"""Compare two runs: per-judge deltas and the rows whose verdict changed.

`compare_runs(current, base)`: deltas are current − base; rows are joined on (row_id, judge).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..run.aggregate import value_key
from ..store.results import ResultRow
from .rundir import Run


class JudgeDelta(BaseModel):
    """One judge in both runs: n, mean score and pass rate (95 % CI) of each, deltas (current − base; None
    when either side is missing), and how many common rows changed verdict."""

    judge: str
    n_current: int
    n_base: int
    mean_current: float | None
    mean_base: float | None
    mean_delta: float | None
    pass_current: float | None
    pass_base: float | None
    pass_delta: float | None
    ci_current: tuple[float, float] | None
    ci_base: tuple[float, float] | None
    unscored_current: int
    unscored_base: int
    n_common: int  # rows judged in both runs
    n_changed: int  # of those, rows whose verdict changed
    pass_to_fail: int
    fail_to_pass: int


class ChangedRow(BaseModel):
    """A (row, judge) whose verdict differs between the runs: verdicts, scores and rationales (or errors)
    before and after, and whether its inputs differ."""

    row_id: str
    row_index: int
    judge: str
    before: str
    after: str
    score_before: float | None
    score_after: float | None
    rationale_before: str | None
    rationale_after: str | None
    inputs_differ: bool


class Comparison(BaseModel):
    """The current run against a base run: per-judge deltas, the changed rows, and the results found in only
    one of the runs."""

    base_path: str
    base_run_id: str
    deltas: list[JudgeDelta]
    n_changed: int
    changed: list[ChangedRow]  # at most max_rows of them
    only_current: int  # (row, judge) results present in the current run only
    only_base: int


def verdict_of(row: ResultRow) -> str:
    """The verdict shown and compared: the value, or "unscored"."""
    return value_key(row.result) if row.result.scored else "unscored"


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _ci(s: dict[str, Any]) -> tuple[float, float] | None:
    ci = s.get("pass_rate_ci")
    return (float(ci[0]), float(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci else None


def compare_runs(current: Run, base: Run, max_rows: int = 2000) -> Comparison:
    """Compare `current` with `base`: rows joined on (row_id, judge), deltas current − base; keeps the first
    `max_rows` changed rows by row then judge (`n_changed` counts them all)."""
    cur = {r.key: r for r in current.rows}
    old = {r.key: r for r in base.rows}
    judges = list(dict.fromkeys(current.judges() + base.judges()))
    changed: list[ChangedRow] = []
    deltas: list[JudgeDelta] = []
    for j in judges:
        sc = current.summary["judges"].get(j) or {}
        sb = base.summary["judges"].get(j) or {}
        common = [k for k in cur if k[1] == j and k in old]
        n_changed = p2f = f2p = 0
        for k in common:
            a, b = cur[k], old[k]
            if verdict_of(a) == verdict_of(b):
                continue
            n_changed += 1
            p2f += bool(b.result.passed is True and a.result.passed is False)
            f2p += bool(b.result.passed is False and a.result.passed is True)
            changed.append(
                ChangedRow(
                    row_id=a.row_id,
                    row_index=a.row_index,
                    judge=j,
                    before=verdict_of(b),
                    after=verdict_of(a),
                    score_before=b.result.score,
                    score_after=a.result.score,
                    rationale_before=b.result.rationale or b.result.error,
                    rationale_after=a.result.rationale or a.result.error,
                    inputs_differ=a.inputs != b.inputs,
                )
            )
        deltas.append(
            JudgeDelta(
                judge=j,
                n_current=int(sc.get("n") or 0),
                n_base=int(sb.get("n") or 0),
                mean_current=sc.get("mean_score"),
                mean_base=sb.get("mean_score"),
                mean_delta=_sub(sc.get("mean_score"), sb.get("mean_score")),
                pass_current=sc.get("pass_rate"),
                pass_base=sb.get("pass_rate"),
                pass_delta=_sub(sc.get("pass_rate"), sb.get("pass_rate")),
                ci_current=_ci(sc),
                ci_base=_ci(sb),
                unscored_current=int(sc.get("n_unscored") or 0),
                unscored_base=int(sb.get("n_unscored") or 0),
                n_common=len(common),
                n_changed=n_changed,
                pass_to_fail=p2f,
                fail_to_pass=f2p,
            )
        )
    changed.sort(key=lambda c: (c.row_index, c.judge))
    return Comparison(
        base_path=base.path,
        base_run_id=base.run_id,
        deltas=deltas,
        n_changed=len(changed),
        changed=changed[:max_rows],
        only_current=sum(k not in old for k in cur),
        only_base=sum(k not in cur for k in old),
    )
