"""A short instance of a JSON schema, read off the schema itself: the close path's candidate where closing
byte by byte is long or fails (llg.py).

The greedy close path writes whatever key sorts first, so an object with many optional properties gets
them all (`{"analytics_identifier": "", "auth_bypass_ids": [...], ...}`: 272 tokens where the required ones
need far fewer), and a request asking for fewer tokens was refused as if no answer fitted. `instance(schema)`
builds a value from the schema's own words: the required properties only (in the grammar's order), the
fewest items, the shortest enum value or branch, a string each `pattern` or `format` matches, the smallest
number in range. It is only a candidate: `llg.LLGVocab.compile` tokenizes it and keeps it as the close path
only when llguidance's matcher consumes it to an accepting state, so a wrong guess (a keyword read loosely
here, `allOf`, `not`) costs a fallback, never a path the grammar refuses. Pure data and bounded work (at most
`MAX_NODES` schemas visited, however the client's `$ref`s nest): no compiler, no clock (the same schema gives the
same instance on every machine).
"""

from __future__ import annotations

import json
import math
from typing import Any

from . import pointer
from .llg_search import FORMAT_WITNESS, witness

MAX_DEPTH = 32  # nested schemas (and $refs followed) before giving up
MAX_BRANCHES = 16  # anyOf / oneOf / enum / type alternatives compared at one place
MAX_ITEMS = 64  # minItems / minLength / minProperties larger than this are not built
MAX_NODES = 4096  # schemas visited for one instance: a client's `$ref`s can nest a value exponentially deep
MAX_TEXT = 32_768  # characters of instance text tokenized at most


class _GiveUp(Exception):
    """The schema says something this reading does not build (the caller keeps its other close paths)."""


def instance(schema: Any) -> str | None:
    """The JSON text (llguidance's separators: `, ` and `: `) of a short value `schema` allows as read here,
    or None when it cannot tell."""
    try:
        value = _Builder(schema).value(schema, 0)
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        return text if len(text) <= MAX_TEXT else None
    except (_GiveUp, RecursionError, ValueError, TypeError):
        return None


def from_grammar(grammar: str) -> str | None:
    """`instance` of the JSON schema inside an llguidance grammar document (None for a Lark grammar, several
    grammars, or a schema it cannot build)."""
    try:
        doc = json.loads(grammar)
    except (ValueError, RecursionError):
        return None
    grammars = doc.get("grammars") if isinstance(doc, dict) else None
    if not isinstance(grammars, list) or len(grammars) != 1 or not isinstance(grammars[0], dict):
        return None
    schema = grammars[0].get("json_schema")
    return instance(schema) if isinstance(schema, (dict, bool)) else None


class _Builder:
    def __init__(self, root: Any):
        self.root, self.visited = root, 0

    def value(self, s: Any, depth: int) -> Any:
        self.visited += 1
        if depth > MAX_DEPTH or self.visited > MAX_NODES:
            raise _GiveUp
        if s is True or s == {}:
            return 0
        if not isinstance(s, dict):
            raise _GiveUp
        if "$ref" in s:
            target = pointer.resolve(self.root, s["$ref"]) if isinstance(s["$ref"], str) else None
            if target is None:
                raise _GiveUp
            rest = {k: v for k, v in s.items() if k not in ("$ref", "description", "title")}
            if rest and isinstance(target, dict):
                return self.value({**target, **rest}, depth + 1)
            return self.value(target, depth + 1)
        if "not" in s or "if" in s or "allOf" in s:
            raise _GiveUp
        if "const" in s:
            return s["const"]
        if "enum" in s:
            options = s["enum"]
            if not isinstance(options, list) or not options:
                raise _GiveUp
            return min(options[:MAX_BRANCHES], key=_size)
        for key in ("anyOf", "oneOf"):
            if key in s:
                branches = s[key]
                if not isinstance(branches, list) or not branches:
                    raise _GiveUp
                rest = {k: v for k, v in s.items() if k != key}
                return self._shortest([{**rest, **b} if isinstance(b, dict) else b for b in branches[:MAX_BRANCHES]], depth)
        kind = s.get("type")
        if isinstance(kind, list):
            return self._shortest([{**s, "type": k} for k in kind[:MAX_BRANCHES]], depth)
        if kind is None:
            kind = _implied_type(s)
        if kind == "object":
            return self._object(s, depth)
        if kind == "array":
            return self._array(s, depth)
        if kind == "string":
            return _string(s)
        if kind in ("integer", "number"):
            return _number(s, kind == "integer")
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        raise _GiveUp

    def _shortest(self, options: list[Any], depth: int) -> Any:
        built = []
        for o in options:
            try:
                built.append(self.value(o, depth + 1))
            except _GiveUp:
                continue
        if not built:
            raise _GiveUp
        return min(built, key=_size)

    def _object(self, s: dict[str, Any], depth: int) -> dict[str, Any]:
        props = s.get("properties") or {}
        required = s.get("required") or []
        if not isinstance(props, dict) or not isinstance(required, list):
            raise _GiveUp
        if any(r not in props for r in required):
            raise _GiveUp  # a required key the properties do not name: where llguidance puts it is not read here
        need = int(s.get("minProperties", 0) or 0)
        if need > MAX_ITEMS:
            raise _GiveUp
        keys = [k for k in props if k in required]
        for k in props:  # the fewest optional properties in order, to reach minProperties
            if len(keys) >= need:
                break
            if k not in keys:
                keys.append(k)
        keys = [k for k in props if k in keys]  # the grammar's order: the order of `properties`
        if len(keys) < need:
            raise _GiveUp
        return {k: self.value(props[k], depth + 1) for k in keys}

    def _array(self, s: dict[str, Any], depth: int) -> list[Any]:
        n = int(s.get("minItems", 0) or 0)
        if n > MAX_ITEMS:
            raise _GiveUp
        prefix = s.get("prefixItems") if isinstance(s.get("prefixItems"), list) else None
        items = s.get("items", {})
        if isinstance(items, list):  # draft-04 tuples
            prefix, items = items, s.get("additionalItems", {})
        out = []
        for i in range(n):
            sub = prefix[i] if prefix is not None and i < len(prefix) else items
            if sub is False:
                raise _GiveUp
            out.append(self.value(sub, depth + 1))
        return out


def _implied_type(s: dict[str, Any]) -> str:
    """The type the keywords of a schema without `type` speak of (`properties` -> object, ...), else a number."""
    if any(k in s for k in ("properties", "required", "additionalProperties", "minProperties")):
        return "object"
    if any(k in s for k in ("items", "prefixItems", "minItems")):
        return "array"
    if any(k in s for k in ("pattern", "minLength", "maxLength", "format")):
        return "string"
    return "integer"


def _string(s: dict[str, Any]) -> str:
    low = int(s.get("minLength", 0) or 0)
    high = s.get("maxLength")
    if low > MAX_ITEMS:
        raise _GiveUp
    if isinstance(s.get("pattern"), str):
        w = witness(s["pattern"])
        if w is None:
            raise _GiveUp
        text = w
    elif isinstance(s.get("format"), str) and s["format"] in FORMAT_WITNESS:
        text = FORMAT_WITNESS[s["format"]]
    else:
        text = ""
    if len(text) < low:
        if "pattern" in s or "format" in s:
            raise _GiveUp
        text = "a" * low
    if isinstance(high, int) and len(text) > high:
        raise _GiveUp
    return text


def _number(s: dict[str, Any], integer: bool) -> int | float:
    low, high = _bound(s.get("minimum")), _bound(s.get("maximum"))
    x_low, x_high = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    if x_low is True:  # draft-04: a flag on minimum
        x_low, low = low, None
    if x_high is True:
        x_high, high = high, None
    xl, xh, step = _bound(x_low), _bound(x_high), _bound(s.get("multipleOf"))
    candidates: list[float] = [0]
    for bound in (low, xl):
        if bound is not None:
            candidates += [bound, math.floor(bound) + 1]
    for bound in (high, xh):
        if bound is not None:
            candidates += [bound, math.ceil(bound) - 1]

    def ok(v: float) -> bool:
        return (
            (low is None or v >= low)
            and (high is None or v <= high)
            and (xl is None or v > xl)
            and (xh is None or v < xh)
            and (step is None or step == 0 or float(v / step).is_integer())
            and (not integer or float(v).is_integer())
        )

    for v in sorted(set(candidates), key=lambda v: (len(json.dumps(int(v) if float(v).is_integer() else v)), abs(v))):
        if ok(v):
            return int(v) if float(v).is_integer() else v
    raise _GiveUp


def _bound(b: Any) -> float | None:
    """A numeric keyword's value, or None when it is absent or not a number."""
    return float(b) if isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) else None


def _size(v: Any) -> int:
    return len(json.dumps(v, ensure_ascii=False))


__all__ = ["from_grammar", "instance"]
