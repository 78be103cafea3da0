"""The SQL of one page of a run's results as the view lists them (`view.runs.RunHandle.rows`): which (row, judge)
cells a judge/status filter keeps, the orders a page may be sorted by (the same expressions as the indexes of
indexes.py, so SQLite walks them instead of sorting) and the columns a page reads (`view.rowpage.page_item`
turns each into its JSON item)."""

from __future__ import annotations

from typing import Any

SORTS = {
    "row": "row_index, judge",
    "-row": "row_index DESC, judge",
    # the same expressions, in the same order, as the indexes of indexes.py: SQLite walks them instead of sorting
    "score": "json_extract(result, '$.score') IS NULL, json_extract(result, '$.score'), row_index, judge",
    "-score": "json_extract(result, '$.score') IS NULL, json_extract(result, '$.score') DESC, row_index, judge",
    "expected": "json_extract(result, '$.expected_score') IS NULL, json_extract(result, '$.expected_score'), row_index, judge",
    "-expected": (
        "json_extract(result, '$.expected_score') IS NULL, json_extract(result, '$.expected_score') DESC, row_index, judge"
    ),
    "judge": "judge, row_index",
}
STATUSES = ("pass", "fail", "unscored", "labelled", "unlabelled")
_LABELLED = (
    "EXISTS (SELECT 1 FROM labels l WHERE l.run_id = results.run_id AND l.judge = results.judge "
    "AND l.row_index = results.row_index AND l.id = (SELECT MAX(id) FROM labels m WHERE m.run_id = l.run_id "
    "AND m.judge = l.judge AND m.row_index = l.row_index) AND l.value IS NOT NULL)"
)


def filter_where(rid: str | None, judge: str | None, status: str | None, tops: list[str] | None) -> tuple[str, list[Any]]:
    """The WHERE clause and its arguments for one judge (or, with `tops`, only a panel's or cascade's combined
    judges: their members show beside its verdict, not as rows of their own) and one status filter."""
    where, args = "WHERE run_id = ?", [rid]
    if judge:
        where += " AND judge = ?"
        args.append(judge)
    elif tops is not None:
        where += f" AND judge IN ({', '.join('?' * len(tops))})"
        args += tops
    if status == "pass":
        where += " AND passed = 1"
    elif status == "fail":
        where += " AND passed = 0"
    elif status == "unscored":
        where += " AND scored = 0"
    elif status == "labelled":
        where += " AND " + _LABELLED
    elif status == "unlabelled":
        where += " AND NOT " + _LABELLED
    return where, args


def page_sql(where: str, sort: str) -> str:
    """The query of one page: the columns `page_item` reads, in `sort`'s order, with LIMIT and OFFSET to bind."""
    return (
        "SELECT row_index, row_id, judge, json_extract(result, '$.value'), json_extract(result, '$.score'), "
        "json_extract(result, '$.expected_score'), passed, scored, substr(json_extract(result, '$.rationale'), 1, 240), "
        "substr(inputs, 1, 400), json_extract(result, '$.unscored_reason'), json_extract(result, '$.details.cascade'), "
        "conversation_id, turn_index, tool_call_index, truncated_turns "
        "FROM results " + where + " ORDER BY " + SORTS[sort] + " LIMIT ? OFFSET ?"
    )


def count_where(conn: Any, where: str, args: list[Any]) -> int:
    """How many results a page's WHERE clause (`filter_where`, and the search's clause) keeps."""
    return int(conn.execute("SELECT COUNT(*) FROM results " + where, args).fetchone()[0])


def page_rows(conn: Any, where: str, args: list[Any], sort: str, page: int, per: int) -> list[Any]:
    """The rows of page `page` (from 1) of `per` results under `where`, in `sort`'s order."""
    return conn.execute(page_sql(where, sort), [*args, per, (page - 1) * per]).fetchall()
