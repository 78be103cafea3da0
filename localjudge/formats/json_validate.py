"""A JSON value against a JSON schema: the first violation, named with its place (`json_schema.parse`, and serve
checking a tool call's arguments). The subset the formats honour: types, const/enum, anyOf/oneOf/allOf, local
`$ref`, numeric bounds and `multipleOf`, required and additional properties, item counts."""

from __future__ import annotations

import json
from typing import Any


def _type_ok(v: Any, t: str) -> bool:
    return {
        "object": isinstance(v, dict),
        "array": isinstance(v, list),
        "string": isinstance(v, str),
        "integer": isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, float) and v.is_integer()),
        "number": isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": isinstance(v, bool),
        "null": v is None,
    }.get(t, True)


def validate(value: Any, s: Any, root: dict[str, Any], where: str = "$") -> str | None:
    """The first way `value` breaks schema `s` ("at $.a[2]: ..."), or None when it conforms."""
    if s is True or not isinstance(s, dict) or s == {}:
        return None
    if "$ref" in s:
        node: Any = root
        for part in str(s["$ref"])[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
        return validate(value, node, root, where)
    if "const" in s and value != s["const"]:
        return f"at {where}: expected {json.dumps(s['const'])}, got {json.dumps(value)[:60]}"
    if "enum" in s and value not in s["enum"]:
        return f"at {where}: expected one of {json.dumps(s['enum'])[:120]}, got {json.dumps(value)[:60]}"
    for key in ("anyOf", "oneOf"):
        if key in s and all(validate(value, x, root, where) is not None for x in s[key]):
            return f"at {where}: matches none of the {key} schemas"
    for x in s.get("allOf", []):
        err = validate(value, x, root, where)
        if err:
            return err
    t = s.get("type")
    types = t if isinstance(t, list) else [t] if t else []
    if types and not any(_type_ok(value, x) for x in types):
        return f"at {where}: expected {' or '.join(types)}, got {type(value).__name__}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if s.get("minimum") is not None and value < s["minimum"]:
            return f"at {where}: {value} is below the minimum {s['minimum']}"
        if s.get("maximum") is not None and value > s["maximum"]:
            return f"at {where}: {value} is above the maximum {s['maximum']}"
        step = s.get("multipleOf")
        if (
            isinstance(step, (int, float))
            and not isinstance(step, bool)
            and step > 0
            and abs(value / step - round(value / step)) > 1e-9
        ):
            return f"at {where}: {value} is not a multiple of {step}"
    if isinstance(value, dict):
        props = s.get("properties") or {}
        for r in s.get("required") or []:
            if r not in value:
                return f"at {where}: required property {r!r} is missing"
        for k, v in value.items():
            if k in props:
                err = validate(v, props[k], root, f"{where}.{k}")
            elif isinstance(s.get("additionalProperties"), dict):
                err = validate(v, s["additionalProperties"], root, f"{where}.{k}")
            elif s.get("additionalProperties") is False:
                err = f"at {where}: property {k!r} is not allowed"
            else:
                err = None
            if err:
                return err
    if isinstance(value, list):
        if s.get("minItems") is not None and len(value) < s["minItems"]:
            return f"at {where}: {len(value)} items, at least {s['minItems']} required"
        if s.get("maxItems") is not None and len(value) > s["maxItems"]:
            return f"at {where}: {len(value)} items, at most {s['maxItems']} allowed"
        for i, v in enumerate(value):
            err = validate(v, s.get("items", True), root, f"{where}[{i}]")
            if err:
                return err
    return None
