"""The `deepeval_turns` value read back into DeepEval's turn dicts, for the DeepEval several-call judges
(judges/deepeval_conversation.py and judges/deepeval_goal.py, which both read it; here so neither imports the other
back). Its printer is conversations/render.py's `deepeval_turns_text`."""

from __future__ import annotations

import ast
from typing import Any

from ..errors import InputError


def deepeval_turns(value: Any, name: str = "deepeval_turns") -> list[dict[str, str]]:
    """`deepeval_turns` as DeepEval's turn dicts: the list itself, or its Python text (`deepeval_turns_text`);
    `name` is the variable the error names."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            value = None
    if not isinstance(value, list | tuple) or not all(
        isinstance(t, dict) and isinstance(t.get("content"), str) and isinstance(t.get("role"), str) for t in value
    ):
        raise InputError(
            f"variable {name!r} must be a list of {{'content': str, 'role': str}} turns "
            "(give the row a conversation: --conversation FILE, or a messages column); fix the row"
        )
    return [dict(t) for t in value]
