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
SQL statement: SQLite finds the judge's results by the view's (run, judge, row) index (indexes.py), reads each
one's JSON fields once and sorts in C; only the row indexes come back to Python.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from .panels import MEMBERS_SPLIT
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
        n = int(c.execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (run.run_id(),)).fetchone()[0])
    key = ("queue", judge, order, seed)
    hit = run._cache.get(key)
    # a run in progress grows: its order is recomputed at most every REFRESH_S seconds, not on every request
    if hit is not None and (hit[0] == n or time.monotonic() - hit[1] < REFRESH_S):
        return hit[2]
    rid = run.run_id()
    if order == "random":
        with run.conn() as c:
            rows = [
                r[0]
                for r in c.execute(
                    "SELECT row_index FROM results WHERE run_id = ? AND judge = ? ORDER BY row_index", (rid, judge)
                )
            ]
        random.Random(f"{seed}:{judge}").shuffle(rows)
    else:
        t = pass_threshold(judge)
        tops = run.judges()
        members = run.members().get(judge, [])
        first: list[str] = ["json_extract(result, '$.value') = 'tie'"]  # group 1 (see the module docstring)
        args: list[Any] = []
        if len(tops) > 1:  # the run's judges (not a panel's members) pass and fail the same row
            first.append(
                f"row_index IN (SELECT row_index FROM results WHERE run_id = ? AND judge IN ({', '.join('?' * len(tops))}) "
                "AND passed IS NOT NULL GROUP BY row_index HAVING MIN(passed) != MAX(passed))"
            )
            args += [rid, *tops]
        if len(members) > 1:
            first.append(f"row_index IN ({MEMBERS_SPLIT.format(', '.join('?' * len(members)))})")
            args += [rid, *members]
        es, sc = "json_extract(result, '$.expected_score')", "json_extract(result, '$.score')"
        # sorted by SQLite (a 100k-row order in C, not Python tuples); only the row indexes come back
        sql = (
            "SELECT row_index FROM results WHERE run_id = ? AND judge = ? ORDER BY "
            "CASE WHEN scored = 0 THEN (CASE WHEN json_extract(result, '$.unscored_reason') = 'panel_tie' THEN 0 ELSE 3 END) "
            f"WHEN {' OR '.join(first)} THEN 0 WHEN {es} IS NOT NULL THEN 1 ELSE 2 END, "
            f"CASE WHEN scored = 0 THEN 0.0 ELSE abs(coalesce({es}, {sc}, ? + 1.0) - ?) END, row_index"
        )
        with run.conn() as c:
            rows = [r[0] for r in c.execute(sql, [rid, judge, *args, t, t])]
    run._cache[key] = (n, time.monotonic(), tuple(rows))
    return rows
