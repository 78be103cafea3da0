"""`text`: free text, decoded without a constraint and bounded by a token budget alone.

For requests that ask for no structure (an OpenAI chat completion without `response_format`, or a
judge whose answer is prose). There is no automaton: the engine decodes freely (`constrained` is
False) and stops at the model's end-of-turn, a stop sequence, or after `max_tokens` tokens, so the
output always ends, but nothing guarantees its shape; parse it with the format you expect.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..errors import InputError
from .base import OutputFormat

DEFAULT_TEXT_TOKENS = 512


class TextVerdict(BaseModel):
    """The text as generated."""

    text: str


class PlainText(OutputFormat):
    """Free text, at most `max_tokens` tokens; no constraint, no score."""

    kind = "text"
    constrained = False

    def __init__(self, max_tokens: int = DEFAULT_TEXT_TOKENS):
        super().__init__(field_tokens=max_tokens)
        if max_tokens < 1:
            raise InputError(f"max_tokens must be >= 1, got {max_tokens}")
        self._max_tokens = max_tokens

    def regex(self) -> str:
        """Any text (never compiled: the format is decoded without a constraint)."""
        return r"[\s\S]*"

    def n_free_fields(self) -> int:
        """One: the whole text."""
        return 1

    def max_tokens(self) -> int:
        """The token budget."""
        return self._max_tokens

    def parse(self, text: str) -> TextVerdict:
        """Any text is a valid answer."""
        return TextVerdict(text=text)

    def normalise(self, verdict: Any) -> None:
        """None: free text carries no score."""
        return None

    def value(self, verdict: Any) -> str:
        """The text."""
        return verdict.text

    def params(self) -> dict[str, Any]:
        """The token budget."""
        return {"max_tokens": self._max_tokens}
