"""One page of a run's results as the view lists them: the filters, the sorts, and the item each row becomes.

The SQL of the runs page (`RunHandle.rows`): which (row, judge) cells a judge/status filter keeps, the orders a page
may be sorted by (the same expressions as the indexes of indexes.py, so SQLite walks them instead of sorting), the
columns a page reads, and the JSON item of one cell with its current label and its panel or cascade members.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InputError
from ..labels.store import Label

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


def check_page(sort: str, status: str | None, page: int, per: int) -> None:
    """InputError naming the parameter when the sort, status filter or page bounds are not ones a page takes."""
    if sort not in SORTS:
        raise InputError(f"sort {sort!r} is not one of {', '.join(SORTS)}")
    if status and status not in STATUSES:
        raise InputError(f"status {status!r} is not one of {', '.join(STATUSES)}")
    if page < 1 or not 1 <= per <= 500:
        raise InputError("page starts at 1 and per is 1..500")


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
        "substr(inputs, 1, 400), json_extract(result, '$.unscored_reason'), json_extract(result, '$.details.cascade') "
        "FROM results " + where + " ORDER BY " + SORTS[sort] + " LIMIT ? OFFSET ?"
    )


def page_item(r: Any, lab: Label | None, of_members: dict[str, Any]) -> dict[str, Any]:
    """One row of `page_sql` as the page's JSON item, with its current label and its members' verdicts."""
    value = r[3]
    if isinstance(value, str) and value[:1] in "[{":
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            pass
    return {
        "row_index": r[0],
        "row_id": r[1],
        "judge": r[2],
        "value": value,
        "score": r[4],
        "expected_score": r[5],
        "passed": None if r[6] is None else bool(r[6]),
        "scored": bool(r[7]),
        "rationale": r[8],
        "inputs": r[9],
        "unscored_reason": r[10],
        "label": None if lab is None else lab.value,
        "label_stale": lab is not None and lab.stale,
        **of_members,
        **({"cascade": json.loads(r[11])} if r[11] else {}),
    }
