"""The nearest schema a grammar compiler accepts: a JSON schema with the keywords it cannot honour dropped,
loosened or turned into what implies them, and the record of what was changed.

Constrained decoding honours most of JSON Schema, not all of it: llguidance refuses `uniqueItems`, `not`,
`if`/`then`/`else`, `dependencies`, `contains`, `propertyNames`, `unevaluated*` and a `oneOf` whose
branches may overlap. `relax(schema, keywords)`
returns a copy that leaves those out, so every instance of the original is still an instance of the copy
(the copy only widens), except where a keyword is replaced by a stronger one that implies it:

  * `if`/`then` without `else` -> `then` joins the schema's `allOf` (an instance of `then` satisfies
    "if then then" whatever `if` says); with an `else`, the pair is dropped;
  * `dependencies`/`dependentRequired` naming properties -> those properties become `required` (a present
    key's dependants are then always present); `dependencies`/`dependentSchemas` naming a schema -> that
    schema joins `allOf`;
  * `oneOf` -> `anyOf` (exactly-one is checked afterwards);
  * anything else named (`uniqueItems`, `not`, `contains`, `propertyNames`, ...) is dropped.

The strengthened copy can leave no value (a `then` at odds with closed properties; an `allOf` of one
`if`/`then` per kind of document, whose `then`s all joined together ask for every kind at once). Then
`relax(..., pick=True)` keeps one pair of each such `allOf` (the one with the smallest `then`), as "its `if`
holds, with the properties `if` names present, and its `then` too" (an instance satisfies that pair whatever
the others say, and the properties present usually make the other `if`s false), and drops the other pairs;
`relax(..., strengthen=False)` only drops and loosens. Either way an answer must be checked against the original schema (with
`jsonschema`) before it is given: the copy is how to constrain, not what is valid. Pure data, no compiler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import pointer

# keywords whose value is a map of name -> schema (the map is not itself a schema)
_NAMED = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_DATA = ("enum", "const", "default", "examples", "required")  # values, never schemas
RELAXABLE = frozenset(
    (
        *("uniqueItems", "not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas", "oneOf"),
        *("contains", "minContains", "maxContains", "propertyNames", "unevaluatedProperties", "unevaluatedItems"),
    )
)


@dataclass(frozen=True)
class Relaxed:
    """A relaxed schema and the keywords it no longer constrains on (sorted; `oneOf` when one became `anyOf`)."""

    schema: Any
    keywords: tuple[str, ...]


def relax(schema: Any, keywords: frozenset[str] | set[str], strengthen: bool = True, pick: bool = False) -> Relaxed:
    """`schema` with each of `keywords` (a subset of `RELAXABLE`) dropped, loosened or strengthened into an
    implying keyword (see the module docstring; `pick`: one `if`/`then` pair of an `allOf` holding several
    is made to hold, the others dropped); the keywords actually found are recorded."""
    found: set[str] = set()
    wanted = frozenset(keywords) & RELAXABLE
    schema = _rehome(schema)

    def walk(s: Any) -> Any:
        if isinstance(s, list):
            return [walk(x) for x in s]
        if not isinstance(s, dict):
            return s
        if pick and {"if", "then"} <= wanted and isinstance(s.get("allOf"), list):
            s = {**s, "allOf": _pick_one(s["allOf"], found)}
        out: dict[str, Any] = {}
        also: list[Any] = []
        required = list(s["required"]) if isinstance(s.get("required"), list) else None
        for k, v in s.items():
            if k in _DATA:
                out[k] = v
            elif k in _NAMED and isinstance(v, dict) and not (k == "dependentSchemas" and k in wanted):
                out[k] = {name: walk(sub) for name, sub in v.items()}
            elif k not in wanted:
                out[k] = walk(v)
            else:
                found.add(k)
                if k == "oneOf" and "anyOf" in s:  # both: the loosened one joins allOf, beside the anyOf
                    also.append({"anyOf": walk(v)})
                elif k == "oneOf":
                    out["anyOf"] = walk(v)
                elif not strengthen:
                    continue
                elif k == "then" and "else" not in s and "if" in s:
                    also.append(walk(v))
                elif k in ("dependencies", "dependentRequired", "dependentSchemas") and isinstance(v, dict):
                    for dep in v.values():
                        if isinstance(dep, list):
                            required = [*(required or []), *(x for x in dep if x not in (required or []))]
                        elif isinstance(dep, dict):
                            also.append(walk(dep))
        if required is not None and required != s.get("required"):
            out["required"] = required
        if also:
            out["allOf"] = [*(out["allOf"] if isinstance(out.get("allOf"), list) else []), *also]
        return out

    return Relaxed(walk(schema), tuple(sorted(found)))


REHOMED = "localjudge_relax_ref"  # `$defs` entries holding what a `$ref` pointed at under a relaxed keyword
# the most values `_rehome` copies in all (JSONSchemaBench: 18 of 9,557 schemas copy any, at most 817; its largest
# schema holds 28,520 values)
REHOME_NODES = 200_000


def _rehome(schema: Any) -> Any:
    """`schema` with every local `$ref` whose pointer passes through a relaxable keyword (`#/allOf/0/then/$defs/x`,
    which relaxing moves or drops) pointing at a copy of its target in the root's `$defs` instead: the same
    schema, whose references still resolve once `then` has moved into `allOf` or `oneOf` became `anyOf`. Where the
    copies would hold more than `REHOME_NODES` values in all, `schema` itself (bounded work and memory for any
    client schema: one that points into a large `then` from many depths would copy it once per pointer)."""
    if not isinstance(schema, dict):
        return schema
    moved: dict[str, str] = {}

    def refs(s: Any) -> None:
        if isinstance(s, list):
            for x in s:
                refs(x)
        elif isinstance(s, dict):
            ref = s.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/") and ref not in moved:
                parts = {p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/")}
                if parts & RELAXABLE and pointer.resolve(schema, ref) is not None:
                    moved[ref] = f"#/$defs/{REHOMED}{len(moved)}"
            for k, v in s.items():
                if k not in _DATA:
                    refs(v)

    refs(schema)
    if not moved:
        return schema

    def rewrite(s: Any) -> Any:
        if isinstance(s, list):
            return [rewrite(x) for x in s]
        if not isinstance(s, dict):
            return s
        return {
            k: (moved.get(v, v) if k == "$ref" and isinstance(v, str) else v if k in _DATA else rewrite(v)) for k, v in s.items()
        }

    out = rewrite(schema)
    defs = dict(out["$defs"]) if isinstance(out.get("$defs"), dict) else {}
    copied = 0
    for ref, new in moved.items():
        target = pointer.resolve(schema, ref)
        copied += _nodes(target, REHOME_NODES - copied)
        if copied > REHOME_NODES:  # references into one large `then` at many depths: each would copy it again
            return schema  # as it was: those references dangle once relaxed, and such a variant fails to compile
        defs[new.rsplit("/", 1)[1]] = rewrite(target)
    out["$defs"] = defs
    return out


def _nodes(s: Any, most: int) -> int:
    """How many values (objects, arrays, scalars) `s` holds, counted up to just past `most`."""
    n, todo = 0, [s]
    while todo and n <= most:
        x = todo.pop()
        n += 1
        if isinstance(x, dict):
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
    return n


def _pick_one(items: list[Any], found: set[str]) -> list[Any]:
    """`items` (an `allOf`) with one of its `if`/`then` pairs (no `else`; the smallest `then`) turned into
    "`if`, naming its properties as required, and `then`", the other pairs dropped; as it was with fewer than two."""
    pairs = [i for i, x in enumerate(items) if isinstance(x, dict) and "if" in x and "then" in x and "else" not in x]
    if len(pairs) < 2:
        return items
    chosen = min(pairs, key=lambda i: (len(json.dumps(items[i]["then"], sort_keys=True)), i))
    found.update(("if", "then"))
    out = []
    for i, x in enumerate(items):
        if i not in pairs:
            out.append(x)
            continue
        rest = {k: v for k, v in x.items() if k not in ("if", "then")}
        if i == chosen:
            cond = x["if"]
            if isinstance(cond, dict) and isinstance(cond.get("properties"), dict) and "required" not in cond:
                cond = {**cond, "required": list(cond["properties"])}
            rest["allOf"] = [*(rest["allOf"] if isinstance(rest.get("allOf"), list) else []), cond, x["then"]]
        out.append(rest)
    return out


__all__ = ["RELAXABLE", "Relaxed", "relax"]
