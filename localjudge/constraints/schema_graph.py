"""A JSON schema as a graph of schema positions joined by nesting and by every local `$ref`, resolved wherever it
points: the one walk every bound and type check of a client's schema reads.

Walking a fixed set of keywords and following a `$ref` only when its target was already walked lets a chain
hide: `{"$ref": "#/x/a0", "x": {"a0": {"items": {"$ref": "#/x/a1"}}, ...}}` puts 1,500 links under `x`, a
keyword no check walks, and llguidance followed them all until its stack overflowed (issue 43). Here a `$ref`
is resolved (`pointer.resolve`) wherever it points, and its target is walked as a schema, whatever keyword it
sits under; a local `$ref` whose target is not a schema (a number, a string, a list) is refused in one line
(`BadRef`), as no compiler can read it as one. A `$ref` that leads nowhere or is not local (`#...`) is left to
the compiler, which refuses it with its own message. Iterative throughout: a schema's nesting never recurses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .pointer import resolve

# keywords whose value is a map of name -> schema
SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
# keywords whose value is a list of schemas
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
# keywords whose value is one schema (draft-4 `items` may be a list of them)
SCHEMA_ONE = (
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
)


class BadRef(ValueError):
    """A local `$ref` whose target is not a schema (one line: where, the pointer, and what it points at)."""


@dataclass
class SchemaGraph:
    """Every schema position reachable from the root by nesting or `$ref`: `positions` lists each value at a
    schema position with where it was first reached (`$.properties.a`, or the `$ref` pointer that reached it),
    dict or not (a type check reports a non-schema there); `edges` joins each schema object (by `id`) to the
    schema objects under it and to its `$ref`'s target."""

    root: Any
    positions: list[tuple[Any, str]] = field(default_factory=list)
    edges: dict[int, list[int]] = field(default_factory=dict)


def _what(value: Any) -> str:
    """A value's kind, as a message names it."""
    kind = {str: "a string", list: "a list", int: "a number", float: "a number", type(None): "null"}.get(type(value))
    return kind or type(value).__name__


def build(root: Any) -> SchemaGraph:
    """The graph of `root` (see `SchemaGraph`); `BadRef` naming the first local `$ref` that points at a value that
    is not a schema."""
    g = SchemaGraph(root)
    seen: set[int] = set()
    todo: list[tuple[Any, str]] = [(root, "$")]
    while todo:
        s, where = todo.pop()
        if isinstance(s, dict):
            if id(s) in seen:
                continue
            seen.add(id(s))
        g.positions.append((s, where))
        if not isinstance(s, dict):
            continue
        kids: list[tuple[Any, str]] = []
        for k in SCHEMA_MAPS:
            v = s.get(k)
            if isinstance(v, dict):
                kids.extend((sub, f"{where}.{k}.{name}") for name, sub in v.items())
        for k in SCHEMA_LISTS:
            v = s.get(k)
            if isinstance(v, list):
                kids.extend((sub, f"{where}.{k}[{i}]") for i, sub in enumerate(v))
        for k in SCHEMA_ONE:
            if k in s:
                v = s[k]
                if isinstance(v, list):
                    kids.extend((sub, f"{where}.{k}[{i}]") for i, sub in enumerate(v))
                else:
                    kids.append((v, f"{where}.{k}"))
        out = [id(sub) for sub, _ in kids if isinstance(sub, dict)]
        ref = s.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            target = resolve(root, ref)
            if target is not None and not isinstance(target, (dict, bool)):
                shown = json.dumps(ref, ensure_ascii=False)[:80]
                raise BadRef(f"$ref {shown} at {where} points at {_what(target)}, not a schema; point it at a schema object")
            if isinstance(target, dict):
                out.append(id(target))
                kids.insert(0, (target, ref))  # walked after the subschemas written here
        g.edges[id(s)] = out
        todo.extend(kids)  # last keyword first, as the type checks always reported (their first problem found)
    return g
