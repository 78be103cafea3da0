"""The column → variable mapping: which column feeds each judge variable, and how its cells are read.

Explicit `var=column` entries win; otherwise the variable's own name, then its aliases, are looked up
among the columns:

    input    ↔ question          output ↔ answer ↔ response
    expected ↔ ground_truth      context ↔ retrieval_context

A `:list`, `:text` or `:json` suffix on the column sets the `Kind` its cells are read as (see
`variables.coerce`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import InputError

ALIASES: tuple[tuple[str, ...], ...] = (
    ("input", "question"),
    ("output", "answer", "response"),
    ("expected", "ground_truth"),
    ("context", "retrieval_context"),
)
Kind = Literal["auto", "text", "list", "json"]


@dataclass(frozen=True)
class ColumnSpec:
    """Where a judge variable's value comes from: a column, and how to read it (`auto`, `text`, `list`, `json`)."""

    column: str
    kind: Kind = "auto"


def parse_mapping(mapping: Mapping[str, str] | Iterable[str] | None) -> dict[str, ColumnSpec]:
    """`{"var": "col"}` or `["var=col", "ctx=docs:list"]` → {var: ColumnSpec}."""
    if not mapping:
        return {}
    items = mapping.items() if isinstance(mapping, Mapping) else (_split_item(s) for s in mapping)
    out: dict[str, ColumnSpec] = {}
    for var, col in items:
        kind: Kind = "auto"
        for suffix in ("list", "text", "json"):
            if col.endswith(":" + suffix):
                col, kind = col[: -len(suffix) - 1], suffix
        if not var or not col:
            raise InputError(f"bad mapping {var}={col}; write judge_variable=column")
        out[var] = ColumnSpec(col, kind)
    return out


def _split_item(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise InputError(f"bad mapping {item!r}; write judge_variable=column (e.g. --map expected=ground_truth)")
    var, col = item.split("=", 1)
    return var.strip(), col.strip()


def candidates(var: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Columns tried for a variable: its own name, the judge's aliases for it (`extra`), then ours."""
    out = [var, *extra]
    for group in ALIASES:
        if var in group:
            out += group
    return tuple(dict.fromkeys(out))


def resolve_mapping(
    judge: str,
    required: Sequence[str],
    optional: Sequence[str],
    columns: Sequence[str],
    explicit: Mapping[str, ColumnSpec],
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, ColumnSpec]:
    """{var: ColumnSpec} for one judge, or `InputError` listing the columns that exist.

    `aliases`: the judge's own alternative names per variable (tried before ours)."""
    aliases = aliases or {}
    have = set(columns)
    listing = ", ".join(columns) if columns else "(none)"
    for var, spec in explicit.items():
        if spec.column not in have:
            raise InputError(f"--map {var}={spec.column}: no column {spec.column!r} in the data; columns: {listing}")
    out: dict[str, ColumnSpec] = {}
    for var in list(required) + [v for v in optional if v not in required]:
        if var in explicit:
            out[var] = explicit[var]
            continue
        names = candidates(var, aliases.get(var, ()))
        found = next((c for c in names if c in have), None)
        if found is not None:
            out[var] = ColumnSpec(found)
        elif var in required:
            tried = "/".join(names)
            raise InputError(
                f"judge {judge!r} needs {var!r} but the data has no {tried} column; "
                f"columns: {listing}; map one with --map {var}=COLUMN"
            )
    return out
