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
    (yes/no, the top or bottom score, the first or second answer, a labelled choice), with `rationale` where the
    format has a free-text field ("" when the labels give none)."""
    import json

    from ..formats import Choice, FeedbackFormat, PairwiseJSON, ScoreJSON, ScoreLines, YesNoJSON

    why = rationale or ""
    if isinstance(fmt, YesNoJSON):
        res = "yes" if positive else "no"
        return json.dumps({"rationale": why, "result": res}) if fmt.with_rationale else json.dumps({"result": res})
    if isinstance(fmt, ScoreJSON):
        x = int(fmt.range.hi if positive else fmt.range.lo)
        return json.dumps({"eval_score": x, "explanation": why}) if fmt.with_explanation else json.dumps({"eval_score": x})
    if isinstance(fmt, ScoreLines):
        x = int(fmt.range.hi if positive else fmt.range.lo)
        return f"score: {x}\njustification: {why or '-'}" if fmt.with_justification else f"score: {x}"
    if isinstance(fmt, PairwiseJSON):
        return json.dumps({"better_response": 1 if positive else 2, "explanation": why})
    if isinstance(fmt, Choice) and fmt.values:
        vals = fmt.values
        lab = max(vals, key=lambda k: vals[k]) if positive else min(vals, key=lambda k: vals[k])
        return json.dumps({"rationale": why, "result": lab}) if fmt.with_rationale else lab
    if isinstance(fmt, FeedbackFormat):
        value = ("A" if positive else "B") if fmt.mode == "relative" else str(int(fmt.range.hi if positive else fmt.range.lo))
        fb = why or "-"
        if fmt.kind == "prometheus":
            return f"{fb} [RESULT] {value}" if fmt.with_feedback else f"[RESULT] {value}"
        if fmt.kind == "flow_judge":
            return f"<feedback>\n{fb}\n</feedback>\n<score>\n{value}\n</score>"
        return f"**Reasoning:** {fb}\n\n**Result:** {value}"
    raise InputError(f"few-shot examples are not supported for format {fmt.kind!r}; use --examples 0")


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
