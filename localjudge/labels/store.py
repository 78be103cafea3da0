"""Human labels of a run directory: its store, its current labels as rows, export and import, stale counts.

The labels themselves live in the store's `labels` table (store/labels.py: `Label`, `add_label`, `latest_labels`); what a
label may say and the checks it passes are domain.py's. Both are re-exported here, where they were defined before.

`labels export RUN_DIR -o labels.jsonl` writes the latest labels with the row's inputs (a file `agree`
and `align` read as it is); `labels import RUN_DIR labels.jsonl` appends them back, after checking every record
with `validate_label_fields`, the checks of the view's label API (labels_import.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..store.labels import SAMPLE_KINDS, Label, SampleKind, add_label, label_history, latest_labels
from .domain import (
    MAX_COMMENT_CHARS,
    MAX_LABELLER_CHARS,
    MAX_TIME_CHARS,
    Domain,
    LabelFields,
    judge_domain,
    validate_label_fields,
    value_domain,
)

__all__ = [  # the table's and the domain's names stay importable from here, where they were defined before
    "MAX_COMMENT_CHARS",
    "MAX_LABELLER_CHARS",
    "MAX_TIME_CHARS",
    "SAMPLE_KINDS",
    "Domain",
    "Label",
    "LabelFields",
    "SampleKind",
    "add_label",
    "count_stale",
    "export_labels",
    "is_run_dir",
    "judge_domain",
    "label_history",
    "label_rows",
    "labels_file_for",
    "latest_labels",
    "stale_line",
    "store_of",
    "validate_label_fields",
    "value_domain",
]


def store_of(run_dir: str | Path) -> Path:
    """The store of a run directory (`results.sqlite`); InputError when it has none."""
    p = Path(run_dir)
    if not (p / "results.sqlite").is_file():
        raise InputError(f"{p} has no results.sqlite: pass the --out directory of `localjudge run`")
    return p / "results.sqlite"


def is_run_dir(path: str | Path) -> bool:
    """Whether `path` is a directory with a run store (so `--labels` reads the labels in it)."""
    return Path(path).is_dir() and (Path(path) / "results.sqlite").is_file()


def label_rows(
    run_dir: str | Path, judge: str | None = None, stale: bool = False, sessions: bool = False
) -> list[dict[str, Any]]:
    """The latest labels of a run directory as label rows: the row's inputs, then `id` (the row_id), `row_index`,
    `judge`, `label`, `comment`, `labeller`, `sample` and `labelled_at`, and for a conversation's row its
    `conversation_id` with its `turn_index` (per-turn) or `tool_call_index` (per tool call). `judge` keeps only that judge's labels.
    With `sessions`, the session labels given inside a per-turn run come first (store/session_labels.py: `id` the conversation
    id, `granularity` "session", `turn_index` null): for export and `agree`, not for a per-row estimate or align.
    Stale labels (their cell changed since) are left out, unless `stale`: then every row carries `stale`."""
    from ..store.db import Store
    from ..store.queries import inputs_and_places
    from ..store.session_labels import session_label_rows

    with Store(store_of(run_dir)) as st:
        run_id = st.latest_run()
        if run_id is None:
            return []
        labels = {k: lab for k, lab in latest_labels(st.conn, run_id, judge).items() if stale or not lab.stale}
        inputs: dict[int, dict[str, Any]] = {}
        where: dict[int, dict[str, Any]] = {}  # a conversation's row: its conversation id, turn / tool-call index
        for ri, text, cid, turn, call in inputs_and_places(st.conn, run_id, sorted({ri for ri, _ in labels})):
            inputs.setdefault(ri, json.loads(text))
            if cid is not None:
                pos = {"conversation_id": cid, "turn_index": turn, "tool_call_index": call}
                where.setdefault(ri, {k: v for k, v in pos.items() if v is not None})
        whole = session_label_rows(st.conn, run_id, judge, stale) if sessions else []  # store/session_labels.py
    return whole + [
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

    rows = label_rows(run_dir, judge, stale=True, sessions=True)
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
