"""The `deepeval_turns` value as DeepEval's turn dicts, for the DeepEval several-call judges
(judges/deepeval_conversation.py and judges/deepeval_topic_adherence.py, which both read it; here so neither imports the other
back). A conversation row's value is `Printed` (conversations/render.py `deepeval_turns_text`): the printed text
the prompt shows, carrying the turns it was printed from, which are read as they are. Only a user's own column
of printed text is read back, by the bounded `jsonio.python_literal`."""

from __future__ import annotations

from typing import Any

from ..datasets import Printed
from ..errors import InputError
from ..jsonio import python_literal


def deepeval_turns(value: Any, name: str = "deepeval_turns") -> list[dict[str, str]]:
    """`deepeval_turns` as DeepEval's turn dicts: the turns a conversation row printed (`deepeval_turns_text`'s
    `Printed` value: read as they were, never parsed back), a list given as it is, or a user's own text of that
    list (printed by Python, read by `jsonio.python_literal`); `name` is the variable the error names."""
    value = printed_value(value)
    if not isinstance(value, list | tuple) or not all(
        isinstance(t, dict) and isinstance(t.get("content"), str) and isinstance(t.get("role"), str) for t in value
    ):
        raise InputError(
            f"variable {name!r} must be a list of {{'content': str, 'role': str}} turns "
            "(give the row a conversation: --conversation FILE, or a messages column); fix the row"
        )
    return [dict(t) for t in value]


def printed_value(value: Any) -> Any:
    """The structure of a row value: a `Printed` value's own, a user's printed text read back (None when it is not a
    printed Python value), anything else as it is."""
    if isinstance(value, Printed):
        return value.value
    if isinstance(value, str):
        try:
            return python_literal(value)
        except ValueError:
            return None
    return value
