"""One row's judge variables: each mapped cell read under its column kind, or the row's problem.

Value types. A judge variable takes text: a string, or a number (written as text). A list of
strings/numbers stays a list (e.g. several retrieved documents). Anything else (an object, a
boolean, a list holding objects or lists) is a wrong-type row error. Empty values (null, NaN, "",
whitespace, []) are a row error for a required variable and are left out for an optional one.
CSV cells are always text: a cell holding `["a", "b"]` stays that string, unless the mapping says
`var=column:list`, which parses the cell as a JSON list (and makes anything else a row error).
`var=column:text` refuses lists. `var=column:json` passes any value through unchanged (an agent
trace object, a dict of context fields) for judges that take structured values; a text cell that
starts like JSON (`{`, `[`, `"`) is parsed first (a CSV cell cannot hold an object otherwise), other
text (a path to a trace file) stays text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .. import jsonio
from ..errors import UnscoredReason
from .mapping import ColumnSpec, Kind
from .row import Row, as_text, is_empty, is_scalar, plain, type_name, unencodable

Problem = tuple[str, str]  # (unscored_reason, one-line message naming source, column and reason)


def extract(
    row: Row, plan: Mapping[str, ColumnSpec], required: Sequence[str], allow_empty: Sequence[str] = ()
) -> tuple[dict[str, Any], Problem | None]:
    """Judge variables for one row, or a problem: bad_row, missing_value, empty_value or wrong_type.

    Variables in `allow_empty` take an empty string as a value."""
    if row.error:
        return {}, ("bad_row", row.error)
    out: dict[str, Any] = {}
    for var, spec in plan.items():
        col = spec.column
        where = f"{row.source}: column {col!r} (variable {var!r})"
        if col in row.missing or col not in row.values:
            if var in required:
                return {}, (UnscoredReason.MISSING_VALUE, f"{where}: missing in this row; fill it in or drop the row")
            continue
        value, problem = coerce(row.values[col], spec.kind)
        if problem == "empty":
            if var in allow_empty and isinstance(row.values[col], str):
                out[var] = row.values[col]
            elif var in required:
                return {}, (UnscoredReason.EMPTY_VALUE, f"{where}: empty value; fill it in or drop the row")
            continue
        if problem:
            return {}, ("wrong_type", f"{where}: {problem}")
        bad = unencodable(value)
        if bad:
            return {}, ("bad_text", f"{where}: {bad}; fix the text")
        out[var] = value
    return out, None


def coerce(value: Any, kind: Kind = "auto") -> tuple[Any, str | None]:
    """(value, None), (None, "empty") or (None, reason) for one cell under a column kind."""
    value = plain(value)
    if is_empty(value):
        return None, "empty"
    if kind == "json":  # structured values (an agent trace, a dict of context fields) pass through as they are;
        if isinstance(value, str) and value.lstrip()[:1] in ("{", "[", '"'):  # a CSV cell holding JSON is parsed
            try:
                value = jsonio.loads(value)
            except json.JSONDecodeError as e:
                return None, f"the mapping says json but the cell is not valid JSON ({e.msg} at char {e.pos}); fix the cell"
            if is_empty(value):
                return None, "empty"
        return value, None
    if kind == "list" and isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except json.JSONDecodeError:
            return None, 'the mapping says list but the cell is not a JSON list; write it as ["...", "..."]'
        if not isinstance(value, list):
            return None, f"the mapping says list but the cell holds {type_name(value)}; write it as a JSON list"
        if not value:
            return None, "empty"
    if isinstance(value, list):
        if kind == "text":
            return None, "wrong type: a list, but the mapping says text; map it without :text"
        bad = next((x for x in value if not is_scalar(x)), None)
        if bad is not None:
            return None, f"wrong type: a list holding {type_name(bad)}; items must be strings"
        return [as_text(x) for x in value], None
    if kind == "list":
        return None, f"wrong type: {type_name(value)}, but the mapping says list"
    if is_scalar(value):
        return as_text(value), None
    return None, f"wrong type: {type_name(value)}; a judge variable takes text or a list of strings"
