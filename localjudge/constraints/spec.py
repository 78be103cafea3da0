"""Constraints as data: what an output format declares its output must be (`OutputFormat.constraint()`).

Three typed, hashable values, each carrying what a compiler needs and nothing about which engine compiles it
(the registry decides that, `registry.engine_for`):

  * `Regex(pattern)`: the whole output as a regular expression (outlines-core syntax);
  * `JSONSchema(grammar, schema)`: a JSON schema as llguidance's grammar text (checked against the bounds in
    `llg_bounds` when the format was built), with the schema itself for readers;
  * `Lark(grammar, source)`: a context-free grammar as llguidance's grammar text, with the user's Lark text.

Pure data: importing this module imports no engine (formats import it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Regex:
    """The whole output as a regular expression."""

    pattern: str
    name = "regex"

    def text(self) -> str:
        """What the compiler reads: the pattern."""
        return self.pattern


@dataclass(frozen=True)
class JSONSchema:
    """A JSON schema, as llguidance's grammar document (`grammar`, what compiles) and as the schema dict (equality
    and hash by `grammar` only: the schema determines it)."""

    grammar: str
    schema: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    name = "json_schema"

    def text(self) -> str:
        """What the compiler reads: llguidance's grammar document."""
        return self.grammar


@dataclass(frozen=True)
class Lark:
    """A Lark grammar (llguidance's dialect), as llguidance's grammar document (`grammar`) and as written (`source`,
    not compared)."""

    grammar: str
    source: str = field(default="", compare=False)
    name = "lark"

    def text(self) -> str:
        """What the compiler reads: llguidance's grammar document."""
        return self.grammar


ConstraintSpec = Regex | JSONSchema | Lark
