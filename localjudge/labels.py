"""Human labels kept in a run's own store: the `labels` table, its queries, export and import.

A label is one human verdict on one (row, judge) cell of a run, in the judge's own value domain (yes/no,
a score such as 1-5, 1/2/tie for a pairwise judge, one of a choice judge's labels). The table is
append-only: an edit or an undo is a new row, the latest row of a cell wins, and a row whose value is
NULL withdraws the cell's label. So every label keeps its history, labeller and time.

Each label also records how its row was picked (`sample`):
    random     from the seeded random queue: an unbiased sample of the run
    uncertain  from the uncertainty-first queue: biased toward hard rows
    browse     labelled while browsing rows (or imported without a sample kind)
Pass-rate estimates use `random` labels only; agreement is reported on all labels and on the random
ones alone (localjudge/view/stats.py), so the bias of the uncertainty queue is never hidden.

The same migration indexes results by (run_id, updated): the view's live progress (the last commit, the
results since the run started) reads it instead of scanning every result.

`labels export RUN_DIR -o labels.jsonl` writes the latest labels with the row's inputs (a file `agree`
and `align` read as it is); `labels import RUN_DIR labels.jsonl` appends them back.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .errors import InputError

SampleKind = Literal["random", "uncertain", "browse"]
SAMPLE_KINDS: tuple[str, ...] = ("random", "uncertain", "browse")


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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


_COLS = "id, run_id, row_index, judge, row_id, value, comment, labeller, sample, created"


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
    )


def add_label(conn: sqlite3.Connection, label: Label) -> Label:
    """Append one label row (an edit or an undo is just a later row); returns it with its id and time."""
    if label.sample not in SAMPLE_KINDS:
        raise InputError(f"sample {label.sample!r} is not one of {', '.join(SAMPLE_KINDS)}")
    if not label.labeller.strip():
        raise InputError("labeller is empty; give the name of whoever labels")
    created = label.created or _now()
    cur = conn.execute(
        f"INSERT INTO labels ({_COLS.split(', ', 1)[1]}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            label.run_id,
            label.row_index,
            label.judge,
            label.row_id,
            None if label.value is None else json.dumps(label.value),
            label.comment,
            label.labeller.strip(),
            label.sample,
            created,
        ),
    )
    return label.model_copy(update={"id": int(cur.lastrowid or 0), "created": created})


def latest_labels(
    conn: sqlite3.Connection, run_id: str, judge: str | None = None, cells: Iterable[tuple[int, str]] | None = None
) -> dict[tuple[int, str], Label]:
    """The current label of each labelled cell, keyed (row_index, judge); withdrawn ones are left out."""
    sql = f"SELECT {_COLS} FROM labels WHERE id IN (SELECT MAX(id) FROM labels WHERE run_id = ?"
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
    sql += " GROUP BY row_index, judge) AND value IS NOT NULL ORDER BY row_index, judge"
    return {(lab.row_index, lab.judge): lab for lab in map(_label, conn.execute(sql, args))}


def label_history(conn: sqlite3.Connection, run_id: str, row_index: int) -> list[Label]:
    """Every label row of a data row (all judges), oldest first."""
    cur = conn.execute(f"SELECT {_COLS} FROM labels WHERE run_id = ? AND row_index = ? ORDER BY id", (run_id, row_index))
    return [_label(r) for r in cur]


# ------------------------------------------------------------------------------------- value domain


class Domain(BaseModel):
    """The values a human may give a judge's cells, with the key that gives each in the labelling view."""

    kind: Literal["categorical", "numeric", "pairwise"]
    values: list[Any]
    keys: list[str]


_RANGE = re.compile(r"min=(-?[\d.]+).*?max=(-?[\d.]+)(?:.*?decimals=(\d+))?")


def value_domain(fmt: str, kind: str, allowed: list[Any] | None, seen: Sequence[Any] = ()) -> Domain:
    """The label domain of a judge from its format string (`score_json(min=1, max=5, ...)`), the kind and values
    agreement.judge_kind found, and values seen in its results (for a choice judge whose labels are not known)."""
    if kind == "pairwise":
        return Domain(kind="pairwise", values=[1, 2, "tie"], keys=["1", "2", "t"])
    if kind == "numeric":
        m = _RANGE.search(fmt)
        lo, hi = (float(m.group(1)), float(m.group(2))) if m else (1.0, 5.0)
        decimals = int(m.group(3) or 0) if m else 0
        if decimals == 0 and lo.is_integer() and hi.is_integer() and 0 < hi - lo + 1 <= 10:
            ints = list(range(int(lo), int(hi) + 1))
            keys = [str(v) for v in ints] if 0 <= lo and hi <= 9 else list("1234567890"[: len(ints)])
            return Domain(kind="numeric", values=ints, keys=keys)
        # a continuous range: five evenly spaced points keyed 1-5
        vals = [round(lo + (hi - lo) * i / 4, 3) for i in range(5)]
        return Domain(kind="numeric", values=vals, keys=["1", "2", "3", "4", "5"])
    values = list(allowed) if allowed else sorted({str(v) for v in seen if v is not None})[:9]
    if values == ["yes", "no"]:
        return Domain(kind="categorical", values=values, keys=["y", "n"])
    return Domain(kind="categorical", values=values, keys=[str(i + 1) for i in range(len(values))])


# ----------------------------------------------------------------------------------- run directories


def store_of(run_dir: str | Path) -> Path:
    """The store of a run directory (`results.sqlite`); InputError when it has none."""
    p = Path(run_dir)
    if not (p / "results.sqlite").is_file():
        raise InputError(f"{p} has no results.sqlite: pass the --out directory of `localjudge run`")
    return p / "results.sqlite"


def is_run_dir(path: str | Path) -> bool:
    """Whether `path` is a directory with a run store (so `--labels` reads the labels in it)."""
    return Path(path).is_dir() and (Path(path) / "results.sqlite").is_file()


def label_rows(run_dir: str | Path, judge: str | None = None) -> list[dict[str, Any]]:
    """The latest labels of a run directory as label rows: the row's inputs, then `id` (the row_id), `row_index`,
    `judge`, `label`, `comment`, `labeller`, `sample` and `labelled_at`. `judge` keeps only that judge's labels."""
    from .store import Store

    with Store(store_of(run_dir)) as st:
        run_id = st.latest_run()
        if run_id is None:
            return []
        labels = latest_labels(st.conn, run_id, judge)
        inputs: dict[int, dict[str, Any]] = {}
        rows = sorted({ri for ri, _ in labels})
        for i in range(0, len(rows), 500):
            chunk = rows[i : i + 500]
            q = f"SELECT row_index, inputs FROM results WHERE run_id = ? AND row_index IN ({', '.join('?' * len(chunk))})"
            for ri, text in st.conn.execute(q, [run_id, *chunk]):
                inputs.setdefault(ri, json.loads(text))
    return [
        {
            **inputs.get(lab.row_index, {}),
            "id": lab.row_id,
            "row_index": lab.row_index,
            "judge": lab.judge,
            "label": lab.value,
            "comment": lab.comment,
            "labeller": lab.labeller,
            "sample": lab.sample,
            "labelled_at": lab.created,
        }
        for lab in labels.values()
    ]


def export_labels(run_dir: str | Path, out: str | Path, judge: str | None = None) -> int:
    """Write the latest labels of a run directory to `out` (JSONL, written atomically: a symbolic link is written
    through); returns how many. A path that cannot be written, or that is not a regular file, is a one-line
    `StorageError` naming it (exit 5)."""
    from .atomic import write_atomic
    from .errors import StorageError

    rows = label_rows(run_dir, judge)
    try:
        write_atomic(Path(out), "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows), mkdir=True)
    except OSError as e:
        raise StorageError(
            f"cannot write the labels to {str(out)!r} ({e.strerror or e}); choose a writable path with -o"
        ) from None
    return len(rows)


def import_labels(run_dir: str | Path, path: str | Path, labeller: str | None = None) -> int:
    """Append the labels of a JSONL/JSON/CSV/Parquet file (rows with `row_index` or `id`, `judge` and `label`) to
    a run directory's store in one transaction; returns how many. A bad row names its line and changes nothing."""
    from .agreement import read_labels
    from .store import Store

    rows = read_labels(path)
    with Store(store_of(run_dir)) as st:
        run_id = st.latest_run()
        if run_id is None:
            raise InputError(f"{run_dir} has no run yet; run the evaluation first")
        cells = {
            (ri, j): rid
            for ri, j, rid in st.conn.execute("SELECT row_index, judge, row_id FROM results WHERE run_id = ?", (run_id,))
        }
        judges = sorted({j for _, j in cells})
        by_id: dict[tuple[str, str], int] = {(rid, j): ri for (ri, j), rid in cells.items()}
        todo: list[Label] = []
        for n, r in enumerate(rows, 1):
            judge = str(r.get("judge") or (judges[0] if len(judges) == 1 else ""))
            if judge not in judges:
                raise InputError(f"{path}: row {n}: judge {judge!r} is not in the run (it has {', '.join(judges)}); set `judge`")
            if r.get("row_index") not in (None, ""):
                ri = int(r["row_index"])
            elif (str(r.get("id")), judge) in by_id:
                ri = by_id[(str(r.get("id")), judge)]
            else:
                raise InputError(f"{path}: row {n}: no `row_index`, and id {r.get('id')!r} is not a row of the run")
            if (ri, judge) not in cells:
                raise InputError(f"{path}: row {n}: row_index {ri} has no result for judge {judge!r} in the run")
            if "label" not in r:
                raise InputError(f"{path}: row {n}: no `label` column")
            sample = r.get("sample") or "browse"
            who = labeller or r.get("labeller") or "import"
            todo.append(
                Label(
                    run_id=run_id,
                    row_index=ri,
                    judge=judge,
                    row_id=cells[(ri, judge)],
                    value=r["label"],
                    comment=r.get("comment"),
                    labeller=str(who),
                    sample=sample if sample in SAMPLE_KINDS else "browse",
                    created=str(r.get("labelled_at") or ""),
                )
            )
        with st._transaction():
            for lab in todo:
                add_label(st.conn, lab)
    return len(todo)


def labels_file_for(run_dir: str | Path, judge: str | None, dest: Path) -> Path:
    """Write a run directory's labels (of `judge`, when given) to `dest` as JSONL and return it: the file form
    `agree` and `align` read. InputError when the run has no labels."""
    rows = label_rows(run_dir, judge)
    if not rows:
        raise InputError(
            f"run directory {run_dir} has no labels{' for judge ' + repr(judge) if judge else ''}; "
            "label rows with `localjudge view` or `localjudge labels import` first"
        )
    dest.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows), encoding="utf-8")
    return dest
