"""Session labels: a human verdict on a whole conversation, given inside a per-turn (or per tool call) run.

A per-turn run's result rows are turns (`id` = `c1:0`); a label on one of them is a turn label (labels.py). A session
label says what the labeller thinks of the conversation `c1` as a whole, for one judge. It lives in its own
append-only table, `session_labels` (migration 008), so no query of the cell labels sees it: the latest row of a
(conversation, judge) wins, a NULL value withdraws it.

It is bound to what it judged like a cell label: `binding` is the hash of the prompt hashes of every row of that
conversation for that judge (in row order), with the judge version of its first row; a label whose conversation
now holds other turns, other text or another judge version is stale (left out of `agree`, exported with
`stale: true`).

Exported (`labels export`, the file `agree` reads) as a row with `id` = the conversation id, `granularity` =
"session" and `turn_index` null: it joins a session-level run of the same data by `id`, and never a turn's row.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from typing import Any

from pydantic import BaseModel

from ..errors import InputError
from .labels import SAMPLE_KINDS, SampleKind


class SessionLabel(BaseModel):
    """One session label row as stored: `value` None means the label was withdrawn (an undo)."""

    id: int = 0
    run_id: str
    conversation_id: str
    judge: str
    value: Any = None
    comment: str | None = None
    labeller: str
    sample: SampleKind
    created: str = ""
    binding: str | None = None  # hash of the conversation's rows' prompt hashes for the judge, when labelled
    judge_version: str | None = None
    stale: bool = False  # the conversation's rows changed since: not used


_COLS = "id, run_id, conversation_id, judge, value, comment, labeller, sample, created, binding, judge_version"


def conversation_of_row(conn: sqlite3.Connection, run_id: str, row_index: int, judge: str) -> str:
    """The conversation id of a run's row (the row a session label is given on); InputError when the row has no
    result for the judge, is not part of a conversation, or is a session-level run's row (its row label is the
    session's)."""
    place = row_place(conn, run_id, row_index, judge)
    if place is None:
        raise InputError(f"row {row_index} has no result for judge {judge!r}; label a cell the run has judged")
    conversation, is_turn = place
    if conversation is None:
        raise InputError(f"row {row_index} is not part of a conversation: a session label is for the turns of a conversation run")
    if not is_turn:
        raise InputError(
            f"row {row_index} is a whole conversation (a session-level run): give it a row label, not a session label"
        )
    return conversation


def row_place(conn: sqlite3.Connection, run_id: str, row_index: int, judge: str) -> tuple[str | None, bool] | None:
    """Where a run's row sits: (its conversation id or None, whether it is a turn or tool call of it rather than
    the whole conversation); None when the row has no result for the judge."""
    r = conn.execute(
        "SELECT conversation_id, turn_index, tool_call_index FROM results WHERE run_id = ? AND row_index = ? AND judge = ?",
        (run_id, row_index, judge),
    ).fetchone()
    if r is None:
        return None
    return (None if r[0] is None else str(r[0])), not (r[1] is None and r[2] is None)


def _binding(conn: sqlite3.Connection, run_id: str, conversation_id: str, judge: str) -> tuple[str | None, str | None]:
    """What the conversation's rows for the judge hold now: (hash of their prompt hashes, first row's judge
    version); (None, None) when it has no rows."""
    cur = conn.execute(
        "SELECT row_id, CASE WHEN json_valid(record) THEN json_extract(record, '$.prompt_hash') END, "
        "CASE WHEN json_valid(result) THEN json_extract(result, '$.judge_version') END FROM results "
        "WHERE run_id = ? AND conversation_id = ? AND judge = ? ORDER BY row_index",
        (run_id, conversation_id, judge),
    ).fetchall()
    if not cur:
        return None, None
    h = hashlib.sha256(json.dumps([[r[0], r[1]] for r in cur]).encode()).hexdigest()
    return h, None if cur[0][2] is None else str(cur[0][2])


def add_session_label(conn: sqlite3.Connection, label: SessionLabel) -> SessionLabel:
    """Append one session label row (an edit or an undo is a later row), bound to what the conversation's rows
    hold now; returns it with its id and time. InputError when the run has no row of that conversation."""
    if label.sample not in SAMPLE_KINDS:
        raise InputError(f"sample {label.sample!r} is not one of {', '.join(SAMPLE_KINDS)}")
    if not label.labeller.strip():
        raise InputError("labeller is empty; give the name of whoever labels")
    binding, version = _binding(conn, label.run_id, label.conversation_id, label.judge)
    if binding is None:
        raise InputError(
            f"conversation {label.conversation_id!r} has no result for judge {label.judge!r}; label a conversation the run has judged"
        )
    created = label.created or time.strftime("%Y-%m-%dT%H:%M:%S%z")
    cur = conn.execute(
        f"INSERT INTO session_labels ({_COLS.split(', ', 1)[1]}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            label.run_id,
            label.conversation_id,
            label.judge,
            None if label.value is None else json.dumps(label.value),
            label.comment,
            label.labeller.strip(),
            label.sample,
            created,
            binding,
            version,
        ),
    )
    update = {"id": int(cur.lastrowid or 0), "created": created, "binding": binding, "judge_version": version}
    return label.model_copy(update={**update, "stale": False})


def latest_session_labels(
    conn: sqlite3.Connection, run_id: str, judge: str | None = None, conversation_id: str | None = None
) -> dict[tuple[str, str], SessionLabel]:
    """The current session label of each labelled (conversation, judge), keyed so, each with `stale` set when the
    conversation's rows no longer hold what it judged; withdrawn ones are left out."""
    sql = f"SELECT {_COLS} FROM session_labels WHERE id IN (SELECT MAX(id) FROM session_labels WHERE run_id = ?"
    args: list[Any] = [run_id]
    if judge is not None:
        sql += " AND judge = ?"
        args.append(judge)
    if conversation_id is not None:
        sql += " AND conversation_id = ?"
        args.append(conversation_id)
    sql += " GROUP BY conversation_id, judge) AND value IS NOT NULL ORDER BY conversation_id, judge"
    out: dict[tuple[str, str], SessionLabel] = {}
    for r in conn.execute(sql, args).fetchall():
        now = _binding(conn, run_id, r[2], r[3])
        lab = SessionLabel(
            id=r[0],
            run_id=r[1],
            conversation_id=r[2],
            judge=r[3],
            value=json.loads(r[4]),
            comment=r[5],
            labeller=r[6],
            sample=r[7],
            created=r[8],
            binding=r[9],
            judge_version=r[10],
            stale=now != (r[9], r[10]),
        )
        out[(lab.conversation_id, lab.judge)] = lab
    return out


def session_label_rows(conn: sqlite3.Connection, run_id: str, judge: str | None, stale: bool) -> list[dict[str, Any]]:
    """The current session labels as export rows: `id` (the conversation id), `conversation_id`, `granularity`
    "session", `turn_index` null, `judge`, `label`, `comment`, `labeller`, `sample`, `labelled_at`; stale ones left
    out unless `stale` (then every row carries `stale`)."""
    return [
        {
            "id": lab.conversation_id,
            "conversation_id": lab.conversation_id,
            "granularity": "session",
            "turn_index": None,
            "judge": lab.judge,
            "label": lab.value,
            "comment": lab.comment,
            "labeller": lab.labeller,
            "sample": lab.sample,
            "labelled_at": lab.created,
            "probability": None,
            **({"stale": lab.stale} if stale else {}),
        }
        for lab in latest_session_labels(conn, run_id, judge).values()
        if stale or not lab.stale
    ]
