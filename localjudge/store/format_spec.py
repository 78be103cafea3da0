"""A format as data (`FormatSpec`: its kind and parameters), as a result carries and the store keeps it, and the
one reader of the `describe()` strings that results held before (`legacy_format_spec`).

The format itself (`localjudge.formats`) is built back from a spec with `make_format(spec)`; the facts about its
results (label kind, value domain, score range, pairwise-ness) are the format's, asked through `formats.facts`.
A spec lives here, below the formats, because the stored result (`results.py`) carries one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..jsonio import python_literal


class FormatSpec(BaseModel):
    """An output format as data: its registered kind and the parameters `make_format` builds it with."""

    model_config = ConfigDict(frozen=True)

    kind: str
    params: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_flat(cls, spec: Any) -> FormatSpec | None:
        """A spec from the flat dict `OutputFormat.spec()` gives (and a record stores): `{"kind": ..., **params}`;
        None for anything else (no kind, several formats as a list)."""
        if not isinstance(spec, Mapping) or not spec.get("kind"):
            return None
        return cls(kind=str(spec["kind"]), params={str(k): v for k, v in spec.items() if k != "kind"})

    def to_json(self) -> str:
        """The spec as the store's `format_spec` column holds it (keys in the order given)."""
        return json.dumps({"kind": self.kind, "params": self.params}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: Any) -> FormatSpec | None:
        """A spec from the store's `format_spec` column; None for NULL or anything that is not one."""
        if not isinstance(text, str) or not text:
            return None
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        if not isinstance(obj, dict) or not obj.get("kind") or not isinstance(obj.get("params", {}), dict):
            return None
        return cls(kind=str(obj["kind"]), params=dict(obj.get("params") or {}))


# ------------------------------------------------------------------------------ the legacy reader


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside brackets and quotes."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _value(text: str) -> Any:
    """A parameter value as `describe()` printed it (`str(v)`): a Python literal, else the text itself."""
    try:
        return python_literal(text)
    except ValueError:
        return text


def legacy_format_spec(describe: Any) -> FormatSpec | None:
    """The spec a `describe()` string (`kind(param=value, ...)`, what results stored as their format before
    the typed spec) names; None for an empty string or one that joins several formats (`a(...) + b(...)`).

    The only place such a string is read: the store's migration `004_format_spec` fills the typed column with
    it, and a result read from elsewhere (an old results.jsonl) carries what it gives."""
    text = str(describe or "").strip()
    kind, _, rest = text.partition("(")
    kind = kind.strip()
    if not kind or not kind.isidentifier():
        return None
    body = rest[:-1] if rest.endswith(")") else rest
    if ") + " in body:
        return None
    params: dict[str, Any] = {}
    for part in _split_top(body):
        key, eq, val = part.partition("=")
        if eq and key.strip().isidentifier():
            params[key.strip()] = _value(val.strip())
    return FormatSpec(kind=kind, params=params)


def legacy_format_spec_json(describe: Any) -> str | None:
    """`legacy_format_spec` as the `format_spec` column holds it (the SQL function the migration calls)."""
    spec = legacy_format_spec(describe)
    return spec.to_json() if spec is not None else None
