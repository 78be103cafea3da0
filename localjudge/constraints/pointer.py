"""JSON pointers as `$ref`s use them (`#`, `#/$defs/NAME`, `#/anyOf/0/properties/x`): one resolver for the
schema checks before llguidance (`llg_bounds`) and serve's request validation."""

from __future__ import annotations

from typing import Any


def resolve(root: Any, ref: str) -> Any:
    """The node `ref` points at inside `root` (`~1` is `/`, `~0` is `~`; a list takes a decimal index), or None
    when `ref` is not local (`#...`) or leads nowhere."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node
