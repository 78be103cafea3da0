"""A judge's variables: the values given for them (names, aliases, composed dicts, defaults), checked, and their
prompt text (neutralised and formatted); per_item judges get one text per item.

`VariableValues` is a part of `Judge` (judges/judge.py), which compiles the spec into the plan it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError, MissingVariableError
from .builders import Plan, grading_context_text, instruction_fields_text
from .kinds import KINDS
from .render import format_value, neutralise
from .spec import JudgeSpec, Variable


def empty_value(value: Any) -> bool:
    """True for None, a blank string and an empty list, tuple or dict: a value the prompt cannot use."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple | dict):
        return len(value) == 0
    return False


class RowValues(dict[str, Any]):
    """One row's checked raw values (the dict itself) with their prompt text (`text`) and every prompt rendered from
    them so far (`rendered`, keyed by call stage and the text it was rendered from): what `Judge.prepare` keeps for a
    cell, so that its fingerprint, its first request and its calls read one computation and render each prompt once."""

    def __init__(self, raw: Mapping[str, Any], text: dict[str, str]):
        super().__init__(raw)
        self.text = text
        self.rendered: dict[tuple[int, tuple[tuple[str, str], ...]], list[Any]] = {}


class VariableValues:
    """Variables given to a judge → (raw values, prompt text); a missing or empty required one is an `InputError`."""

    spec: JudgeSpec
    _plan: Plan

    def _lookup(self, v: Variable, given: Mapping[str, Any]) -> Any:
        for key in (v.name, *v.aliases):
            if given.get(key) is not None:
                return given[key]
        if v.compose:
            d = {k: given[src] for k, src in v.compose.items() if not empty_value(given.get(src))}
            if d:
                return d
        return v.default

    def _values(self, given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """Check the variables; return the raw values and their prompt text (neutralised, formatted)."""
        raw: dict[str, Any] = {}
        text: dict[str, str] = {}
        tags = set(self._plan.tags)
        for v in self._plan.variables:
            if v.dict_format in ("xml_fields", "xml_blocks"):
                val = self._lookup(v, given)
                if isinstance(val, dict):
                    tags |= {str(k) if v.dict_format == "xml_fields" else str(k).lower().replace(" ", "_") for k in val}
        pairs = [(p[0], p[1]) for p in self.spec.neutralise]
        for v in self._plan.variables:
            val = self._lookup(v, given)
            if val is None and v.required:
                also = f" (also accepted: {', '.join(v.aliases)})" if v.aliases else ""
                raise MissingVariableError(f"judge '{self.spec.name}' needs variable '{v.name}'{also}; give it a value")
            if empty_value(val) and val is not None and not v.allow_empty:
                if v.required:
                    raise InputError(f"judge '{self.spec.name}': variable '{v.name}' is empty; give it a non-empty value")
                val = None
            raw[v.name] = val
            if val is None:
                text[v.name] = v.empty_text or ""
            elif v.choices is not None:
                key = str(val)
                if key not in v.choices:
                    raise InputError(
                        f"judge '{self.spec.name}': variable '{v.name}' must be one of {sorted(v.choices)}, got {key!r}"
                    )
                text[v.name] = v.choices[key]
            else:
                text[v.name] = format_value(neutralise(val, tags, pairs), v.list_format, v.dict_format, v.item_tag)
                if empty_value(val) and v.empty_text is not None:
                    text[v.name] = v.empty_text
        extra = KINDS[self.spec.kind].extra_text
        if extra == "grading_context":
            columns = self._plan.context_columns
            safe = {c: neutralise(raw[c], tags, pairs) for c in columns}
            text["grading_context_columns"] = grading_context_text(columns, safe)
        elif extra == "instruction_fields":
            text["__fields__"] = instruction_fields_text([v.name for v in self._plan.variables if raw[v.name] is not None], text)
        return raw, text

    def _item_texts(self, raw: dict[str, Any], text: dict[str, str]) -> list[tuple[Any, dict[str, str]]]:
        """per_item: one (item, text values) per item of the item variable (one if it is not a list)."""
        var = self.spec.item_variable
        val = raw.get(var) if var else None
        if var is None or not isinstance(val, list | tuple):
            return [(val, text)]
        v = next(x for x in self._plan.variables if x.name == var)
        out = []
        for i, item in enumerate(val):
            if empty_value(item):
                raise InputError(f"judge '{self.spec.name}': item {i} of '{var}' is empty; remove it or give it text")
            t = dict(text)
            t[var] = format_value(
                neutralise(item, self._plan.tags, [(p[0], p[1]) for p in self.spec.neutralise]),
                v.list_format,
                v.dict_format,
                v.item_tag,
            )
            out.append((item, t))
        return out
