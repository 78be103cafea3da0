"""JSON schema -> regex with token budgets: the `json_schema` format's constraint on the automaton path
(`constraint="automaton"`), built here rather than by outlines-core's schema builder so that:

  * strings are unbounded in the regex and bounded in TOKENS by the decode loop (`field_tokens` per
    free field, `max_tokens` in all) - `maxLength`/`maxItems` are honoured that way, never as
    character counts, which explode the automaton (maxLength 1000 -> 373 MB);
  * integer and number bounds are honoured (outlines-core ignores them): a closed range of up to
    2000 integers is enumerated, like the judges' score ranges (`multipleOf` 0.1/0.01/0.001 on a
    bounded number: that many decimals); `maxItems` up to 64 is a counted repetition of items;
  * every declared property is written, in the schema's order (valid whether or not it is required,
    and no combinatorial alternatives for optional properties);
  * what cannot be honoured is refused with `SchemaError` naming the feature and its place
    (`$ref` cycles, `patternProperties`, `pattern`, `uniqueItems`, `if`/`then`, `not`, ...), never
    silently dropped; schemas past the size limits (depth, properties, enum values, regex length) are
    refused before anything is compiled.

`SchemaCompiler(schema).regex(schema)` gives the regex; `.free` counts the free fields it budgets. It lives
in formats (not constraints) because it writes the formats' own regex vocabulary (`JSON_STR`, `NumberRange`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import InputError
from .base import JSON_STR, NumberRange

MAX_SCHEMA_BYTES = 64 * 1024
MAX_DEPTH = 12
MAX_PROPERTIES = 256
MAX_ENUM_VALUES = 1000
MAX_LITERAL_CHARS = 20_000
MAX_REGEX_CHARS = 100_000
MAX_EXPANSION_CHARS = (MAX_DEPTH + 2) * MAX_REGEX_CHARS  # all pieces built while expanding, together (a work bound)
MAX_REF_EXPANSIONS = 2_000  # $refs followed while expanding one schema
MAX_BRANCHES = 128  # schemas in one anyOf/oneOf (a tool_choice "required" over MAX_TOOLS tools fits)
MAX_MIN_ITEMS = 64
MAX_MAX_ITEMS = 64  # maxItems up to this is a counted repetition of items; above, only the token budget bounds it
DECIMAL_STEPS = {1: 0.1, 2: 0.01, 3: 0.001}  # multipleOf on a bounded number: that many decimals
MAX_MIN_LENGTH = 64
ARRAY_ITEMS_BUDGETED = 8  # free fields an array is budgeted for (the whole-output budget still applies)

UNSUPPORTED = (
    "patternProperties",
    "propertyNames",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "prefixItems",
    "uniqueItems",
    "pattern",
    "minProperties",
    "maxProperties",
    "$dynamicRef",
    "$recursiveRef",
)
STRING_FORMATS = {  # the formats outlines-core spells out too (RFC 3339 date/time, RFC 4122 uuid)
    "date-time": r'"(-?(?:[1-9][0-9]*)?[0-9]{4})-(1[0-2]|0[1-9])-(3[01]|0[1-9]|[12][0-9])T(2[0-3]|[01][0-9]):([0-5][0-9]):'
    r'([0-5][0-9])(\.[0-9]{3})?(Z)?"',
    "date": r'"(?:\d{4})-(?:0[1-9]|1[0-2])-(?:0[1-9]|[1-2][0-9]|3[0-1])"',
    "time": r'"(2[0-3]|[01][0-9]):([0-5][0-9]):([0-5][0-9])(\.[0-9]+)?(Z)?"',
    "uuid": r'"[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{12}"',
}
INTEGER = r"-?(0|[1-9][0-9]*)"
NUMBER = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"
STRING = '"' + JSON_STR + '"'
SEP = ", "  # between members; ": " between a key and its value (the spacing judges' formats use)


class SchemaError(InputError):
    """A JSON schema that cannot be honoured by construction (the message names the feature and where).
    `unimplemented`: the keywords the constraint compiler refused the schema for, as data (read where the
    compiler answered, `llg_schema`), so a caller that relaxes them never searches the message; empty when
    the refusal is about something else."""

    def __init__(self, message: str, *, unimplemented: frozenset[str] = frozenset()):
        super().__init__(message)
        self.unimplemented = unimplemented


def _lit(value: Any) -> str:
    return re.escape(json.dumps(value, ensure_ascii=False))


class SchemaCompiler:
    """Schema -> regex, with the limits; counts the free fields for the token budget."""

    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.free = 0
        self.props = 0
        self.enum_values = 0
        self.literal_chars = 0
        self.expanded = 0  # characters of every piece built so far (bounded while growing, never after)
        self.ref_expansions = 0

    def grow(self, n: int, where: str) -> None:
        """Count `n` more characters built at `where`; `SchemaError` once a bound is passed."""
        self.check(n, where)
        self.expanded += n
        if self.expanded > MAX_EXPANSION_CHARS:
            raise self.fail(where, f"expanding it builds more than {MAX_EXPANSION_CHARS} characters; fewer branches or $refs")

    def check(self, n: int, where: str) -> None:
        """`SchemaError` when a piece of `n` characters would pass the regex limit (checked before it is built)."""
        if n > MAX_REGEX_CHARS:
            raise self.fail(
                where,
                f"expands to a constraint of more than {MAX_REGEX_CHARS} characters; fewer enum values, branches or "
                "$refs, or a flatter schema",
            )

    def join(self, parts: list[str], sep: str, where: str, extra: int = 0) -> str:
        """`sep.join(parts)`, refused before it is built when it would pass the regex limit."""
        self.check(sum(map(len, parts)) + len(sep) * max(0, len(parts) - 1) + extra, where)
        return sep.join(parts)

    def fail(self, where: str, what: str) -> SchemaError:
        return SchemaError(f"response schema at {where}: {what}")

    def resolve(self, ref: str, where: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise self.fail(where, f"$ref {ref!r} is not a local reference (#/$defs/NAME); inline it")
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise self.fail(where, f"$ref {ref!r} points nowhere; define it under $defs")
            node = node[part]
        if not isinstance(node, dict):
            raise self.fail(where, f"$ref {ref!r} is not a schema object")
        return node

    def regex(self, s: Any, where: str = "$", depth: int = 0, refs: tuple[str, ...] = (), mult: int = 1) -> str:
        out = self._regex(s, where, depth, refs, mult)
        self.grow(len(out), where)
        return out

    def _regex(self, s: Any, where: str, depth: int, refs: tuple[str, ...], mult: int) -> str:
        if depth > MAX_DEPTH:
            raise self.fail(where, f"nesting deeper than {MAX_DEPTH} levels; flatten the schema")
        if s is True or s == {}:
            return self.any_value(where, depth, mult)
        if not isinstance(s, dict):
            raise self.fail(where, f"expected a schema object, got {json.dumps(s)[:60]}")
        bad = next((k for k in UNSUPPORTED if k in s), None)
        if bad is not None:
            raise self.fail(where, f"'{bad}' cannot be honoured by constrained decoding; remove it from the schema")
        if "$ref" in s:
            ref = s["$ref"]
            if not isinstance(ref, str):
                raise self.fail(where, f"$ref must be a string (#/$defs/NAME), got {json.dumps(ref)[:60]}")
            if ref in refs:
                raise self.fail(where, f"$ref cycle through {ref!r} (a recursive schema) cannot be constrained")
            self.ref_expansions += 1
            if self.ref_expansions > MAX_REF_EXPANSIONS:
                raise self.fail(where, f"more than {MAX_REF_EXPANSIONS} $ref expansions; reference fewer definitions")
            return self.regex(self.resolve(ref, where), where, depth + 1, (*refs, ref), mult)
        if "const" in s:
            return self.literal([s["const"]], where)
        if "enum" in s:
            if not isinstance(s["enum"], list) or not s["enum"]:
                raise self.fail(where, "enum must be a non-empty list")
            return self.literal(s["enum"], where)
        for key in ("anyOf", "oneOf"):
            if key in s:
                subs = s[key]
                if not isinstance(subs, list) or not subs:
                    raise self.fail(where, f"{key} must be a non-empty list")
                if len(subs) > MAX_BRANCHES:
                    raise self.fail(where, f"{key} has {len(subs)} schemas, more than {MAX_BRANCHES}; merge some")
                branches: list[str] = []
                size = 0
                for i, x in enumerate(subs):
                    branches.append(self.regex(x, f"{where}.{key}[{i}]", depth + 1, refs, mult))
                    size += len(branches[-1]) + 1
                    if size > MAX_REGEX_CHARS:
                        self.check(size, where)  # refused now, before the other branches are built
                return "(" + self.join(branches, "|", where, 2) + ")"
        if "allOf" in s:
            subs = s["allOf"]
            if not isinstance(subs, list) or len(subs) != 1:
                raise self.fail(where, "allOf with more than one schema cannot be constrained; merge them into one")
            return self.regex(subs[0], f"{where}.allOf[0]", depth + 1, refs, mult)
        t = s.get("type")
        if isinstance(t, list):
            if not t:
                raise self.fail(where, "type must not be an empty list")
            if len(t) > 8:
                raise self.fail(where, "type lists at most the 7 JSON types")
            return "(" + self.join([self.regex({**s, "type": x}, where, depth, refs, mult) for x in t], "|", where, 2) + ")"
        if t is None:
            if "properties" in s:
                t = "object"
            elif "items" in s:
                t = "array"
            elif "multipleOf" not in s:
                return self.any_value(where, depth, mult)
        if "multipleOf" in s and t not in ("number", "integer"):
            raise self.fail(where, f"multipleOf on a {t} cannot be constrained; remove it")
        if t == "object":
            return self.object(s, where, depth, refs, mult)
        if t == "array":
            return self.array(s, where, depth, refs, mult)
        if t == "string":
            return self.string(s, where, mult)
        if t == "integer":
            return self.integer(s, where, mult)
        if t == "number":
            return self.number(s, where, mult)
        if t == "boolean":
            return "(true|false)"
        if t == "null":
            return "null"
        raise self.fail(where, f"unknown type {t!r}")

    def literal(self, values: list[Any], where: str) -> str:
        self.enum_values += len(values)
        if self.enum_values > MAX_ENUM_VALUES:
            raise self.fail(where, f"more than {MAX_ENUM_VALUES} enum/const values in the schema")
        lits = [_lit(v) for v in values]
        self.literal_chars += sum(map(len, lits))
        if self.literal_chars > MAX_LITERAL_CHARS:
            raise self.fail(where, f"enum/const values longer than {MAX_LITERAL_CHARS} characters in all")
        if all(isinstance(v, str) for v in values):  # "(yes|no)": the quotes once, as the judges' formats write it
            return '"(' + "|".join(re.escape(json.dumps(v, ensure_ascii=False)[1:-1]) for v in values) + ')"'
        return "(" + "|".join(lits) + ")"

    def object(self, s: dict[str, Any], where: str, depth: int, refs: tuple[str, ...], mult: int) -> str:
        props = s.get("properties") or {}
        if not isinstance(props, dict):
            raise self.fail(where, "properties must be an object")
        required = s.get("required") or []
        missing = [r for r in required if r not in props]
        if missing and s.get("additionalProperties") is False:
            raise self.fail(where, f"required {missing[0]!r} is not among the properties")
        if not props:
            extra = s.get("additionalProperties", True)
            if extra is False:  # no properties and nothing else allowed: the empty object
                return r"\{\}"
            value = (
                self.any_value(where + ".*", depth + 1, mult * ARRAY_ITEMS_BUDGETED)
                if extra in (True, None)
                else self.regex(extra, where + ".*", depth + 1, refs, mult * ARRAY_ITEMS_BUDGETED)
            )
            self.free += mult * ARRAY_ITEMS_BUDGETED  # the keys
            member = STRING + ": " + value
            return r"\{(" + member + "(" + SEP + member + ")*)?" + r"\}"
        self.props += len(props)
        if self.props > MAX_PROPERTIES:
            raise self.fail(where, f"more than {MAX_PROPERTIES} properties in the schema")
        parts: list[str] = []
        size = 0
        for k, v in props.items():
            parts.append(_lit(str(k)) + ": " + self.regex(v, f"{where}.{k}", depth + 1, refs, mult))
            size += len(parts[-1]) + len(SEP)
            if size > MAX_REGEX_CHARS:
                self.check(size, where)
        return r"\{" + self.join(parts, SEP, where, 4) + r"\}"

    def array(self, s: dict[str, Any], where: str, depth: int, refs: tuple[str, ...], mult: int) -> str:
        items = s.get("items", True)
        lo = int(s.get("minItems", 0) or 0)
        if lo > MAX_MIN_ITEMS:
            raise self.fail(where, f"minItems {lo} > {MAX_MIN_ITEMS} cannot be constrained compactly; lower it")
        hi = s.get("maxItems")
        if hi is not None and (not isinstance(hi, int) or isinstance(hi, bool) or hi < lo):
            raise self.fail(where, f"maxItems {hi!r} must be an integer >= minItems ({lo})")
        if hi is not None and hi > MAX_MAX_ITEMS:
            hi = None  # a long list is bounded by the output's token budget alone
        if hi == 0:
            return r"\[\]"
        item = self.regex(items, where + "[]", depth + 1, refs, mult * (hi or ARRAY_ITEMS_BUDGETED))
        more = "*" if hi is None else "{0," + str(hi - max(lo, 1)) + "}"
        self.check((len(item) + len(SEP)) * (max(lo, 1) + 1), where)  # before the items are repeated
        if lo == 0:
            return r"\[(" + item + "(" + SEP + item + ")" + more + ")?" + r"\]"
        tail = "" if hi == lo else "(" + SEP + item + ")" + more
        return r"\[" + SEP.join([item] * lo) + tail + r"\]"

    def string(self, s: dict[str, Any], where: str, mult: int) -> str:
        fmt = s.get("format")
        if fmt is not None:
            if fmt in STRING_FORMATS:
                return STRING_FORMATS[fmt]
            # other formats (email, uri, ...) are annotations in JSON Schema; the text stays free
        lo = int(s.get("minLength", 0) or 0)
        if lo > MAX_MIN_LENGTH:
            raise self.fail(where, f"minLength {lo} > {MAX_MIN_LENGTH} cannot be constrained compactly; lower it")
        self.free += mult
        if lo == 0:
            return STRING
        char = JSON_STR[1:-2]  # one JSON string character (JSON_STR is "(...)*")
        return '"' + "(" + char + "){" + str(lo) + ",}" + '"'

    def integer(self, s: dict[str, Any], where: str, mult: int) -> str:
        if s.get("multipleOf") not in (None, 1):
            raise self.fail(where, "multipleOf on an integer cannot be constrained (only 1); remove it")
        lo, hi = _bounds(s, True, where)
        if lo is None and hi is None:
            self.free += mult
            return INTEGER
        if hi is None and lo in (0, 1):
            self.free += mult
            return "(0|[1-9][0-9]*)" if lo == 0 else "[1-9][0-9]*"
        if lo is None or hi is None:
            raise self.fail(
                where,
                "an integer bound on one side only (other than minimum 0 or 1) cannot be constrained; give minimum and maximum",
            )
        try:
            return NumberRange(lo, hi, 0).regex()
        except InputError as e:  # NumberRange speaks of judges' score ranges; here it is the schema's bounds
            raise self.fail(where, str(e).replace("score range", "minimum..maximum range", 1)) from None

    def number(self, s: dict[str, Any], where: str, mult: int) -> str:
        lo, hi = _bounds(s, False, where)
        step = s.get("multipleOf")
        decimals = 3
        if step is not None:
            decimals = next((d for d, v in DECIMAL_STEPS.items() if _is_num(step) and abs(step - v) < 1e-12), -1)
            if _is_num(step) and step == 1:
                decimals = 0
            if decimals < 0 or lo is None or hi is None:
                raise self.fail(
                    where, "multipleOf on a number is honoured only as 1, 0.1, 0.01 or 0.001 with minimum and maximum; change it"
                )
        if lo is None and hi is None:
            self.free += mult
            return NUMBER
        if lo is None or hi is None or lo != int(lo) or hi != int(hi):
            raise self.fail(where, "number bounds must be whole numbers on both sides (minimum and maximum) to be constrained")
        try:
            return NumberRange(lo, hi, decimals).regex()
        except InputError as e:  # NumberRange speaks of judges' score ranges; here it is the schema's bounds
            raise self.fail(where, str(e).replace("score range", "minimum..maximum range", 1)) from None

    def any_value(self, where: str, depth: int, mult: int) -> str:
        """Any JSON value, nested at most two levels (arbitrary objects and arrays)."""
        self.free += mult * ARRAY_ITEMS_BUDGETED
        scalar = "(" + "|".join((STRING, NUMBER, "true", "false", "null")) + ")"
        value = scalar
        for _ in range(2):
            member = STRING + ": " + value
            obj = r"\{(" + member + "(" + SEP + member + ")*)?" + r"\}"
            arr = r"\[(" + value + "(" + SEP + value + ")*)?" + r"\]"
            value = "(" + "|".join((scalar, obj, arr)) + ")"
        return value


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _bounds(s: dict[str, Any], integer: bool, where: str) -> tuple[float | None, float | None]:
    """(minimum, maximum) with integer exclusive bounds made inclusive; exclusive number bounds are refused."""
    lo, hi = s.get("minimum"), s.get("maximum")
    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        if s.get(key) is not None and not integer:
            raise SchemaError(
                f"response schema at {where}: {key} on a number cannot be constrained; use "
                f"{'minimum' if key == 'exclusiveMinimum' else 'maximum'}"
            )
    if s.get("exclusiveMinimum") is not None:
        lo = s["exclusiveMinimum"] + 1
    if s.get("exclusiveMaximum") is not None:
        hi = s["exclusiveMaximum"] - 1
    return lo, hi
