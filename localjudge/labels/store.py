"""Human labels kept in a run's own store: the `labels` table, its queries, export and import.

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
out and say how many in one line (`stale_line`). Labels written before migration 003 got the binding of the cell
they were on when the store was migrated (they cannot know what they were given on).

The same migration indexes results by (run_id, updated): the view's live progress (the last commit, the
results since the run started) reads it instead of scanning every result.

`labels export RUN_DIR -o labels.jsonl` writes the latest labels with the row's inputs (a file `agree`
and `align` read as it is); `labels import RUN_DIR labels.jsonl` appends them back, after checking every record
with `validate_label_fields`, the checks of the view's label API (labels_import.py).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..errors import InputError
from ..formats.facts import score_range
from ..store.format_spec import FormatSpec, legacy_format_spec

if TYPE_CHECKING:
    from ..store.results import ResultRow

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


# ------------------------------------------------------------------------------------- value domain


class Domain(BaseModel):
    """The values a human may give a judge's cells, with the key that gives each in the labelling view."""

    kind: Literal["categorical", "numeric", "pairwise"]
    values: list[Any]
    keys: list[str]


def value_domain(fmt: FormatSpec | str | None, kind: str, allowed: list[Any] | None, seen: Sequence[Any] = ()) -> Domain:
    """The label domain of a judge from its format (a typed spec; a `describe()` string from before it is read by
    the store's legacy reader), the kind and values agreement.judge_kind found, and values seen in its results
    (for a choice judge whose labels are not known). A numeric judge's range is its format's (1..5 when unknown)."""
    if kind == "pairwise":
        return Domain(kind="pairwise", values=[1, 2, "tie"], keys=["1", "2", "t"])
    if kind == "numeric":
        rng = score_range(legacy_format_spec(fmt) if isinstance(fmt, str) else fmt)
        lo, hi = (float(rng.lo), float(rng.hi)) if rng else (1.0, 5.0)
        decimals = rng.decimals if rng else 0
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


def judge_domain(rows: Sequence[ResultRow]) -> Domain | None:
    """The label domain of a judge from some of its stored results (the view reads the first 20), None when its
    results cannot be compared with labels (a statement list) or there are none."""
    from .agreement import judge_kind

    if not rows:
        return None
    try:
        kind, allowed = judge_kind(rows)
    except InputError:
        return None
    rec = rows[0].record_fields().get("format")
    fmt = legacy_format_spec(rec) if isinstance(rec, str) and rec.strip() else rows[0].result.format_spec
    return value_domain(fmt, kind, allowed, [r.result.value for r in rows])


# ----------------------------------------------------------------------------------- field checks

MAX_COMMENT_CHARS = 10_000
MAX_LABELLER_CHARS = 200
MAX_TIME_CHARS = 64
_MAX_ROW = 2**63 - 1


class LabelFields(BaseModel):
    """A label's fields after `validate_label_fields`: of the right types, bounded, in the judge's domain."""

    row_index: int
    value: Any = None
    comment: str | None = None
    labeller: str
    sample: SampleKind = "browse"
    labelled_at: str = ""
    probability: float | None = None


def _text(field: str, v: Any, limit: int) -> str:
    if not isinstance(v, str):
        raise InputError(f"field {field} must be text, got {type(v).__name__}")
    if len(v) > limit:
        raise InputError(f"field {field} has {len(v)} characters; at most {limit} are kept")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(f"field {field} holds a lone surrogate at character {e.start}, which is not valid Unicode") from None
    return v


def _in_domain(value: Any, domain: Domain | None, judge: str) -> Any:
    if value is None:  # withdraws the cell's label
        return None
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"field value={value!r} is not a finite number")
    if isinstance(value, str):
        _text("value", value, MAX_LABELLER_CHARS)
    if domain is None:
        if not isinstance(value, (str, int, float)):
            raise InputError(f"field value must be a single value for judge {judge!r}, got {type(value).__name__}")
        return value
    if domain.kind == "numeric":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"field value must be a number for judge {judge!r}")
        lo, hi = min(domain.values), max(domain.values)
        if not lo <= value <= hi:
            raise InputError(f"field value={value!r} is outside judge {judge!r}'s range {lo}..{hi}")
        return value
    if isinstance(value, (dict, list)) or not any(value == v and type(value) is type(v) for v in domain.values):
        shown = f"={value!r}" if isinstance(value, (str, int, float)) else f" (a {type(value).__name__})"
        raise InputError(f"field value{shown} is not a value of judge {judge!r}: {', '.join(map(str, domain.values))}")
    return value


def validate_label_fields(fields: Mapping[str, Any], domain: Domain | None, judge: str) -> LabelFields:
    """The checks every label passes before it is stored, by the view's label API and by `labels import` alike:
    `row_index` an integer (not a bool, a float or text), `value` None (a withdrawal) or one of the judge's values
    (a finite number in its range for a score judge), `comment` text of at most MAX_COMMENT_CHARS, `labeller`
    non-empty text of at most MAX_LABELLER_CHARS, `sample` one of SAMPLE_KINDS, `labelled_at` absent or an ISO
    8601 time; no text with a lone surrogate. InputError `field NAME ...` (one line) on the first bad field."""
    ri = fields.get("row_index")
    if not isinstance(ri, int) or isinstance(ri, bool):
        shown = repr(ri)[:40] if isinstance(ri, (str, int, float)) else f"a {type(ri).__name__}"
        raise InputError(f"field row_index must be an integer, got {shown}")
    if not 0 <= ri <= _MAX_ROW:
        raise InputError(f"field row_index={ri} is negative or too large (row numbers fit in 64 bits)"[:200])
    value = _in_domain(fields.get("value"), domain, judge)
    comment = fields.get("comment")
    if comment is not None:
        comment = _text("comment", comment, MAX_COMMENT_CHARS)
    labeller = fields.get("labeller")
    if labeller is not None and not isinstance(labeller, str):
        raise InputError(f"field labeller must be text, got {type(labeller).__name__}")
    if not isinstance(labeller, str) or not labeller.strip():
        raise InputError("field labeller is empty: type your name in the labeller box (key l)")
    labeller = _text("labeller", labeller, MAX_LABELLER_CHARS).strip()
    sample = fields.get("sample", "browse")
    if sample not in SAMPLE_KINDS:
        raise InputError(f"field sample must be one of {', '.join(SAMPLE_KINDS)}")
    prob = fields.get("probability")
    if prob is not None and (
        isinstance(prob, bool) or not isinstance(prob, (int, float)) or not math.isfinite(prob) or not 0 < prob <= 1
    ):
        raise InputError(
            f"field probability must be a number in (0, 1] (the row's sampling probability) or null, got {str(prob)[:40]!r}"
        )
    if prob is not None and sample != "active":
        raise InputError(f"field probability is for sample 'active' labels only, not {sample!r}; leave it out")
    if sample == "active" and prob is None:
        raise InputError("field probability is needed with sample 'active': the row's sampling probability from the active queue")
    when = fields.get("labelled_at")
    if when in (None, ""):
        when = ""
    else:
        when = _text("labelled_at", when, MAX_TIME_CHARS)
        try:
            datetime.fromisoformat(when)
        except ValueError:
            raise InputError(f"field labelled_at={when!r} is not an ISO 8601 time (like 2025-01-31T12:00:00+0000)") from None
    return LabelFields(
        row_index=ri,
        value=value,
        comment=comment,
        labeller=labeller,
        sample=sample,
        labelled_at=when,
        probability=None if prob is None else float(prob),
    )


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


def label_rows(run_dir: str | Path, judge: str | None = None, stale: bool = False) -> list[dict[str, Any]]:
    """The latest labels of a run directory as label rows: the row's inputs, then `id` (the row_id), `row_index`,
    `judge`, `label`, `comment`, `labeller`, `sample` and `labelled_at`, and for a conversation's row its
    `conversation_id` with its `turn_index` (per-turn) or `tool_call_index` (per tool call). `judge` keeps only that judge's labels.
    Stale labels (their cell changed since) are left out, unless `stale`: then every row carries `stale`."""
    from ..store.db import Store

    with Store(store_of(run_dir)) as st:
        run_id = st.latest_run()
        if run_id is None:
            return []
        labels = {k: lab for k, lab in latest_labels(st.conn, run_id, judge).items() if stale or not lab.stale}
        inputs: dict[int, dict[str, Any]] = {}
        where: dict[int, dict[str, Any]] = {}  # a conversation's row: its conversation id, turn / tool-call index
        rows = sorted({ri for ri, _ in labels})
        for i in range(0, len(rows), 500):
            chunk = rows[i : i + 500]
            q = (
                "SELECT row_index, inputs, conversation_id, turn_index, tool_call_index FROM results WHERE run_id = ? "
                f"AND row_index IN ({', '.join('?' * len(chunk))})"
            )
            for ri, text, cid, turn, call in st.conn.execute(q, [run_id, *chunk]):
                inputs.setdefault(ri, json.loads(text))
                if cid is not None:
                    pos = {"conversation_id": cid, "turn_index": turn, "tool_call_index": call}
                    where.setdefault(ri, {k: v for k, v in pos.items() if v is not None})
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
            "probability": lab.probability,
            **where.get(lab.row_index, {}),
            **({"stale": lab.stale} if stale else {}),
        }
        for lab in labels.values()
    ]


def count_stale(run_dir: str | Path, judge: str | None = None) -> int:
    """How many of a run directory's current labels (of `judge`, when given) are stale."""
    from ..store.db import Store

    if not is_run_dir(run_dir):
        return 0
    with Store(store_of(run_dir)) as st:
        run_id = st.latest_run()
        return 0 if run_id is None else sum(lab.stale for lab in latest_labels(st.conn, run_id, judge).values())


def stale_line(run_dir: str | Path, judge: str | None = None) -> str | None:
    """The one line that says how many labels of a run directory were left out as stale, or None when none were."""
    n = count_stale(run_dir, judge)
    if not n:
        return None
    of = f" of judge {judge!r}" if judge else ""
    return (
        f"{run_dir}: {n} label{'s' if n != 1 else ''}{of} left out as stale (the row, its inputs or the judge version "
        "changed since they were given); label those rows again in `localjudge view`"
    )


def export_labels(run_dir: str | Path, out: str | Path, judge: str | None = None) -> int:
    """Write the latest labels of a run directory to `out` (JSONL, written atomically: a symbolic link is written
    through), stale ones with `stale: true` (every row has the column); returns how many. A path that cannot be
    written, or that is not a regular file, is a one-line `StorageError` naming it (exit 5)."""
    from ..errors import StorageError
    from ..store.atomic import write_atomic

    rows = label_rows(run_dir, judge, stale=True)
    try:
        write_atomic(Path(out), "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows), mkdir=True)
    except OSError as e:
        raise StorageError(
            f"cannot write the labels to {str(out)!r} ({e.strerror or e}); choose a writable path with -o"
        ) from None
    return len(rows)


def labels_file_for(run_dir: str | Path, judge: str | None, dest: Path) -> Path:
    """Write a run directory's labels (of `judge`, when given) to `dest` as JSONL and return it: the file form
    `agree` and `align` read. InputError when the run has no labels."""
    rows = label_rows(run_dir, judge)
    if not rows:
        stale = count_stale(run_dir, judge)
        raise InputError(
            f"run directory {run_dir} has no {'current ' if stale else ''}labels{' for judge ' + repr(judge) if judge else ''}"
            f"{f' ({stale} stale: their rows changed since)' if stale else ''}; "
            "label rows with `localjudge view` or `localjudge labels import` first"
        )
    dest.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows), encoding="utf-8")
    return dest
