"""The named reads of a run's store that the view, the labels and their imports make: every statement over the
`results`, `runs` and `labels` tables outside the run's own writes (db.py), so a renamed column or result field
is changed here and caught by tests/test_result_paths.py, never by a page that silently empties.

Each function takes an open connection (the caller holds its lock and chooses read-only or not) and returns plain
values; what they mean to a page is the caller's. The rows page's filters and sorts are pages.py's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import UnscoredReason

# the columns of a stored result row, in the order `view.runs._result_row` reads them
RESULT_COLUMNS = "run_id, row_index, judge, row_id, source, inputs, cache_key, record, result, error"
CHUNK = 500  # row indexes per `IN (...)` (SQLite's default limit on bound values is far above it)

# rows where the members of one panel (or a cascade's two models) gave different scored verdicts: pass/fail where
# the judge has one, else the value; `{}` takes one `?` per member name, after the run id
MEMBERS_SPLIT = (
    "SELECT row_index FROM results WHERE run_id = ? AND judge IN ({}) AND scored = 1 GROUP BY row_index "
    "HAVING COUNT(DISTINCT coalesce(passed, json_extract(result, '$.value'))) > 1"
)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _chunks(row_indexes: Sequence[int]) -> Iterator[list[int]]:
    """`row_indexes` in runs of `CHUNK`, one `IN (...)` each."""
    for i in range(0, len(row_indexes), CHUNK):
        yield list(row_indexes[i : i + CHUNK])


# ------------------------------------------------------------------------------------------- the run


def run_meta_text(conn: sqlite3.Connection, run_id: str) -> str | None:
    """The run's stored metadata text (run.json's content), None before the run registered it."""
    r = conn.execute("SELECT meta FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return r[0] if r else None


def result_judges(conn: sqlite3.Connection, run_id: str | None) -> list[str]:
    """Every judge name with a result in the run (members included), in the order SQLite finds them."""
    return [r[0] for r in conn.execute("SELECT DISTINCT judge FROM results WHERE run_id = ?", (run_id,))]


def result_count(conn: sqlite3.Connection, run_id: str | None) -> int:
    """How many (row, judge) results the run holds."""
    return int(conn.execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()[0])


def last_update(conn: sqlite3.Connection, run_id: str | None) -> str | None:
    """When the run's latest result was committed (the (run_id, updated) index of migration 002), None before any."""
    r = conn.execute("SELECT updated FROM results WHERE run_id = ? ORDER BY updated DESC LIMIT 1", (run_id,)).fetchone()
    return r[0] if r else None


def results_since(conn: sqlite3.Connection, run_id: str | None, since: Any) -> int:
    """How many of the run's results were committed at or after `since` (a stored time text)."""
    return int(conn.execute("SELECT COUNT(*) FROM results WHERE run_id = ? AND updated >= ?", (run_id, since)).fetchone()[0])


def current_label_count(conn: sqlite3.Connection, run_id: str | None) -> int:
    """How many cells of the run hold a label now (the latest row of each cell, not withdrawn)."""
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM labels WHERE id IN (SELECT MAX(id) FROM labels WHERE run_id = ? "
            "GROUP BY row_index, judge) AND value IS NOT NULL",
            (run_id,),
        ).fetchone()[0]
    )


# ------------------------------------------------------------------------------------------ its rows


def judge_rows(
    conn: sqlite3.Connection, run_id: str | None, judge: str, *, ordered: bool = False, limit: int | None = None
) -> list[int]:
    """The row indexes of one judge's results (by row index when `ordered`; at most `limit`)."""
    sql = "SELECT row_index FROM results WHERE run_id = ? AND judge = ?"
    args: list[Any] = [run_id, judge]
    if ordered:
        sql += " ORDER BY row_index"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [r[0] for r in conn.execute(sql, args)]


def cell_row_id(conn: sqlite3.Connection, run_id: str, row_index: int, judge: str) -> str | None:
    """The row id of a (row, judge) cell, None when the cell has no result."""
    r = conn.execute(
        "SELECT row_id FROM results WHERE run_id = ? AND row_index = ? AND judge = ?", (run_id, row_index, judge)
    ).fetchone()
    return None if r is None else r[0]


def cell_row_ids(conn: sqlite3.Connection, run_id: str) -> dict[tuple[int, str], str]:
    """Every (row index, judge) cell of the run with its row id."""
    return {
        (ri, j): rid for ri, j, rid in conn.execute("SELECT row_index, judge, row_id FROM results WHERE run_id = ?", (run_id,))
    }


def result_rows_of_row(conn: sqlite3.Connection, run_id: str | None, row_index: int) -> list[Sequence[Any]]:
    """Every judge's stored result row (`RESULT_COLUMNS`) of one data row, by judge."""
    return conn.execute(
        f"SELECT {RESULT_COLUMNS} FROM results WHERE run_id = ? AND row_index = ? ORDER BY judge", (run_id, row_index)
    ).fetchall()


def result_rows_of_cells(
    conn: sqlite3.Connection, run_id: str | None, judge: str, row_indexes: Sequence[int]
) -> list[Sequence[Any]]:
    """One judge's stored result rows (`RESULT_COLUMNS`) for the given rows, by row index within each chunk of 500."""
    out: list[Sequence[Any]] = []
    for chunk in _chunks(row_indexes):
        out += conn.execute(
            f"SELECT {RESULT_COLUMNS} FROM results "
            f"WHERE run_id = ? AND judge = ? AND row_index IN ({_marks(len(chunk))}) ORDER BY row_index",
            [run_id, judge, *chunk],
        ).fetchall()
    return out


def inputs_and_places(
    conn: sqlite3.Connection, run_id: str, row_indexes: Sequence[int]
) -> Iterator[tuple[int, str, Any, Any, Any]]:
    """(row index, inputs JSON text, conversation id, turn index, tool-call index) of each result of the given rows
    (one per judge), in chunks of 500."""
    for chunk in _chunks(row_indexes):
        yield from conn.execute(
            "SELECT row_index, inputs, conversation_id, turn_index, tool_call_index FROM results WHERE run_id = ? "
            f"AND row_index IN ({_marks(len(chunk))})",
            [run_id, *chunk],
        )


def row_position(conn: sqlite3.Connection, run_id: str, row_index: int) -> tuple[str, Any, Any, Any] | None:
    """(conversation id, turn index, tool-call index, truncated turns) of a data row that is part of a conversation,
    None for any other row."""
    r = conn.execute(
        "SELECT conversation_id, turn_index, tool_call_index, truncated_turns FROM results WHERE run_id = ? "
        "AND row_index = ? AND conversation_id IS NOT NULL LIMIT 1",
        (run_id, row_index),
    ).fetchone()
    return None if r is None else (r[0], r[1], r[2], r[3])


def conversation_first_rows(conn: sqlite3.Connection, run_id: str) -> dict[str, dict[str, int]]:
    """Per conversation the run holds as turns or tool calls (a per-turn run): judge -> its first row there."""
    out: dict[str, dict[str, int]] = {}
    for cid, judge, ri in conn.execute(
        "SELECT conversation_id, judge, MIN(row_index) FROM results WHERE run_id = ? AND conversation_id IS NOT NULL "
        "AND (turn_index IS NOT NULL OR tool_call_index IS NOT NULL) GROUP BY conversation_id, judge",
        (run_id,),
    ):
        out.setdefault(str(cid), {})[judge] = ri
    return out


# -------------------------------------------------------------------------------- verdicts compared


def cell_verdicts(conn: sqlite3.Connection, run_id: str | None) -> Iterator[tuple[str, str, int, Any, Any]]:
    """(row id, judge, row index, passed, value JSON text) of every result of the run."""
    yield from conn.execute(
        "SELECT row_id, judge, row_index, passed, json_extract(result, '$.value') FROM results WHERE run_id = ?", (run_id,)
    )


def pass_rates(conn: sqlite3.Connection, run_id: str | None) -> dict[str, tuple[float | None, int]]:
    """Judge -> (mean of `passed` over its results with one, how many have one)."""
    cur = conn.execute("SELECT judge, AVG(passed), COUNT(passed) FROM results WHERE run_id = ? GROUP BY judge", (run_id,))
    return {r[0]: (r[1], r[2]) for r in cur}


def member_verdicts(conn: sqlite3.Connection, run_id: str, rows: Sequence[int], names: Sequence[str]) -> list[Sequence[Any]]:
    """(row index, judge, value JSON text, passed, scored, expected score) of the named judges' results of the rows."""
    return conn.execute(
        "SELECT row_index, judge, json_extract(result, '$.value'), passed, scored, json_extract(result, '$.expected_score') "
        f"FROM results WHERE run_id = ? AND row_index IN ({_marks(len(rows))}) AND judge IN ({_marks(len(names))})",
        [run_id, *rows, *names],
    ).fetchall()


def uncertain_order(
    conn: sqlite3.Connection, run_id: str | None, judge: str, tops: Sequence[str], members: Sequence[str], threshold: float
) -> list[int]:
    """One judge's row indexes, least sure first (view/queue.py's docstring says the groups): a tie, a panel tie, a
    row the run's judges (`tops`) split on or the judge's `members` split on; then by |expected score - threshold|,
    then rows with only a score, by |score - threshold|; unscored rows last. Sorted by SQLite; only the row indexes
    come back."""
    first: list[str] = ["json_extract(result, '$.value') = 'tie'"]  # group 1
    args: list[Any] = []
    if len(tops) > 1:  # the run's judges (not a panel's members) pass and fail the same row
        first.append(
            f"row_index IN (SELECT row_index FROM results WHERE run_id = ? AND judge IN ({_marks(len(tops))}) "
            "AND passed IS NOT NULL GROUP BY row_index HAVING MIN(passed) != MAX(passed))"
        )
        args += [run_id, *tops]
    if len(members) > 1:
        first.append(f"row_index IN ({MEMBERS_SPLIT.format(_marks(len(members)))})")
        args += [run_id, *members]
    es, sc = "json_extract(result, '$.expected_score')", "json_extract(result, '$.score')"
    sql = (
        "SELECT row_index FROM results WHERE run_id = ? AND judge = ? ORDER BY "
        f"CASE WHEN scored = 0 THEN (CASE WHEN json_extract(result, '$.unscored_reason') = ? THEN 0 ELSE 3 END) "
        f"WHEN {' OR '.join(first)} THEN 0 WHEN {es} IS NOT NULL THEN 1 ELSE 2 END, "
        f"CASE WHEN scored = 0 THEN 0.0 ELSE abs(coalesce({es}, {sc}, ? + 1.0) - ?) END, row_index"
    )
    return [r[0] for r in conn.execute(sql, [run_id, judge, UnscoredReason.PANEL_TIE.value, *args, threshold, threshold])]
