"""Labelled rows as a judge sees them: a label's class (`binary_labels`), and a row as a few-shot example
(its values for the judge's variables, and the verdict its label implies in the judge's format).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..formats import OutputFormat
from ..judges import Judge

POSITIVE_GUESSES = ("yes", "true", "pass", "1", "positive", "good", "correct")
NEGATIVE_GUESSES = ("no", "false", "fail", "0", "2", "negative", "bad", "incorrect")


def _norm(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v).strip().lower()


def binary_labels(values: Sequence[Any], positive: str | None) -> tuple[list[bool | None], str]:
    """Each label as positive / negative (None: empty), and the positive value used; `InputError` unless binary."""
    norm = [None if v is None or (isinstance(v, str) and not v.strip()) else _norm(v) for v in values]
    present = sorted({v for v in norm if v is not None})
    if positive is None:
        guess = [g for g in POSITIVE_GUESSES if g in present]
        if len(present) == 2 and guess:
            positive = guess[0]
        elif present == ["1", "2"]:
            positive = "1"
        else:
            raise InputError(
                f"labels have values {present[:6]}; align needs two classes: say which one is positive with --positive VALUE"
            )
    positive = _norm(positive)
    if positive not in present:
        raise InputError(f"--positive {positive!r} is not a label value; the labels have {present[:6]}")
    if len(present) != 2:
        raise InputError(f"align needs binary labels; the label column has {len(present)} values: {present[:6]}")
    return [None if v is None else v == positive for v in norm], positive


def example_output(fmt: OutputFormat, positive: bool, rationale: str | None) -> str:
    """The answer a few-shot example shows: the verdict its label implies, in the judge's own format
    (`OutputFormat.example_output`), with `rationale` where the format has a free-text field ("" when the labels
    give none); `InputError` for a format that has no such verdict."""
    return fmt.example_output(positive, rationale or "")


def example_variables(j: Judge, row: dict[str, Any], mapping: Any) -> dict[str, Any]:
    """A labelled row's values for the judge's variables (names, aliases, then `mapping` var=column)."""
    from ..datasets import parse_mapping

    cols = {v: spec.column for v, spec in parse_mapping(mapping).items()}
    out: dict[str, Any] = {}
    for v in j.variables:
        for key in (cols.get(v.name), v.name, *v.aliases):
            if key and row.get(key) is not None:
                out[v.name] = row[key]
                break
    return out
