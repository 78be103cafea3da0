"""`json_schema`: any JSON schema as an output format, constrained by construction with token budgets.

Two ways to constrain it (`constraint=`, part of the format's spec): "llguidance" (what client schemas use:
serve, the adapters, judge files): `constraint()` is a `constraints.JSONSchema` (llguidance's grammar, built in
`llg_schema`); "automaton": a `constraints.Regex`, the schema compiled to a regex in `json_schema_regex` (kept;
its cache keys unchanged). The two differ in what the format is, not only in speed: their size limits and
their whole-output budgets differ, so the choice stays a parameter of the format (stored in its spec).

`parse` reads the first JSON value of the schema's type in any text (constrained or not, fenced or
not) and validates it against the schema (`json_validate`: types, required, enum/const, bounds, nested), so text
from another backend gets the same checks.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from typing import Any

from pydantic import BaseModel

from .. import jsonio
from ..constraints.spec import ConstraintSpec, JSONSchema, Regex
from ..errors import ParseError
from . import llg_schema
from .base import OutputFormat
from .json_schema_regex import MAX_ENUM_VALUES, MAX_PROPERTIES, MAX_REGEX_CHARS, MAX_SCHEMA_BYTES, SchemaCompiler, SchemaError
from .json_validate import validate

CONSTRAINTS = ("automaton", "llguidance")  # this module's regex for outlines-core's automaton, or llguidance
CLIENT_CONSTRAINT = "llguidance"  # what client schemas use (serve, the adapters, judge files): chosen by measurement


class SchemaVerdict(BaseModel):
    """The parsed JSON value (an object, array or scalar, as the schema says)."""

    value: Any


def _json_values(text: str) -> list[Any]:
    """Every JSON value that starts at a '{', '[' or the start of the (fenced) text, in order."""
    fences = [m.group(1) for m in re.finditer(r"```(?:json|JSON)?\s*(.*?)```", text, re.S)]
    dec = json.JSONDecoder()
    out: list[Any] = []
    for cand in [*fences, text]:
        stripped = cand.strip()
        try:
            out.append(jsonio.loads(stripped, max_depth=jsonio.PARSER_DEPTH))
            continue
        except (json.JSONDecodeError, RecursionError):
            pass
        for i, ch in enumerate(cand):
            if ch in "{[":
                try:
                    obj, _ = dec.raw_decode(cand, i)
                except (json.JSONDecodeError, RecursionError):
                    continue
                out.append(obj)
    return out


# ---------------------------------------------------------------------------------------- the format


class JSONSchemaFormat(OutputFormat):
    """Any JSON schema: constrained by a regex built with token budgets, parsed and validated against it."""

    kind = "json_schema"

    def __init__(
        self,
        schema: dict[str, Any] | str,
        field_tokens: int = 80,
        max_tokens: int | None = None,
        name: str | None = None,
        constraint: str = "automaton",
    ):
        super().__init__(field_tokens)
        if constraint not in CONSTRAINTS:
            raise SchemaError(f"constraint: {constraint!r} is not one of {', '.join(CONSTRAINTS)}")
        self.expressed = constraint  # how the schema is constrained: "automaton" (a regex) or "llguidance"
        if isinstance(schema, str):
            try:
                schema = jsonio.loads(schema, max_depth=jsonio.PARSER_DEPTH)
            except json.JSONDecodeError as e:
                raise SchemaError(f"response schema is not valid JSON ({e.msg}, line {e.lineno})") from None
        if not isinstance(schema, dict):
            raise SchemaError(f"response schema must be a JSON object, got {type(schema).__name__}")
        blob = json.dumps(schema, sort_keys=True, ensure_ascii=False)
        limit = llg_schema.LLG_MAX_SCHEMA_BYTES if constraint == "llguidance" else MAX_SCHEMA_BYTES
        if len(blob) > limit:
            raise SchemaError(f"response schema is {len(blob)} bytes, more than {limit}; simplify it")
        self.schema = schema
        self.name = name or str(schema.get("title") or "")
        self.digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
        self._max_tokens = max_tokens
        self._grammar: str | None = None
        if constraint == "llguidance":
            self._free = llg_schema.bounds(schema, llg_schema.LLG_MAX_DEPTH, MAX_PROPERTIES, MAX_ENUM_VALUES, SchemaError)
            self._grammar = llg_schema.grammar(schema, SchemaError)
            self._regex = ""
            return
        c = SchemaCompiler(schema)
        self._regex = c.regex(schema)
        if len(self._regex) > MAX_REGEX_CHARS:
            raise SchemaError(
                f"response schema expands to a constraint of {len(self._regex)} characters (limit "
                f"{MAX_REGEX_CHARS}); fewer enum values or a flatter schema"
            )
        self._free = max(1, c.free)

    def regex(self) -> str:
        """The schema as a regex: every property in order, strings unbounded (budgeted in tokens); built on demand
        under llguidance (`SchemaError` when the automaton path cannot express it)."""
        if not self._regex:
            c = SchemaCompiler(self.schema)
            self._regex = c.regex(self.schema)
        return self._regex

    def constraint(self) -> ConstraintSpec:
        """`JSONSchema` (llguidance's grammar of the schema) under llguidance, else the schema's `Regex`."""
        if self._grammar is not None:
            return JSONSchema(self._grammar, self.schema)
        return Regex(self._regex)

    def llg_grammar(self) -> str | None:
        """Deprecated (goes in the next release): `constraint()`, a `JSONSchema` under llguidance."""
        warnings.warn("JSONSchemaFormat.llg_grammar() is deprecated; use constraint()", DeprecationWarning, stacklevel=2)
        return self._grammar

    def n_free_fields(self) -> int:
        """Free-text fields (strings, unbounded numbers), arrays and free objects counted as several."""
        return self._free

    def max_tokens(self) -> int:
        """The whole-output budget: given, or every free field's budget plus room for the structure (under
        llguidance the schema's own length stands in for the regex's; the engine clamps it to the context left)."""
        if self._max_tokens:
            return self._max_tokens
        if self._grammar is not None:
            return self._free * self.field_tokens + 32 + len(llg_schema.dumps(self.schema)) // 2
        return super().max_tokens()

    def parse(self, text: str) -> SchemaVerdict:
        """The first JSON value in `text` that conforms to the schema; else `ParseError` with the first violation."""
        values = _json_values(text)
        if not values:
            raise ParseError(self.kind, "no JSON value found", text)
        first_err = None
        for v in values:
            err = validate(v, self.schema, self.schema)
            if err is None:
                return SchemaVerdict(value=v)
            first_err = first_err or err
        raise ParseError(self.kind, f"does not match the schema: {first_err}", text)

    def normalise(self, verdict: Any) -> float | None:
        """No score: a schema carries no scale."""
        return None

    def value(self, verdict: Any) -> Any:
        """The parsed JSON value."""
        return verdict.value

    def params(self) -> dict[str, Any]:
        """The schema itself (part of the cache key), the field budget and the output budget if given."""
        p: dict[str, Any] = {"schema": self.schema, "field_tokens": self.field_tokens}
        if self._max_tokens is not None:
            p["max_tokens"] = self._max_tokens
        if self.expressed != "automaton":  # the automaton's keys are as they always were
            p["constraint"] = self.expressed
        return p

    def describe(self) -> str:
        """`json_schema(<title or digest>, field_tokens=N)`: short, unlike the schema."""
        return f"json_schema({self.name or self.digest}, field_tokens={self.field_tokens})"


__all__ = ["CLIENT_CONSTRAINT", "CONSTRAINTS", "JSONSchemaFormat", "SchemaError", "SchemaVerdict", "validate"]
