"""Line formats: `score: N` / `justification:` lines, the four-line rubric, and a bare label choice."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import InputError, ParseError
from .base import (
    FREE_LINE,
    JSON_STR,
    ChoiceVerdict,
    FourLineVerdict,
    LabelKind,
    NumberRange,
    OutputFormat,
    ScoreLinesVerdict,
    as_number,
    as_text,
    json_objects,
    literal,
    lower_keys,
    object_schema,
)


class ScoreLines(OutputFormat):
    """Two lines: `score: N` / `justification: ...` (MLflow v1 metrics)."""

    kind = "score_lines"
    value_prefix = "score: "

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Numeric: compared with labels by rank correlation."""
        return "numeric", None

    def score_range(self) -> NumberRange | None:
        """The score's range."""
        return self.range

    def __init__(self, min: int = 1, max: int = 5, field_tokens: int = 80, justification: bool = True):
        super().__init__(field_tokens)
        self.range = NumberRange(min, max, 0)
        self.with_justification = justification

    def n_free_fields(self) -> int:
        """1 for the justification; 0 without it."""
        return 1 if self.with_justification else 0

    def regex(self) -> str:
        """`score: N` then a `justification: ...` line (one line of text); N within min..max. `score: N` alone without it."""
        if not self.with_justification:
            return "score: " + self.range.regex()
        return "score: " + self.range.regex() + r"\njustification: " + FREE_LINE

    _SCORE = re.compile(r"^[\s*#>-]*score\**\s*[:=]\s*\**\s*(\S+?)\**\s*$", re.I | re.M)
    _JUST = re.compile(r"^[\s*#>-]*justification\**\s*[:=]\**\s*(.*)", re.I | re.M | re.S)

    # MLflow's one-line form (`_extract_score_and_justification`): "score: 4, justification: ..." / "score: 4 justification: ..."
    _INLINE = re.compile(r"score\s*[:=]\s*(\d+)\s*,?\s*justification\s*[:=]\s*(.+)", re.I | re.S)

    def parse(self, text: str) -> ScoreLinesVerdict:
        """Lenient, and accepting whatever MLflow's `_extract_score_and_justification` accepts: a `score:` or
        `score=` line (markdown bullets and bold allowed, `4/5` reads 4) with the justification everything after
        a later `justification:` ("" when absent); MLflow's one-line `score: 4, justification: ...`; or a JSON
        object `{"score": 4, "justification": "..."}` (any key case, a string score "4"; a justification that
        is not text is a `ParseError`). The score must be an integer within min..max."""
        m = self._SCORE.search(text)
        if m:
            raw = m.group(1).strip().strip("\"'").rstrip(".,")
            if "/" in raw:  # "4/5"
                raw = raw.split("/")[0]
            x = self.range.check(as_number(raw, self.kind, "score", text), self.kind, text)
            j = self._JUST.search(text, m.end())
            return ScoreLinesVerdict(score=int(x), justification=j.group(1).strip() if j else "")
        inline = self._INLINE.search(text)
        if inline:
            x = self.range.check(as_number(inline.group(1), self.kind, "score", text), self.kind, text)
            return ScoreLinesVerdict(score=int(x), justification=inline.group(2).strip())
        objs = [o for o in map(lower_keys, json_objects(text)) if "score" in o]
        if not objs:
            raise ParseError(self.kind, "no 'score:' line", text)
        o = objs[0]
        x = self.range.check(as_number(o["score"], self.kind, "score", text), self.kind, text)
        return ScoreLinesVerdict(score=int(x), justification=as_text(o.get("justification"), self.kind, "justification", text))

    def normalise(self, v: ScoreLinesVerdict) -> float:
        """The score scaled to [0, 1]: (score − min) / (max − min)."""
        return self.range.normalise(v.score)

    def value(self, v: ScoreLinesVerdict) -> int:
        """The integer score."""
        return v.score

    def rationale(self, v: ScoreLinesVerdict) -> str:
        """The justification (possibly empty)."""
        return v.justification

    def value_scores(self) -> dict[str, float]:
        """Each integer score as text → its normalised score (the token after `score: `)."""
        return {str(x): self.range.normalise(x) for x in range(int(self.range.lo), int(self.range.hi) + 1)}

    def fast(self) -> ScoreLines:
        """The same range without the justification line."""
        return ScoreLines(int(self.range.lo), int(self.range.hi), self.field_tokens, justification=False)

    def example_output(self, positive: bool, rationale: str) -> str:
        """`score: ` the top score (positive) or the bottom one, and the justification line (`-` when empty)
        unless verdict-only."""
        x = int(self.range.hi if positive else self.range.lo)
        return f"score: {x}\njustification: {rationale or '-'}" if self.with_justification else f"score: {x}"

    def params(self) -> dict[str, Any]:
        """min, max and field_tokens, plus `justification: False` without the justification."""
        extra = {} if self.with_justification else {"justification": False}
        return {"min": self.range.lo, "max": self.range.hi, **super().params(), **extra}


class FourLine(OutputFormat):
    """`Accuracy: X` / `Comprehensiveness: Y` / `Context Precision: Z` / `Final: W` (0–10 ints).

    `final` is always recomputed as round((X+Y+Z)/30, 1); the model's own `Final` is kept as
    `final_reported` and never trusted. `apply_rules` enforces the advanced relevance rubric's capping rules.
    """

    kind = "four_line"

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Numeric: compared with labels by rank correlation."""
        return "numeric", None

    KEYS = (("accuracy", "Accuracy"), ("comprehensiveness", "Comprehensiveness"), ("context_precision", "Context Precision"))

    def n_free_fields(self) -> int:
        """0: four numbers, no free text."""
        return 0

    def max_tokens(self) -> int:
        """A fixed budget of 64 tokens (the output has no free text)."""
        return 64

    def regex(self) -> str:
        """The four lines exactly: Accuracy, Comprehensiveness, Context Precision as 0–10 integers, then
        `Final: ` 0.0–1.0 with one decimal."""
        n = "(10|[0-9])"
        return f"Accuracy: {n}\\nComprehensiveness: {n}\\nContext Precision: {n}\\nFinal: (0\\.[0-9]|1\\.0)"

    def parse(self, text: str) -> FourLineVerdict:
        """Each criterion (case-insensitive, `:` or `=`, bold allowed) as an integer 0–10, else `ParseError`;
        the model's `Final` is kept as `final_reported` only, `final` is recomputed."""
        vals: dict[str, int] = {}
        for key, label in self.KEYS:
            pat = label.replace(" ", r"[\s_]*")
            m = re.search(rf"{pat}\**\s*[:=]\s*\**\s*([+-]?\d+(?:\.\d+)?)", text, re.I)
            if not m:
                raise ParseError(self.kind, f"no '{label}:' line", text)
            x = float(m.group(1))
            if x != int(x) or not 0 <= x <= 10:
                raise ParseError(self.kind, f"{label} must be an integer 0..10, got {m.group(1)}", text)
            vals[key] = int(x)
        m = re.search(r"final\**\s*[:=]\s*\**\s*([+-]?\d+(?:\.\d+)?)", text, re.I)
        reported = float(m.group(1)) if m else None
        return FourLineVerdict(**vals, final=self.final_of(vals), final_reported=reported)

    @staticmethod
    def final_of(vals: dict[str, int]) -> float:
        """The final score in [0, 1]: (accuracy + comprehensiveness + context_precision) / 30, to 1 decimal
        (halves round up)."""
        return round((vals["accuracy"] + vals["comprehensiveness"] + vals["context_precision"]) / 30 + 1e-9, 1)

    def apply_rules(self, v: FourLineVerdict, has_context: bool) -> FourLineVerdict:
        """The seed's rules: no context → Context Precision 0; Accuracy ≤ 2 caps the others at 4."""
        vals = {k: getattr(v, k) for k, _ in self.KEYS}
        rules: list[str] = list(v.rules_applied)
        if not has_context and vals["context_precision"] != 0:
            vals["context_precision"] = 0
            rules.append("no_context: context_precision set to 0")
        if vals["accuracy"] <= 2:
            for k in ("comprehensiveness", "context_precision"):
                if vals[k] > 4:
                    rules.append(f"accuracy<=2: {k} capped {vals[k]}->4")
                    vals[k] = 4
        return FourLineVerdict(**vals, final=self.final_of(vals), final_reported=v.final_reported, rules_applied=rules)

    def normalise(self, v: FourLineVerdict) -> float:
        """The recomputed `final` (already in [0, 1])."""
        return v.final

    def value(self, v: FourLineVerdict) -> dict[str, Any]:
        """The three criteria and the recomputed final, as a dict."""
        return {
            "accuracy": v.accuracy,
            "comprehensiveness": v.comprehensiveness,
            "context_precision": v.context_precision,
            "final": v.final,
        }

    def params(self) -> dict[str, Any]:
        """An empty dict: the format has no parameters (and no free-text budget)."""
        return {}


class Choice(OutputFormat):
    """A choice among labels: bare (`A`) or with a rationale first (`{"rationale": .., "result": "A"}`).

    `values` maps each label to a score in [0, 1] (all labels or none).
    """

    kind = "choice"

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Categorical: its labels (None when the stored spec does not list them)."""
        labels = params.get("labels")
        return "categorical", [str(x) for x in labels] if labels else None

    def __init__(
        self, labels: list[str], values: dict[str, float] | None = None, rationale: bool = False, field_tokens: int = 80
    ):
        super().__init__(field_tokens)
        labels = [str(x) for x in labels]
        if len(labels) < 2:
            raise InputError(f"a choice needs at least 2 labels, got {labels}")
        if len(set(labels)) != len(labels):
            raise InputError(f"duplicate labels in {labels}")
        for lab in labels:
            if not lab or '"' in lab or "\\" in lab or "\n" in lab or any(ord(c) < 32 for c in lab):
                raise InputError(f"label {lab!r} cannot be constrained: no quotes, backslashes or control chars")
        if values:
            missing = [lab for lab in labels if lab not in values]
            extra = [k for k in values if k not in labels]
            if missing or extra:
                raise InputError(f"choice values must cover every label exactly: missing {missing}, unknown {extra}")
            for k, x in values.items():
                if not 0 <= float(x) <= 1:
                    raise InputError(f"value of label {k!r} must be in [0, 1], got {x}")
        self.labels = labels
        self.values = {k: float(x) for k, x in values.items()} if values else None
        self.with_rationale = rationale

    def _alt(self) -> str:
        return "(" + "|".join(literal(x) for x in sorted(self.labels, key=len, reverse=True)) + ")"

    def n_free_fields(self) -> int:
        """1 for the rationale; 0 for a bare label."""
        return 1 if self.with_rationale else 0

    def regex(self) -> str:
        """A bare label, or `{"rationale": "...", "result": "<label>"}` with the rationale (longer labels listed first)."""
        if self.with_rationale:
            return r'\{"rationale": "' + JSON_STR + r'", "result": "' + self._alt() + r'"\}'
        return self._alt()

    def json_schema(self) -> dict[str, Any] | None:
        """With a rationale: `{"rationale": string, "result": <label>}` (longer labels first, as in the regex);
        None for a bare label (not JSON)."""
        if not self.with_rationale:
            return None
        labels = sorted(self.labels, key=len, reverse=True)
        return object_schema({"rationale": {"type": "string"}, "result": {"type": "string", "enum": labels}})

    def _match_label(self, s: str, text: str) -> str:
        s = s.strip().strip("\"'*[]().` ").strip()
        for lab in self.labels:
            if s == lab:
                return lab
        low = {lab.lower(): lab for lab in self.labels}
        if s.lower() in low:
            return low[s.lower()]
        raise ParseError(self.kind, f"unknown label {s!r}; expected one of {self.labels}", text)

    def parse(self, text: str) -> ChoiceVerdict:
        """Lenient: a JSON `result`/`choice`/`answer`/`label` key, else the whole (short) text, else one `[[label]]`
        or `answer|choice|result|verdict: label`; labels match exactly, then case-insensitively. Several labels: `ParseError`."""
        objs = [lower_keys(o) for o in json_objects(text)]
        for o in objs:
            for key in ("result", "choice", "answer", "label"):
                if key in o:
                    lab = self._match_label(as_text(o[key], self.kind, key, text), text)
                    why = as_text(o["rationale"], self.kind, "rationale", text) if "rationale" in o else None
                    return ChoiceVerdict(label=lab, rationale=why)
        stripped = text.strip()
        if stripped and len(stripped) <= max(len(x) for x in self.labels) + 6:
            return ChoiceVerdict(label=self._match_label(stripped, text))
        found = set(re.findall(r"\[\[([^\]\n]+)\]\]", text))
        m = re.search(r"(?:answer|choice|result|verdict)\s*(?:is)?\s*[:=]?\s*\(?([^\s().,]+)", text, re.I)
        if not found and m:
            found = {m.group(1)}
        labs = {self._match_label(s, text) for s in found}
        if len(labs) == 1:
            return ChoiceVerdict(label=labs.pop())
        if len(labs) > 1:
            raise ParseError(self.kind, f"several labels given: {sorted(labs)}", text)
        raise ParseError(self.kind, f"no label found; expected one of {self.labels}", text)

    def normalise(self, v: ChoiceVerdict) -> float | None:
        """The label's score from `values`, or None when the labels carry no scores."""
        return self.values[v.label] if self.values else None

    def value(self, v: ChoiceVerdict) -> str:
        """The chosen label."""
        return v.label

    def rationale(self, v: ChoiceVerdict) -> str | None:
        """The rationale, or None when none was given."""
        return v.rationale

    @property
    def value_prefix(self) -> str:  # type: ignore[override]
        """The text before the label: `"result": "` with a rationale, "" for a bare label (it opens the output)."""
        return '"result": "' if self.with_rationale else ""

    def value_scores(self) -> dict[str, float] | None:
        """A copy of `values` (label → score), or None when the labels carry no scores."""
        return dict(self.values) if self.values else None

    def fast(self) -> Choice:
        """The same labels and values as a bare label (no rationale)."""
        return Choice(self.labels, self.values, rationale=False, field_tokens=self.field_tokens)

    def example_output(self, positive: bool, rationale: str) -> str:
        """The label of the highest value (positive) or the lowest, with the rationale unless a bare label;
        `InputError` when the labels carry no values (no label is the positive one)."""
        if not self.values:
            return super().example_output(positive, rationale)
        vals = self.values
        lab = max(vals, key=lambda k: vals[k]) if positive else min(vals, key=lambda k: vals[k])
        return json.dumps({"rationale": rationale, "result": lab}) if self.with_rationale else lab

    def params(self) -> dict[str, Any]:
        """labels, values, rationale and field_tokens."""
        return {"labels": self.labels, "values": self.values, "rationale": self.with_rationale, **super().params()}
