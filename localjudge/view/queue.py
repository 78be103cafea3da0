"""Labelling queues: the order in which the labelling view offers one judge's rows.

    uncertain  rows the judge is least sure of first:
                 1. a pairwise judge's both-orders tie, a panel's tie (`panel_tie`), a row where the run's
                    judges disagree (one passes it, another fails it), or a row where the members of the
                    judge's panel (or a cascade's two models) gave different verdicts;
                    within this group, by 2.'s distance;
                 2. then by |expected score - pass threshold| (the judge's own threshold, 0.5 when unknown);
                    rows without an expected score follow, by |score - threshold|;
                 unscored rows come last.
    random     a seeded shuffle of the rows: labels from it are an unbiased sample of the run.
    active     rows drawn each with its own probability, larger where the judge is unsure (active.py), most
               uncertain first; each label stores its row's probability so the estimates stay unbiased.

The order is computed once per (judge, order, seed) and cached (recomputed when the run gained results, at
most every REFRESH_S seconds), so paging through a 100k-row queue reads one item at a time. Computing it is one
SQL statement: SQLite finds the judge's results by the view's (run, judge, row) index (store/indexes.py), reads each
one's JSON fields once and sorts in C; only the row indexes come back to Python.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from ..store import queries
from .runs import RunHandle

ORDERS = ("uncertain", "random", "active")
REFRESH_S = 20.0


def pass_threshold(judge: str) -> float:
    """The judge's pass threshold when it is in the catalog, else 0.5."""
    try:
        from ..judges import get_judge

        return float(get_judge(judge).pass_threshold)
    except Exception:  # a user judge file not on this machine: the default threshold
        return 0.5


def queue(run: RunHandle, judge: str, order: str, seed: int = 0, *, budget: int | None = None) -> Sequence[int]:
    """Row indexes of `judge`'s results in queue order (cached while the run's result count is unchanged);
    `budget` is the active queue's expected number of labels (active.py)."""
    if order == "active":
        from .active import active_plan

        return active_plan(run, judge, seed, budget).rows
    with run.conn() as c:
        n = queries.result_count(c, run.run_id())
    key = ("queue", judge, order, seed)
    hit = run._cache.get(key)
    # a run in progress grows: its order is recomputed at most every REFRESH_S seconds, not on every request
    if hit is not None and (hit[0] == n or time.monotonic() - hit[1] < REFRESH_S):
        return hit[2]
    rid = run.run_id()
    if order == "random":
        with run.conn() as c:
            rows = queries.judge_rows(c, rid, judge, ordered=True)
        random.Random(f"{seed}:{judge}").shuffle(rows)
    else:
        t = pass_threshold(judge)
        with run.conn() as c:  # sorted by SQLite (a 100k-row order in C, not Python tuples)
            rows = queries.uncertain_order(c, rid, judge, run.judges(), run.members().get(judge, []), t)
    run._cache[key] = (n, time.monotonic(), tuple(rows))
    return rows
