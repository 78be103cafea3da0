"""Client JSON schemas for llguidance: the static bounds, llguidance's grammar, and refusals that name the feature.

`json_schema.JSONSchemaFormat` builds its constraint here by default (`constraint="llguidance"`): the
schema goes to llguidance's own JSON-schema compiler (properties in schema order, optional
properties optional, `pattern`/`format`/`minLength`/`maxLength` as characters, recursive `$ref`,
number bounds), spaced as the judges' formats are (`", "`, `": "`, no free whitespace). The size
bounds of the automaton path (schema bytes, nesting depth, properties, enum values) are checked
first, the same for both engines; then llguidance's own validation, whose refusals (`uniqueItems`,
`not`, `if`, an unknown `format`, an unsatisfiable `enum` beside a `type`, ...) become a one-line
`SchemaError` naming the feature.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..constraints import isolation, llg_bounds
from ..constraints.relax import RELAXABLE
from ..errors import InputError
from .json_schema_regex import SchemaError

JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
FREE_TYPES = ("string", "number", "integer", "array", "object")
MAX_FREE_FIELDS = 64  # free fields a whole-output budget is sized for (the context still clamps it)


# llguidance's own bounds (issue 23): its grammar grows linearly with the schema (a $ref is one rule, an
# enum one alternation, nothing is expanded), so the totals the automaton path bounds are bounded here by
# the schema's bytes; what stays bounded is one object's properties, one enum's values and the nesting.
# Measured compiling 64 KB schemas (peak RSS over the loaded engine): 2,000 properties in 8 objects +18 MB,
# 138 ms; 9,000 enum values in 9 enums +1 MB; a 938 KB Kubernetes schema +24 MB, 238 ms.
LLG_MAX_DEPTH = 32
LLG_MAX_SCHEMA_BYTES = 1024 * 1024  # a schema's JSON text; the automaton's bound is 64 KB (its memory grows much faster)
LLG_MAX_TOTAL_PROPERTIES = 4096
LLG_MAX_TOTAL_ENUM_VALUES = 20_000


def bounds(schema: Any, depth_limit: int, props_limit: int, enum_limit: int, error: type[InputError]) -> int:
    """Check the size bounds (nesting depth, properties in one object, values in one enum, and the totals
    `LLG_MAX_TOTAL_*`) and count the free fields."""
    props = enums = free = 0

    def walk(s: Any, where: str, depth: int) -> None:
        nonlocal props, enums, free
        if depth > depth_limit:
            raise error(f"response schema at {where}: nesting deeper than {depth_limit} levels; flatten the schema")
        if isinstance(s, list):
            for i, x in enumerate(s):
                walk(x, f"{where}[{i}]", depth)
            return
        if not isinstance(s, dict):
            return
        if isinstance(s.get("properties"), dict):
            if len(s["properties"]) > props_limit:
                raise error(f"response schema at {where}: more than {props_limit} properties in one object; split it")
            props += len(s["properties"])
            if props > LLG_MAX_TOTAL_PROPERTIES:
                raise error(
                    f"response schema at {where}: more than {LLG_MAX_TOTAL_PROPERTIES} properties in the schema; split it"
                )
        if "enum" in s or "const" in s:
            n = len(s["enum"]) if isinstance(s.get("enum"), list) else 1
            if n > enum_limit:
                raise error(f"response schema at {where}: more than {enum_limit} enum/const values in one enum")
            enums += n
            if enums > LLG_MAX_TOTAL_ENUM_VALUES:
                raise error(f"response schema at {where}: more than {LLG_MAX_TOTAL_ENUM_VALUES} enum/const values in the schema")
        elif s.get("type", "object" if "properties" in s else None) in FREE_TYPES or not s.keys() & {"type", "$ref"}:
            free += 1
        for k, v in s.items():
            if k in ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas"):
                if isinstance(v, dict):
                    for name, sub in v.items():
                        walk(sub, f"{where}.{name}", depth + 1)
            elif k in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems", "not", "if", "then", "else"):
                walk(v, f"{where}.{k}", depth + 1)

    walk(schema, "$", 0)
    return max(1, min(free, MAX_FREE_FIELDS))


NAMED = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
# the `format`s llguidance constrains (probed on llguidance 1.9); any other is an annotation, as JSON Schema's
# default vocabulary has it (validators do not assert it unless asked): dropped rather than refused
LLG_FORMATS = frozenset(("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uuid"))
COMBINERS = ("allOf", "anyOf", "oneOf", "$ref", "patternProperties", "additionalProperties", "unevaluatedProperties")


def closed(s: Any, merged: bool = False, members: tuple[str, ...] = ("anyOf",)) -> Any:
    """A copy of the schema where an object that declares `properties` and says nothing about other keys
    (no `additionalProperties`, no combiner beside them) allows only those: pydantic models and most
    client schemas leave it open, and a small model then invents keys until the budget ends. Every output
    of the copy is valid against the original (it only narrows what may be written). `allOf`'s members
    are merged with their parent, and so are the `members` combiners' members beside other keywords, so
    each stays open, and so do the definitions such a member `$ref`s (two closed objects with different
    properties, merged, allow no value). `grammar` widens `members` to `oneOf` when llguidance finds the
    narrowed schema unsatisfiable (it then refuses a `oneOf` whose branches it cannot tell apart)."""
    return _closed(s, merged, merged_refs(s, members), members)


def _closed(s: Any, merged: bool, open_refs: frozenset[str], members: tuple[str, ...]) -> Any:
    if isinstance(s, list):
        return [_closed(x, merged, open_refs, members) for x in s]
    if not isinstance(s, dict):
        return s
    out: dict[str, Any] = {}
    also: list[Any] = []  # a one-branch oneOf is that branch, merged with its parent: an allOf member
    for k, v in s.items():
        if k == "format" and isinstance(v, str) and v not in LLG_FORMATS:
            continue
        if k == "oneOf" and isinstance(v, list) and len(v) == 1:
            also.append(_closed(v[0], True, open_refs, members))
        elif k in NAMED and isinstance(v, dict):  # name -> schema maps: each value is a schema, the map is not
            out[k] = {name: _closed(sub, f"#/{k}/{name}" in open_refs, open_refs, members) for name, sub in v.items()}
        elif k in ("enum", "const", "default", "examples", "required"):
            out[k] = v
        else:  # a combiner's members are merged with their parent: each stays open unless they stand alone
            joined = k == "allOf" or (k in members and (merged or _has_siblings(s)))
            out[k] = _closed(v, joined, open_refs, members)
    if also:
        out["allOf"] = [*(out["allOf"] if isinstance(out.get("allOf"), list) else []), *also]
    props = s.get("properties")
    req = s.get("required")
    required: list[Any] = req if isinstance(req, list) else []
    if (
        isinstance(props, dict)
        and props
        and not merged
        and not any(k in s for k in COMBINERS)
        and all(r in props for r in required)  # a required key not declared must stay writable
    ):
        out["additionalProperties"] = False
    return out


ANNOTATIONS = frozenset(
    (
        "allOf",
        "anyOf",
        "oneOf",
        "$defs",
        "definitions",
        "title",
        "description",
        "$comment",
        "$id",
        "$schema",
        "examples",
        "default",
    )
)


def _has_siblings(s: dict[str, Any]) -> bool:
    """Whether a schema says more than its combiners (and annotations): then their members merge with it."""
    return any(k not in ANNOTATIONS for k in s)


def merged_refs(schema: Any, members: tuple[str, ...] = ("anyOf",)) -> frozenset[str]:
    """The local `$ref`s that a member merged with its parent points at (any `allOf` member; a `members`
    combiner's member beside other keywords), directly or through definitions that are only a `$ref`."""
    refs: set[str] = set()
    defs: dict[str, Any] = {}
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, list):
            stack.extend(s)
        elif isinstance(s, dict):
            for k in ("$defs", "definitions"):
                if isinstance(s.get(k), dict):
                    defs.update({f"#/{k}/{name}": sub for name, sub in s[k].items()})
            for k in ("allOf", *members) if _has_siblings(s) else ("allOf",):
                for m in s[k] if isinstance(s.get(k), list) else []:
                    if isinstance(m, dict) and isinstance(m.get("$ref"), str):
                        refs.add(m["$ref"])
            stack.extend(v for k, v in s.items() if k not in ("enum", "const", "default", "examples"))
    todo = list(refs)
    while todo:
        sub = defs.get(todo.pop())
        if isinstance(sub, dict) and isinstance(sub.get("$ref"), str) and sub["$ref"] not in refs:
            refs.add(sub["$ref"])
            todo.append(sub["$ref"])
    return frozenset(refs)


def grammar(schema: dict[str, Any], error: type[InputError]) -> str:
    """llguidance's grammar for `schema` (`closed`), validated; `error` naming what llguidance cannot honour.
    When the narrowed copy is refused (closing objects that a combiner merges can leave no value), a wider
    copy and then the schema as sent are tried: narrowing is a help to small models, never a refusal. Under an
    `isolation.Isolator` (a server's client schemas), llguidance runs in its child process instead."""
    llg_bounds.check_schema(schema, error)  # here too: a refusal needs no child
    isolator = isolation.current()
    if isolator is not None:
        return isolator.grammar("schema", schema, error)
    return _checked_grammar(schema, error)


def grammar_here(schema: dict[str, Any], error: type[InputError]) -> str:
    """`grammar` in this process, whatever isolation is set (what an isolating child runs)."""
    llg_bounds.check_schema(schema, error)  # before any llguidance call: a deep chain overflows its stack
    return _checked_grammar(schema, error)


def _checked_grammar(schema: dict[str, Any], error: type[InputError]) -> str:
    """`grammar_here` once `schema` passed `llg_bounds.check_schema`."""
    from llguidance import LLMatcher

    msg = ""
    for variant in (closed(schema), closed(schema, members=("anyOf", "oneOf")), schema):
        try:
            g = LLMatcher.grammar_from_json_schema(variant, defaults=JSON_OPTIONS)  # type: ignore[arg-type]
        except ValueError as e:
            raise error(f"response schema is not a JSON schema object ({one_line(str(e))})") from None
        is_error, messages = LLMatcher.validate_grammar_with_warnings(g)
        if not is_error:
            return g
        msg = one_line(messages[0] if messages else "rejected")  # the last: what the schema as sent gets
    keywords = unimplemented(msg)
    if "coerce_one_of" in msg:  # llguidance's advice names its own option, which a client cannot set
        msg = (
            "oneOf whose branches may overlap cannot be made exclusive by constrained decoding; use anyOf, or make "
            "the branches distinct (e.g. a const discriminator property)"
        )
    if msg.startswith("Unimplemented keys"):
        msg += " cannot be honoured by constrained decoding; remove them from the schema"
    raise refusal(error, f"response schema: {msg}", keywords)


def unimplemented(answer: str) -> frozenset[str]:
    """The relaxable keywords (`relax.RELAXABLE`) llguidance's refusal of a schema names: the list of its
    `Unimplemented keys: ["not", ...]`, and `oneOf` when it refuses a `oneOf` (its advice names its
    `coerce_one_of` option). Read here, from llguidance's own answer, once: what goes up is the set."""
    named: set[str] = set()
    if answer.startswith("Unimplemented keys"):
        named.update(re.findall(r'"([^"\\]*)"', answer))
    if "coerce_one_of" in answer:
        named.add("oneOf")
    return frozenset(named & RELAXABLE)


def refusal(error: type[Exception], message: str, keywords: frozenset[str] = frozenset()) -> Exception:
    """`error(message)`; a `SchemaError` also carries the keywords the compiler refused (`unimplemented`)."""
    if keywords and issubclass(error, SchemaError):
        return error(message, unimplemented=keywords)
    return error(message)


def one_line(msg: str) -> str:
    """A message on one line, at most 300 characters."""
    return " ".join(msg.split())[:300]


def lark_grammar(lark: str, error: type[InputError]) -> str:
    """llguidance's grammar for a Lark grammar (llguidance's dialect), validated; first checked against
    `llg_bounds` (size, rules, reference depth), since a deep chain overflows llguidance's stack. Under an
    `isolation.Isolator`, llguidance runs in its child process instead."""
    llg_bounds.check_lark(lark, error)
    isolator = isolation.current()
    if isolator is not None:
        return isolator.grammar("lark", lark, error)
    return _checked_lark(lark, error)


def lark_grammar_here(lark: str, error: type[InputError]) -> str:
    """`lark_grammar` in this process, whatever isolation is set (what an isolating child runs)."""
    llg_bounds.check_lark(lark, error)
    return _checked_lark(lark, error)


def _checked_lark(lark: str, error: type[InputError]) -> str:
    """`lark_grammar_here` once `lark` passed `llg_bounds.check_lark`."""
    from llguidance import LLMatcher

    g = LLMatcher.grammar_from_lark(lark)
    is_error, messages = LLMatcher.validate_grammar_with_warnings(g)
    if is_error:
        raise error(f"grammar: {one_line(messages[0] if messages else 'rejected')}")
    return g


def dumps(schema: Any) -> str:
    """Canonical JSON of a schema (sorted keys)."""
    return json.dumps(schema, sort_keys=True, ensure_ascii=False)
