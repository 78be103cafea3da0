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

The strengthened copy can leave no value (a `then` at odds with closed properties): `relax(..., strengthen=
False)` only drops and loosens. Either way an answer must be checked against the original schema (with
`jsonschema`) before it is given: the copy is how to constrain, not what is valid. Pure data, no compiler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def relax(schema: Any, keywords: frozenset[str] | set[str], strengthen: bool = True) -> Relaxed:
    """`schema` with each of `keywords` (a subset of `RELAXABLE`) dropped, loosened or strengthened into an
    implying keyword (see the module docstring); the keywords actually found are recorded."""
    found: set[str] = set()
    wanted = frozenset(keywords) & RELAXABLE

    def walk(s: Any) -> Any:
        if isinstance(s, list):
            return [walk(x) for x in s]
        if not isinstance(s, dict):
            return s
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


def unimplemented(message: str) -> frozenset[str]:
    """The relaxable keywords a compiler's refusal names ("Unimplemented keys: [\"not\"]", an overlapping
    `oneOf`); empty when the refusal is about something relaxing cannot help."""
    named = {k for k in RELAXABLE if f'"{k}"' in message}
    if "oneOf" in message and ("overlap" in message or "coerce_one_of" in message):
        named.add("oneOf")
    return frozenset(named)


__all__ = ["RELAXABLE", "Relaxed", "relax", "unimplemented"]
