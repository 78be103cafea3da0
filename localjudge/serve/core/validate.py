"""Checks at the protocol boundary, before any constraint engine sees a request: text that cannot be
encoded, and JSON schemas with wrong-typed keywords or `$ref` loops.

Every schema a request carries (`response_format`'s, and every tool's `parameters` in every
`tool_choice` mode, even "auto" and "none" where nothing is compiled) is checked here, whichever
compiler (the regex builder or llguidance) builds it later:

  * against its draft's metaschema (`jsonschema`'s `check_schema`; 2020-12 unless `$schema` names
    another), which catches `minItems: "x"`, `required: 5`, `format: ["x"]`, `enum: 5`, ...;
  * by this module's own type checks of the keywords the server reads (numbers that are not booleans,
    counts that are non-negative integers, `$ref` a string), whatever the draft allows;
  * for `$ref` chains that loop without descending into a value (`{"$ref": "#"}`, an `anyOf` that
    refers to itself), which no validator can walk;
  * for chains of subschemas and `$ref`s longer than `constraints.llg_bounds.MAX_REF_DEPTH` (first, so the
    recursive walks here and llguidance's never see one).

A lone surrogate (`"\\ud800"`, which JSON allows and UTF-8 cannot encode) anywhere in the body is
refused, naming where it is. Each failure is a 400 naming the parameter.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ... import jsonio
from ...constraints import llg_bounds, schema_graph
from ...constraints.pointer import resolve as _resolve
from ...formats.json_schema import SchemaError
from .errors import APIError, bad_request

_SURROGATE = re.compile("[\ud800-\udfff]")
_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
_SCHEMA_MAPS = schema_graph.SCHEMA_MAPS
_SCHEMA_LISTS = schema_graph.SCHEMA_LISTS
_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}
_CHECKED: OrderedDict[str, str | None] = OrderedDict()  # schema digest -> problem (None: fine), last 256
_LOCK = threading.Lock()  # requests are planned in worker threads


def path(parts: list[Any]) -> str:
    """`["messages", 0, "content"]` -> `messages[0].content`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def check_text(body: Any) -> None:
    """A 400 naming the first place in the request body that holds a lone surrogate (key or value)."""
    stack: list[tuple[Any, list[Any]]] = [(body, [])]
    while stack:
        node, at = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                where = path(at) or "body"
                raise bad_request(
                    f"{where}: holds a lone UTF-16 surrogate (such as \\ud800), which is not text; send valid Unicode",
                    param=path(at[:1]) or None,
                )
        elif isinstance(node, dict):
            for k, v in node.items():
                if _SURROGATE.search(k):
                    raise bad_request(f"{path(at) or 'body'}: a key holds a lone UTF-16 surrogate; send valid Unicode")
                stack.append((v, [*at, k]))
        elif isinstance(node, list):
            stack.extend((v, [*at, i]) for i, v in enumerate(node))


def check_schema(schema: Any, param: str) -> None:
    """A 400 naming `param` and the keyword when `schema` is not a well-typed JSON schema or loops on `$ref`."""
    if not isinstance(schema, (dict, bool)):
        raise bad_request(f"{param}: must be a JSON schema object, got {type(schema).__name__}", param=param)
    from ...formats.llg_schema import LLG_MAX_SCHEMA_BYTES as MAX_SCHEMA_BYTES  # the automaton's smaller bound is its own

    try:
        blob = json.dumps(schema, sort_keys=True, ensure_ascii=False)
    except RecursionError:
        raise bad_request(f"{param}: the schema nests too deeply; flatten it", param=param) from None
    if len(blob) > MAX_SCHEMA_BYTES:
        raise bad_request(f"{param}: the schema is {len(blob)} bytes, more than {MAX_SCHEMA_BYTES}; simplify it", param=param)
    try:  # the chain of $refs and subschemas, before this module's own (recursive) walks and any native code
        llg_bounds.check_schema(schema, SchemaError, where=param)
    except SchemaError as e:
        raise bad_request(str(e), param=param) from None
    key = hashlib.sha256(blob.encode()).hexdigest()
    with _LOCK:
        known = key in _CHECKED
        problem = _CHECKED.get(key)
        if known:
            _CHECKED.move_to_end(key)
    if not known:
        try:
            problem = _problem(schema)
        except RecursionError:
            problem = "nests too deeply; flatten it"
        with _LOCK:
            _CHECKED[key] = problem
            while len(_CHECKED) > 256:
                _CHECKED.popitem(last=False)
    if problem is not None:
        raise APIError(400, f"{param}: invalid JSON schema: {problem}", param=param, code="invalid_schema")


def _problem(schema: Any) -> str | None:
    if isinstance(schema, bool):
        return None
    own = _types(schema, "$")
    if own is not None:
        return own
    from jsonschema import Draft202012Validator, validators  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    try:
        cls = validators.validator_for(schema, default=Draft202012Validator)
    except Exception:  # noqa: BLE001 - an odd $schema value: judge by 2020-12
        cls = Draft202012Validator
    try:
        cls.check_schema(schema)
    except SchemaError as e:
        return f"at {e.json_path}: {str(e.message)[:200]}"
    return _ref_loop(schema)


def _bad(where: str, key: str, want: str, value: Any) -> str:
    return f"at {where}.{key}: must be {want}, got {json.dumps(value, ensure_ascii=False)[:60]}"


def _types(s: Any, where: str) -> str | None:
    """The first wrong-typed keyword the server reads, at every schema position `schema_graph` reaches (nesting,
    and every local `$ref`'s target wherever it sits)."""
    try:
        positions = schema_graph.build(s).positions
    except schema_graph.BadRef as e:
        return str(e)
    for node, at in positions:
        at = where + at[1:] if at.startswith("$") else at
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            return f"at {at}: expected a schema object, got {json.dumps(node, ensure_ascii=False)[:60]}"
        for k in _NUMBERS:
            v = node.get(k)
            if k in node and (isinstance(v, bool) or not isinstance(v, (int, float))):
                return _bad(at, k, "a number", v)
        for k in _COUNTS:
            v = node.get(k)
            if k in node and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                return _bad(at, k, "a non-negative integer", v)
        if "$ref" in node and not isinstance(node["$ref"], str):
            return _bad(at, "$ref", "a string such as #/$defs/NAME", node["$ref"])
        if "format" in node and not isinstance(node["format"], str):
            return _bad(at, "format", "a string", node["format"])
        if "required" in node and not (isinstance(node["required"], list) and all(isinstance(x, str) for x in node["required"])):
            return _bad(at, "required", "a list of property names", node["required"])
        if "enum" in node and not isinstance(node["enum"], list):
            return _bad(at, "enum", "a list", node["enum"])
        t = node.get("type")
        if "type" in node and not (
            (isinstance(t, str) and t in _TYPES)
            or (isinstance(t, list) and t and all(isinstance(x, str) and x in _TYPES for x in t))
        ):
            return _bad(at, "type", "one of " + ", ".join(sorted(_TYPES)) + " (or a list of them)", t)
        for k in _SCHEMA_MAPS:
            if k in node and not isinstance(node[k], dict):
                return _bad(at, k, "an object of schemas", node[k])
        for k in _SCHEMA_LISTS:
            if k in node and (not isinstance(node[k], list) or not node[k]):
                return _bad(at, k, "a non-empty list of schemas", node[k])
    return None


def _refs(s: Any) -> set[str]:
    out: set[str] = set()
    stack = [s]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                out.add(node["$ref"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _ref_loop(root: Any) -> str | None:
    """A `$ref` chain that comes back to itself without descending into a value (through `$ref` and
    `anyOf`/`oneOf`/`allOf` only): a validator walking it would never stop."""
    done: set[str] = set()

    def walk(node: Any, chain: tuple[str, ...]) -> str | None:
        if not isinstance(node, dict):
            return None
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in chain:
                return f"$ref {ref!r} refers back to itself ({' -> '.join([*chain[chain.index(ref) :], ref])}); a schema cannot be its own value"
            if ref not in done:
                found = walk(_resolve(root, ref), (*chain, ref))
                if found:
                    return found
                done.add(ref)
        for k in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(k) or []:
                found = walk(sub, chain)
                if found:
                    return found
        return None

    for ref in sorted(_refs(root)):
        found = walk({"$ref": ref}, ())
        if found:
            return found
    return walk(root, ())


# ------------------------------------------------------------------- answers to relaxed schemas (serve/core/checked.py)


@dataclass(frozen=True)
class Problem:
    """How an answer breaks a schema: the keyword, where (a JSON pointer into the answer), and the message."""

    keyword: str
    where: str
    message: str


def _validator(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator, validators

    cls = validators.validator_for(schema, default=Draft202012Validator)
    return cls(schema)  # `format` is an annotation here, as the drafts' default vocabulary has it


def answer_problem(schema: dict[str, Any], text: str) -> Problem | None:
    """What is wrong with the answer `text` against `schema` (the `jsonschema` package; the schema's own
    `$schema` draft or 2020-12), None when it validates. An answer that is not JSON is a problem of `type`."""
    from jsonschema.exceptions import best_match

    try:
        value = jsonio.loads(text, max_depth=jsonio.PARSER_DEPTH)
    except (ValueError, RecursionError) as e:
        return Problem("type", "/", f"not one JSON value ({str(e)[:80]})")
    try:
        error = best_match(_validator(schema).iter_errors(value))
    except RecursionError:
        return Problem("$ref", "/", "the answer nests deeper than it can be checked")
    except Exception as e:  # noqa: BLE001 - a $ref the validator cannot resolve: nothing can be vouched for
        return Problem("$ref", "/", f"the schema cannot be checked ({type(e).__name__})")
    if error is None:
        return None
    where = "/" + "/".join(str(x) for x in error.absolute_path)
    return Problem(str(error.validator), where, str(error.message)[:200])


def repair(schema: dict[str, Any], text: str) -> str | None:
    """The answer with what can be repaired without touching a valid part repaired, or None when nothing can
    be: each array that breaks `uniqueItems` loses its repeated items, when it keeps its `minItems` (up to
    16 arrays, one at a time, rechecked after each)."""
    try:
        value = jsonio.loads(text, max_depth=jsonio.PARSER_DEPTH)
    except (ValueError, RecursionError):
        return None
    changed = False
    for _ in range(16):
        try:
            errors = [e for e in _validator(schema).iter_errors(value) if e.validator == "uniqueItems"]
        except Exception:  # noqa: BLE001 - see answer_problem
            return None
        if not errors:
            break
        e = errors[0]
        items = e.instance
        unique: list[Any] = []
        for x in items:
            if not any(_same(x, y) for y in unique):
                unique.append(x)
        floor = e.schema.get("minItems", 0) if isinstance(e.schema, dict) else 0
        if len(unique) < floor:
            return None
        items[:] = unique  # the instance is the array inside `value`: repaired in place
        changed = True
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": ")) if changed else None


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON Schema's `uniqueItems` compares (1 == 1.0, but true != 1)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or (
        type(a) is not bool and type(b) is not bool and isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b
    )
