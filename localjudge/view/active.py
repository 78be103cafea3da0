"""The `active` labelling queue (Zrnic & Candès, active statistical inference; the maths is localjudge/trust/active.py).

Every scored row of the judge gets a probability pi of being labelled: proportional to the judge's uncertainty on it
(sqrt(p (1 - p)) of its prediction p, the expected score with `--probs`, else the 0/1 verdict, as the estimates use:
trust/judge_trust.py `predictions`), with a floor so every row keeps some chance, scaled so the expected number of
labels is `budget` (default: a quarter of the rows, at least 2). Each row is then drawn by its own seeded coin; the
queue is the drawn rows, most uncertain first. A label given from it stores its row's pi (`labels.probability`),
and `agree` and the view weight it by 1 / pi (Horvitz–Thompson), so the estimate stays unbiased: labels of every
drawn row make the unbiased sample; a person who stops before the end of the queue has labelled the most uncertain
rows of it only, and the trust panel says how many drawn rows are still unlabelled.

Unscored rows (no prediction) are not in the queue: the estimate is over the scored rows, as PPI++'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from ..store import queries
from ..trust.active import binary_uncertainty, draw, sampling_probabilities
from ..trust.judge_trust import predictions
from .runs import RunHandle

MAX_BUDGET = 10_000_000  # a bound on the client's `budget` before numpy sees it


@dataclass(frozen=True)
class ActivePlan:
    """The drawn rows in queue order and every scored row's sampling probability, keyed by row_index."""

    rows: tuple[int, ...]
    probability: dict[int, float]


def default_budget(n_rows: int) -> int:
    """A quarter of the rows, at least 2 (or every row of a smaller run)."""
    return min(n_rows, max(2, math.ceil(n_rows / 4)))


def active_plan(run: RunHandle, judge: str, seed: int = 0, budget: int | None = None) -> ActivePlan:
    """The active queue of `judge` (cached while the run's result count is unchanged). InputError for a judge without
    a pass/fail verdict or a budget outside 1..rows."""
    if not 0 <= seed < 2**63:  # numpy's generator takes a non-negative seed
        raise InputError(f"parameter seed={seed} must be a non-negative integer below 2**63")
    with run.conn() as c:
        n = queries.result_count(c, run.run_id())
    key = ("active", judge, seed, budget)
    hit = run._cache.get(key)
    if hit is not None and hit[0] == n:
        return hit[2]
    with run.conn() as c:
        every = queries.judge_rows(c, run.run_id(), judge)
    got = predictions(run.results_of_cells(judge, sorted(every)))
    if got is None:
        raise InputError(f"parameter order=active needs a pass/fail judge; {judge!r} gives no pass/fail verdict yet")
    preds = got[0]
    order = sorted(preds)
    want = default_budget(len(order)) if budget is None else budget
    if not 1 <= want <= min(len(order), MAX_BUDGET):
        raise InputError(f"parameter budget={budget} must be between 1 and the judge's {len(order)} scored rows")
    u = binary_uncertainty([preds[r] for r in order])
    pi = sampling_probabilities(u, float(want))
    drawn = draw(pi, seed)
    ranked = sorted(drawn, key=lambda i: (-u[i], order[i]))
    plan = ActivePlan(rows=tuple(order[i] for i in ranked), probability={r: p for r, p in zip(order, pi, strict=True)})
    run._cache[key] = (n, 0.0, plan)
    return plan
