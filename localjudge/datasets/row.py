"""One data row and what its values are: the `Row` every reader yields, and the checks on a cell's value
(empty, scalar, text that cannot be written as UTF-8) that readers, the mapping and the runner share."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Position:
    """Where a row sits in a conversation (a row that judges a conversation, localjudge/conversations/dataset.py):
    the conversation's id, for a per-turn row the 0-based unit interaction it ends with, and how many leading turns
    were left out to fit the model's context (only with `--truncate-conversation`)."""

    conversation_id: str
    turn_index: int | None = None
    tool_call_index: int | None = None
    truncated_turns: int | None = None


class Printed(str):
    """A row value that is text printed from a structure (a conversation's turns as DeepEval prints them): stored,
    hashed, exported and put in prompts as the text, while `value` keeps the structure it was printed from, so a
    judge that needs the structure reads it as it was, never by parsing the text back. Pickles (Ray) with both."""

    value: Any

    def __new__(cls, value: Any, text: str | None = None) -> Printed:
        """`text` (default `str(value)`) carrying `value`."""
        obj = super().__new__(cls, str(value) if text is None else text)
        obj.value = value
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        return (Printed, (self.value, str(self)))


@dataclass(frozen=True)
class Row:
    """One data row: its position, where it came from, its values, or why it cannot be read."""

    index: int
    source: str
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the whole row is unreadable (malformed line, misaligned record)
    missing: tuple[str, ...] = ()  # columns this record lacks (a short CSV record)
    position: Position | None = None  # in a conversation (None: a single-turn row)

    @property
    def row_id(self) -> str:
        """The row's `id` value as text, or its 0-based index when it has none (or an empty one)."""
        v = self.values.get("id")
        return str(self.index) if is_empty(v) or unencodable(v) else as_text(v)


def unencodable(value: Any, _depth: int = 0) -> str | None:
    """What in a value (text, or lists/dicts of it, keys included) cannot be written as UTF-8, or None.

    A lone surrogate (JSON `"\\ud800"`, or a byte that is not UTF-8 in a command-line argument, which
    Python decodes to U+DC80..U+DCFF) would make hashing, the store and every export fail; callers make
    it a one-line row or input error instead."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return f"text holds a lone surrogate U+{ord(value[e.start]):04X} at character {e.start}, which is not valid Unicode"
        return None
    if _depth > 100:
        return None
    if isinstance(value, dict):
        items: Iterable[Any] = (x for kv in value.items() for x in kv)
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for x in items:
        bad = unencodable(x, _depth + 1)
        if bad:
            return bad
    return None


def plain(v: Any) -> Any:
    """numpy scalars/arrays → Python; NaN/NA → None."""
    if v is None or isinstance(v, (str, bool, int, dict, list)):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if hasattr(v, "tolist") and not isinstance(v, (bytes, bytearray)):  # numpy scalar or array
        return plain(v.tolist())
    if type(v).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(v, tuple):
        return list(v)
    return v


def is_empty(v: Any) -> bool:
    """True for None, blank text and an empty list (a value a required variable cannot take)."""
    return v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, list) and not v)


def is_scalar(v: Any) -> bool:
    """True for text and numbers (not booleans): what a judge variable takes as text."""
    return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool))


def as_text(v: Any) -> str:
    """A scalar as the text a judge variable gets (numbers written with `str`)."""
    return v if isinstance(v, str) else str(v)


def type_name(v: Any) -> str:
    """The JSON-ish kind of a value for error messages: "an object", "a list", "a number", "null", ..."""
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, (int, float)):
        return "a number"
    if v is None:
        return "null"
    return f"a {type(v).__name__}"
