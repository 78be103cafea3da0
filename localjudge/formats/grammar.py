"""`grammar`: the output is a sentence of a Lark grammar (llguidance's dialect), for users' own formats.

SQL, a DSL, a fenced code block: anything a context-free grammar with regex lexemes describes.
llguidance compiles the grammar in milliseconds and decodes under it. The grammar is checked when the
format is built: an error is one line naming llguidance's reason.

    start: "SELECT " COLS " FROM " TABLE ";"
    COLS: /[a-z_]+(, [a-z_]+)*/
    TABLE: /[a-z_]+/

Budgets, in tokens:
  * the whole output: `max_tokens` (default 256), by construction (`constraints.llg`'s close path): the output
    always ends valid. A greedy close path longer than 4 tokens is compared with a bounded shortest-first
    search's (`TEXT: /[a-zA-Z ,]+/` then "." closes in 2 tokens, not greedy's 24 filler bytes); a grammar
    whose completion the search cannot find is refused, and so is a `max_tokens` below the shortest
    completion (never raised);
  * one free part: llguidance's lexeme option `max_tokens` on a lowercase rule whose body is one terminal,
    `text[max_tokens=N]: /[a-z ]+/` or `text[max_tokens=N]: TEXT` (the lexeme ends after N tokens and the
    grammar goes on). Options on an uppercase terminal (`TEXT[max_tokens=N]: ...`) are not llguidance's
    syntax: refused with the right spelling.
No per-part default is added: a grammar's language is the user's, so a free part is bounded only by the
whole-output budget unless the grammar bounds it (`field_tokens` does not apply to grammars).

`parse` returns the text as written (the grammar decides what is valid; a parser from another backend
sees plain text).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from pydantic import BaseModel

from ..constraints.spec import Lark
from ..errors import InputError
from . import llg_schema
from .base import OutputFormat

DEFAULT_GRAMMAR_TOKENS = 256
_TERMINAL_OPTIONS = re.compile(r"^[ \t]*([A-Z_][A-Z0-9_]*)[ \t]*\[[^\]\n]*\][ \t]*:", re.M)  # TEXT[max_tokens=5]: ...


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
        try:
            self._llg = llg_schema.lark_grammar(grammar, GrammarError)
        except GrammarError as e:
            m = _TERMINAL_OPTIONS.search(grammar)
            if m is None:
                raise
            name, rule = m.group(1), m.group(1).lower()
            raise GrammarError(
                f"grammar: options in [...] go on a lowercase rule, not on the terminal {name}: write "
                f"`{rule}[...]: /.../` (or `{rule}[...]: {name}` with `{name}: /.../`) and use {rule} in its place "
                f"(llguidance: {str(e).removeprefix('grammar: ')[:120]})"
            ) from None

    def constraint(self) -> Lark:
        """The grammar as llguidance's grammar document (it is context-free: no regex)."""
        return Lark(self._llg, source=self.grammar)

    def llg_grammar(self) -> str:
        """Deprecated (goes in the next release): `constraint().grammar`."""
        warnings.warn("GrammarFormat.llg_grammar() is deprecated; use constraint().grammar", DeprecationWarning, stacklevel=2)
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
