"""Two runs side by side: pass rate per judge, and the (row, judge) cells whose verdict changed.

Cells are matched by (row_id, judge), as `localjudge report --compare` does; the verdict is the result's
`passed` (or its value when the judge has no pass/fail)."""

from __future__ import annotations

import json
from typing import Any

from ..store import queries
from .runs import RunHandle


def _cells(run: RunHandle) -> dict[tuple[str, str], tuple[int, Any]]:
    with run.conn() as c:
        return {(r[0], r[1]): (r[2], r[4] if r[3] is None else bool(r[3])) for r in queries.cell_verdicts(c, run.run_id())}


def _pass_rates(run: RunHandle) -> dict[str, tuple[float | None, int]]:
    with run.conn() as c:
        return queries.pass_rates(c, run.run_id())


def compare(a: RunHandle, b: RunHandle, limit: int = 500) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(per-judge pass rates of base `a` and new `b`, up to `limit` changed cells, how many changed)."""
    ra, rb = _pass_rates(a), _pass_rates(b)
    deltas = [
        {
            "judge": j,
            "a": ra.get(j, (None, 0))[0],
            "b": rb.get(j, (None, 0))[0],
            "n_a": ra.get(j, (None, 0))[1],
            "n_b": rb.get(j, (None, 0))[1],
        }
        for j in dict.fromkeys([*ra, *rb])
    ]
    ca, cb = _cells(a), _cells(b)
    changed = []
    for k in sorted(set(ca) & set(cb), key=lambda k: (cb[k][0], k[1])):
        va, vb = ca[k][1], cb[k][1]
        if json.dumps(va) != json.dumps(vb):
            changed.append({"row_id": k[0], "judge": k[1], "row_index": cb[k][0], "a": va, "b": vb})
    return deltas, changed[:limit], len(changed)
