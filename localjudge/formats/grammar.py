"""`grammar`: the output is a sentence of a Lark grammar (llguidance's dialect), for users' own formats.

SQL, a DSL, a fenced code block: anything a context-free grammar with regex lexemes describes.
llguidance compiles the grammar in milliseconds and decodes under it; the whole-output budget holds
by its close path (`engine.llg`), and the grammar's own `max_tokens` on a lexeme
(`%llguidance {}` / `name[max_tokens=N]: ...`) bounds a free part in tokens. The grammar is checked
when the format is built: an error is one line naming llguidance's reason.

    start: "SELECT " COLS " FROM " TABLE ";"
    COLS: /[a-z_]+(, [a-z_]+)*/
    TABLE: /[a-z_]+/

`parse` returns the text as written (the grammar decides what is valid; a parser from another backend
sees plain text).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..errors import InputError
from . import llg_schema
from .base import OutputFormat

DEFAULT_GRAMMAR_TOKENS = 256


class GrammarError(InputError):
    """A grammar llguidance cannot compile (the message says why, on one line)."""


class GrammarVerdict(BaseModel):
    """The text the grammar produced."""

    text: str


class GrammarFormat(OutputFormat):
    """A Lark grammar as the constraint; at most `max_tokens` tokens; no score."""

    kind = "grammar"

    def __init__(self, grammar: str, max_tokens: int = DEFAULT_GRAMMAR_TOKENS, field_tokens: int = 80):
        super().__init__(field_tokens)
        if not isinstance(grammar, str) or not grammar.strip():
            raise GrammarError("grammar: give a Lark grammar (llguidance's dialect) with a 'start' rule")
        if max_tokens < 1:
            raise GrammarError(f"grammar: max_tokens must be >= 1, got {max_tokens}")
        self.grammar = grammar
        self._max_tokens = max_tokens
        self._llg = llg_schema.lark_grammar(grammar, GrammarError)

    def regex(self) -> str:
        """No regex: the grammar is context-free (`GrammarError` for a caller that needs one)."""
        raise GrammarError("the grammar format has no regex; it is decoded by llguidance")

    def llg_grammar(self) -> str:
        """llguidance's form of the grammar."""
        return self._llg

    def max_tokens(self) -> int:
        """The whole-output budget."""
        return self._max_tokens

    def parse(self, text: str) -> GrammarVerdict:
        """The text as written."""
        return GrammarVerdict(text=text)

    def normalise(self, verdict: Any) -> None:
        """None: a grammar carries no score."""
        return None

    def value(self, verdict: Any) -> str:
        """The text."""
        return verdict.text

    def params(self) -> dict[str, Any]:
        """The grammar and the budget."""
        return {"grammar": self.grammar, "max_tokens": self._max_tokens}

    def describe(self) -> str:
        """`grammar(<first line>, max_tokens=N)`."""
        first = self.grammar.strip().splitlines()[0][:40]
        return f"grammar({first!r}, max_tokens={self._max_tokens})"
