"""One run holds one dataset's results: a run that already has results refuses data whose first rows are not
the rows it judged.

`localjudge run other.jsonl --out runs/x` reuses the run of runs/x (that is how a run resumes). Without this
check the new rows would replace the stored cells row number by row number, leave the old rows past them in
place, and every label given to an old row would sit on a new one. So before anything is written, the first
`SAMPLE_ROWS` rows of the data are compared with the cells stored under the same row numbers and judges: a row
matches when its row id and its inputs (the judge's variables as stored) are the same. When the run has cells
for those rows and not one of them matches, the run is refused in one line (exit 2) asking for a new `--out`.
When some match, it is the same data, resumed or edited: a changed row is judged again and a label on it
becomes stale (labels.py), never silently moved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..datasets import Dataset, extract
from ..errors import InputError
from ..store.db import Store
from .plan import JudgePlan, chunks

SAMPLE_ROWS = 64


def _canon(values: Any) -> str:
    return json.dumps(values, sort_keys=True, ensure_ascii=False, default=str)


def check_same_data(store: Store, run_id: str, ds: Dataset, plans: list[JudgePlan], n_rows: int, where: Path) -> None:
    """InputError when run `run_id` has results for the first rows of `ds` and none of them is the same row
    (row id and inputs) for the same judge; nothing when the run has none or some match."""
    n = min(n_rows, SAMPLE_ROWS)
    stored = store.stored_inputs(run_id, n)
    if not stored:
        return
    first: tuple[int, str, str] | None = None
    for chunk in chunks(ds, n, n):
        for row in chunk:
            for plan in plans:
                got = stored.get((row.index, plan.name))
                if got is None:
                    continue
                values, _ = extract(row, plan.columns, plan.required, plan.allow_empty)
                if got[0] == row.row_id and got[1] is not None and _canon(got[1]) == _canon(values):
                    return  # the same data (resumed, or with some rows edited)
                first = first or (row.index, got[0], row.row_id)
    if first is None:
        return
    ri, old, new = first
    raise InputError(
        f"{where} holds the results of other data (its row {ri} is id {old[:80]!r} with other inputs, here id "
        f"{new[:80]!r}; none of the first {n} rows match): give a new --out directory for {ds.label}, or move {where} away"
    )
