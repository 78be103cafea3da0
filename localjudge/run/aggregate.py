"""Summaries of judge results: pure functions over `JudgeResult`s.

Per judge: n (all results), n_scored / n_unscored, the mean normalised score over scored results
that carry a score, the pass rate over scored results that carry a pass/fail with a 95 % Wilson
interval, the distribution of values, and the unscored count by reason. An unscored result is
never counted as a "no": it is left out of the mean and of the pass rate, and shows in
`unscored_reasons`.

Distribution keys are strings (JSON object keys): a scalar value as text (`"yes"`, `"4"`, `"A"`);
a structured value (a dict of criteria, a list of verdicts) by its normalised score rounded to two
decimals (`"score=0.73"`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from ..statistics import wilson_interval
from ..store.results import JudgeResult


class JudgeSummary(BaseModel):
    """One judge's summary: counts, mean normalised score, pass rate with its 95 % Wilson interval, the
    distribution of values and the unscored count by reason (None where nothing counts)."""

    n: int = 0
    n_scored: int = 0
    n_unscored: int = 0
    mean_score: float | None = None
    pass_rate: float | None = None
    pass_rate_ci: list[float] | None = None
    distribution: dict[str, int] = Field(default_factory=dict)
    unscored_reasons: dict[str, int] = Field(default_factory=dict)


def value_key(result: JudgeResult) -> str:
    """The distribution bucket of a scored result."""
    v = result.value
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (str, int, float)):
        return str(v)
    if result.score is not None:
        return f"score={result.score:.2f}"
    return json.dumps(v, sort_keys=True, default=str) if v is not None else "none"


class Tally:
    """Running counts for one judge; `add` one result at a time, `summary()` at any point."""

    def __init__(self) -> None:
        self.n = self.n_scored = self.n_scores = self.n_pass_known = self.n_passed = 0
        self.score_sum = 0.0
        self.distribution: dict[str, int] = {}
        self.unscored_reasons: dict[str, int] = {}

    def add(self, r: JudgeResult) -> None:
        """Count one result: an unscored one only by its reason; a scored one into the mean (when it has a score),
        the pass rate (when it has a pass/fail) and the distribution."""
        self.n += 1
        if not r.scored:
            reason = r.unscored_reason or "unknown"
            self.unscored_reasons[reason] = self.unscored_reasons.get(reason, 0) + 1
            return
        self.n_scored += 1
        if r.score is not None:
            self.n_scores += 1
            self.score_sum += r.score
        if r.passed is not None:
            self.n_pass_known += 1
            self.n_passed += int(r.passed)
        key = value_key(r)
        self.distribution[key] = self.distribution.get(key, 0) + 1

    @property
    def pass_rate(self) -> float | None:
        """Passed over results with a pass/fail, or None when no result has one."""
        return self.n_passed / self.n_pass_known if self.n_pass_known else None

    def summary(self) -> JudgeSummary:
        """The counts so far as a `JudgeSummary` (distribution and unscored reasons sorted by key)."""
        ci = wilson_interval(self.n_passed, self.n_pass_known)
        return JudgeSummary(
            n=self.n,
            n_scored=self.n_scored,
            n_unscored=self.n - self.n_scored,
            mean_score=self.score_sum / self.n_scores if self.n_scores else None,
            pass_rate=self.pass_rate,
            pass_rate_ci=list(ci) if ci else None,
            distribution=dict(sorted(self.distribution.items())),
            unscored_reasons=dict(sorted(self.unscored_reasons.items())),
        )


def summarise(results: Iterable[JudgeResult], judges: Iterable[str] | None = None) -> dict[str, JudgeSummary]:
    """Summary per judge name (in first-seen order; `judges` fixes the order and lists judges with no result)."""
    tallies: dict[str, Tally] = {j: Tally() for j in judges or ()}
    for r in results:
        tallies.setdefault(r.judge, Tally()).add(r)
    return {j: t.summary() for j, t in tallies.items()}


def format_table(summaries: dict[str, JudgeSummary], controls: Mapping[str, str] | None = None) -> str:
    """A plain-text table of per-judge summaries (for terminals). `controls` (judge → its negative controls' verdict
    in a few words) adds a last `controls` column, "-" for a judge it lacks; without it the table is as before."""
    head: tuple[str, ...] = ("judge", "n", "scored", "mean", "pass rate [95% CI]", "unscored (reasons)")
    if controls is not None:
        head += ("controls",)
    rows = [head]
    for name, s in summaries.items():
        mean = "-" if s.mean_score is None else f"{s.mean_score:.3f}"
        if s.pass_rate is None or s.pass_rate_ci is None:
            pr = "-"
        else:
            pr = f"{s.pass_rate:.1%} [{s.pass_rate_ci[0]:.1%}, {s.pass_rate_ci[1]:.1%}]"
        reasons = ", ".join(f"{k}: {v}" for k, v in s.unscored_reasons.items())
        uns = str(s.n_unscored) + (f" ({reasons})" if reasons else "")
        row: tuple[str, ...] = (name, str(s.n), str(s.n_scored), mean, pr, uns)
        rows.append(row if controls is None else (*row, controls.get(name, "-")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def to_jsonable(summaries: dict[str, JudgeSummary]) -> dict[str, Any]:
    """The summaries as plain dicts, judge name → `JudgeSummary.model_dump()`."""
    return {k: v.model_dump() for k, v in summaries.items()}
