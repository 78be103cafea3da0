"""The `labels` table of a run's store: one human verdict per row, its binding to what it judged, its queries.

A label is one human verdict on one (row, judge) cell of a run, in the judge's own value domain (yes/no,
a score such as 1-5, 1/2/tie for a pairwise judge, one of a choice judge's labels). The table is
append-only: an edit or an undo is a new row, the latest row of a cell wins, and a row whose value is
NULL withdraws the cell's label. So every label keeps its history, labeller and time.

Each label also records how its row was picked (`sample`):
    random     from the seeded random queue: an unbiased sample of the run
    uncertain  from the uncertainty-first queue: biased toward hard rows
    active     from the active queue (localjudge/view/active.py): rows drawn with a known probability, larger where
               the judge is unsure; the label stores that `probability` (migration 006), and the estimates weight the
               label by 1 / probability (Horvitz–Thompson, trust/active.py) so they stay unbiased
    browse     labelled while browsing rows (or imported without a sample kind)
Pass-rate estimates use `random` labels only; agreement is reported on all labels and on the random
ones alone (localjudge/view/stats.py), so the bias of the uncertainty queue is never hidden.

A label is bound to what it judged, not to a row number: `add_label` stores with it the cell's `prompt_hash` (the
hash of every prompt the judge sends for that row's inputs, from the cell's reproducibility record: the content
hash the cache key is made of) and the judge version. A label whose cell now holds another row (another row_id),
other inputs (another prompt_hash) or another judge version is *stale*: `latest_labels` marks it, the view shows it
as stale, `labels export` writes it with `stale: true`, and `agree`, `align` and the corrected pass rates leave it
out and say how many in one line (`labels.store.stale_line`). Labels written before migration 003 got the binding of
the cell they were on when the store was migrated (they cannot know what they were given on).

The same migration indexes results by (run_id, updated): the view's live progress (the last commit, the
results since the run started) reads it instead of scanning every result.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ..errors import InputError

SampleKind = Literal["random", "uncertain", "browse", "active"]
SAMPLE_KINDS: tuple[str, ...] = ("random", "uncertain", "browse", "active")


class Label(BaseModel):
    """One label row as stored: `value` None means the cell's label was withdrawn (an undo)."""

    id: int = 0
    run_id: str
    row_index: int
    judge: str
    row_id: str
    value: Any = None
    comment: str | None = None
    labeller: str
    sample: SampleKind
    created: str = ""
    prompt_hash: str | None = None  # what the label judged (set by add_label from the cell); None: the cell had no prompt
    judge_version: str | None = None
    probability: float | None = None  # of the row being picked (`active` labels); None: uniform or not a sample
    stale: bool = False  # the cell has changed since (another row, other inputs, another judge version): not used


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


_COLS = "id, run_id, row_index, judge, row_id, value, comment, labeller, sample, created, prompt_hash, judge_version, probability"
# the binding of a results row: its row id, the prompt hash of its record, its judge version (NULL when the JSON is foreign)
_CELL_BINDING = (
    "r.row_id, CASE WHEN json_valid(r.record) THEN json_extract(r.record, '$.prompt_hash') END, "
    "CASE WHEN json_valid(r.result) THEN json_extract(r.result, '$.judge_version') END"
)
# whether label l no longer fits its cell r (a LEFT JOIN: no cell any more is stale too)
_STALE = (
    "(r.row_id IS NULL OR r.row_id IS NOT l.row_id "
    "OR l.prompt_hash IS NOT (CASE WHEN json_valid(r.record) THEN json_extract(r.record, '$.prompt_hash') END) "
    "OR l.judge_version IS NOT (CASE WHEN json_valid(r.result) THEN json_extract(r.result, '$.judge_version') END))"
)


def _label(r: Sequence[Any]) -> Label:
    return Label(
        id=r[0],
        run_id=r[1],
        row_index=r[2],
        judge=r[3],
        row_id=r[4],
        value=None if r[5] is None else json.loads(r[5]),
        comment=r[6],
        labeller=r[7],
        sample=r[8],
        created=r[9],
        prompt_hash=r[10],
        judge_version=r[11],
        probability=r[12],
        stale=bool(r[13]) if len(r) > 13 else False,
    )


def add_label(conn: sqlite3.Connection, label: Label) -> Label:
    """Append one label row (an edit or an undo is just a later row), bound to what its cell holds now (row id,
    prompt hash, judge version, whatever `label` says of them); returns it with its id and time. InputError when
    the cell has no result."""
    if label.sample not in SAMPLE_KINDS:
        raise InputError(f"sample {label.sample!r} is not one of {', '.join(SAMPLE_KINDS)}")
    if not label.labeller.strip():
        raise InputError("labeller is empty; give the name of whoever labels")
    cell = conn.execute(
        f"SELECT {_CELL_BINDING} FROM results r WHERE r.run_id = ? AND r.row_index = ? AND r.judge = ?",
        (label.run_id, label.row_index, label.judge),
    ).fetchone()
    if cell is None:
        raise InputError(f"row {label.row_index} has no result for judge {label.judge!r}; label a cell the run has judged")
    row_id, prompt_hash, version = cell[0], cell[1], None if cell[2] is None else str(cell[2])
    created = label.created or _now()
    cur = conn.execute(
        f"INSERT INTO labels ({_COLS.split(', ', 1)[1]}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            label.run_id,
            label.row_index,
            label.judge,
            row_id,
            None if label.value is None else json.dumps(label.value),
            label.comment,
            label.labeller.strip(),
            label.sample,
            created,
            prompt_hash,
            version,
            label.probability,
        ),
    )
    update = {"id": int(cur.lastrowid or 0), "created": created, "row_id": row_id, "prompt_hash": prompt_hash}
    return label.model_copy(update={**update, "judge_version": version, "stale": False})


def latest_labels(
    conn: sqlite3.Connection, run_id: str, judge: str | None = None, cells: Iterable[tuple[int, str]] | None = None
) -> dict[tuple[int, str], Label]:
    """The current label of each labelled cell, keyed (row_index, judge), each with `stale` set when its cell no
    longer holds what it judged; withdrawn ones are left out."""
    cols = ", ".join("l." + c for c in _COLS.split(", "))
    sql = (
        f"SELECT {cols}, {_STALE} FROM labels l LEFT JOIN results r ON r.run_id = l.run_id AND r.row_index = l.row_index "
        "AND r.judge = l.judge WHERE l.id IN (SELECT MAX(id) FROM labels WHERE run_id = ?"
    )
    args: list[Any] = [run_id]
    if judge is not None:
        sql += " AND judge = ?"
        args.append(judge)
    if cells is not None:
        cl = list(cells)
        if not cl:
            return {}
        sql += " AND (" + " OR ".join("(row_index = ? AND judge = ?)" for _ in cl) + ")"
        for ri, j in cl:
            args += [ri, j]
    sql += " GROUP BY row_index, judge) AND l.value IS NOT NULL ORDER BY l.row_index, l.judge"
    return {(lab.row_index, lab.judge): lab for lab in map(_label, conn.execute(sql, args))}


def label_history(conn: sqlite3.Connection, run_id: str, row_index: int) -> list[Label]:
    """Every label row of a data row (all judges), oldest first, each `stale` when the cell holds other content now."""
    cols = ", ".join("l." + c for c in _COLS.split(", "))
    cur = conn.execute(
        f"SELECT {cols}, {_STALE} FROM labels l LEFT JOIN results r ON r.run_id = l.run_id AND r.row_index = l.row_index "
        "AND r.judge = l.judge WHERE l.run_id = ? AND l.row_index = ? ORDER BY l.id",
        (run_id, row_index),
    )
    return [_label(r) for r in cur]
