"""One page of a run's results as the view lists them: the page's parameters checked, and the JSON item each row
becomes, with its current label and its panel or cascade members. The page's SQL (filters, sorts, columns) is the
store's: store/pages.py.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InputError
from ..labels.store import Label
from ..store.pages import SORTS, STATUSES, filter_where, page_sql

__all__ = ["SORTS", "STATUSES", "check_page", "filter_where", "page_item", "page_sql"]


def check_page(sort: str, status: str | None, page: int, per: int) -> None:
    """InputError naming the parameter when the sort, status filter or page bounds are not ones a page takes."""
    if sort not in SORTS:
        raise InputError(f"sort {sort!r} is not one of {', '.join(SORTS)}")
    if status and status not in STATUSES:
        raise InputError(f"status {status!r} is not one of {', '.join(STATUSES)}")
    if page < 1 or not 1 <= per <= 500:
        raise InputError("page starts at 1 and per is 1..500")


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
