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
from typing import Any

from ..errors import InputError

JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
FREE_TYPES = ("string", "number", "integer", "array", "object")
MAX_FREE_FIELDS = 64  # free fields a whole-output budget is sized for (the context still clamps it)


def bounds(schema: Any, depth_limit: int, props_limit: int, enum_limit: int, error: type[InputError]) -> int:
    """Check the size bounds (nesting depth, properties, enum/const values) and count the free fields."""
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
            props += len(s["properties"])
            if props > props_limit:
                raise error(f"response schema at {where}: more than {props_limit} properties in the schema; split it")
        if "enum" in s or "const" in s:
            enums += len(s["enum"]) if isinstance(s.get("enum"), list) else 1
            if enums > enum_limit:
                raise error(f"response schema at {where}: more than {enum_limit} enum/const values in the schema")
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
COMBINERS = ("allOf", "anyOf", "oneOf", "$ref", "patternProperties", "additionalProperties", "unevaluatedProperties")


def closed(s: Any, merged: bool = False) -> Any:
    """A copy of the schema where an object that declares `properties` and says nothing about other keys
    (no `additionalProperties`, no combiner beside them) allows only those: pydantic models and most
    client schemas leave it open, and a small model then invents keys until the budget ends. Every output
    of the copy is valid against the original (it only narrows what may be written)."""
    if isinstance(s, list):
        return [closed(x, merged) for x in s]
    if not isinstance(s, dict):
        return s
    out: dict[str, Any] = {}
    for k, v in s.items():
        if k in NAMED and isinstance(v, dict):  # name -> schema maps: each value is a schema, the map is not
            out[k] = {name: closed(sub) for name, sub in v.items()}
        elif k in ("enum", "const", "default", "examples", "required"):
            out[k] = v
        else:
            out[k] = closed(v, merged=k == "allOf")  # allOf's members are merged: each must stay open
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


def grammar(schema: dict[str, Any], error: type[InputError]) -> str:
    """llguidance's grammar for `schema` (`closed`), validated; `error` naming what llguidance cannot honour."""
    from llguidance import LLMatcher

    try:
        g = LLMatcher.grammar_from_json_schema(closed(schema), defaults=JSON_OPTIONS)  # type: ignore[arg-type]
    except ValueError as e:
        raise error(f"response schema is not a JSON schema object ({one_line(str(e))})") from None
    is_error, messages = LLMatcher.validate_grammar_with_warnings(g)
    if is_error:
        msg = one_line(messages[0] if messages else "rejected")
        if msg.startswith("Unimplemented keys"):
            msg += " cannot be honoured by constrained decoding; remove them from the schema"
        raise error(f"response schema: {msg}")
    return g


def one_line(msg: str) -> str:
    """A message on one line, at most 300 characters."""
    return " ".join(msg.split())[:300]


def lark_grammar(lark: str, error: type[InputError]) -> str:
    """llguidance's grammar for a Lark grammar (llguidance's dialect), validated."""
    from llguidance import LLMatcher

    g = LLMatcher.grammar_from_lark(lark)
    is_error, messages = LLMatcher.validate_grammar_with_warnings(g)
    if is_error:
        raise error(f"grammar: {one_line(messages[0] if messages else 'rejected')}")
    return g


def dumps(schema: Any) -> str:
    """Canonical JSON of a schema (sorted keys)."""
    return json.dumps(schema, sort_keys=True, ensure_ascii=False)
