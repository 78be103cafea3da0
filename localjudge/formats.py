"""Output formats: one object per output contract.

Each `OutputFormat` knows three things:
  * `regex()` – the decoding constraint (compiled by outlines-core in the engine);
  * `parse(text)` – raw text (constrained or not) → typed pydantic verdict, or `ParseError`;
  * `normalise(verdict)` – the verdict as a score in [0, 1] (None where a format has no score).

Free-text fields are unbounded in the regex (char-bounded regexes explode the index) and bounded
in *tokens* instead: `field_tokens` is the per-field budget the engine enforces, and `max_tokens()`
the whole output's budget. The engine forces a field closed once its budget is spent, so every
output closes by construction.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from .errors import InputError, ParseError

# A JSON string body: any char but quote, backslash and control chars, or a simple escape.
JSON_STR = r'([^"\\\x00-\x1F]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*'
FREE_LINE = r"[^\n]+"


def _lit(text: str) -> str:
    return re.escape(text)


# ---------------------------------------------------------------------------------------- verdicts


class YesNoVerdict(BaseModel):
    rationale: str
    result: Literal["yes", "no"]


class ScoreVerdict(BaseModel):
    eval_score: float
    explanation: str


class PairwiseVerdict(BaseModel):
    better_response: Literal[1, 2]
    raw_value: int
    explanation: str


class ScoreLinesVerdict(BaseModel):
    score: int
    justification: str


class FourLineVerdict(BaseModel):
    accuracy: int
    comprehensiveness: int
    context_precision: int
    final: float
    final_reported: float | None = None
    rules_applied: list[str] = []


class ChoiceVerdict(BaseModel):
    label: str
    rationale: str | None = None


class StatementsVerdict(BaseModel):
    statements: list[str]


class StatementVerdict(BaseModel):
    verdict: Literal["yes", "no", "unsure"]
    reason: str


class VerdictListVerdict(BaseModel):
    verdicts: list[StatementVerdict]


# ------------------------------------------------------------------------------------- text helpers

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def _json_objects(text: str) -> list[Any]:
    """Every top-level JSON value that starts with `{` in `text`, fenced or not, in order."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    out: list[Any] = []
    dec = json.JSONDecoder()
    for cand in candidates:
        i = cand.find("{")
        while i != -1:
            try:
                obj, end = dec.raw_decode(cand, i)
            except (json.JSONDecodeError, RecursionError):
                i = cand.find("{", i + 1)
                continue
            if isinstance(obj, dict):
                out.append(obj)
            i = cand.find("{", end)
    return out


def _lower_keys(obj: dict) -> dict:
    return {str(k).strip().lower().replace(" ", "_"): v for k, v in obj.items()}


def _first_with(text: str, fmt: str, keys: tuple[str, ...]) -> dict:
    objs = [_lower_keys(o) for o in _json_objects(text)]
    for o in objs:
        if all(k in o for k in keys):
            return o
    if objs:
        raise ParseError(fmt, f"JSON object lacks key(s) {', '.join(k for k in keys if k not in objs[0])}", text)
    raise ParseError(fmt, "no JSON object found", text)


def _as_text(value: Any, fmt: str, key: str, text: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise ParseError(fmt, f"{key!r} must be a string, got {type(value).__name__}", text)
    return str(value)


def _as_number(value: Any, fmt: str, key: str, text: str) -> float:
    if isinstance(value, bool) or value is None:
        raise ParseError(fmt, f"{key!r} must be a number, got {value!r}", text)
    if isinstance(value, (int, float)):
        num = float(value)
    else:
        s = str(value).strip()
        m = re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", s)
        if not m:
            raise ParseError(fmt, f"{key!r} must be a number, got {value!r}", text)
        num = float(s)
    if num != num or num in (float("inf"), float("-inf")):
        raise ParseError(fmt, f"{key!r} must be finite", text)
    return num


# --------------------------------------------------------------------------------------- the base


class OutputFormat(ABC):
    """An output contract: decoding constraint + parser + normaliser."""

    kind: ClassVar[str]

    def __init__(self, field_tokens: int = 80):
        if field_tokens < 1:
            raise InputError(f"field_tokens must be >= 1, got {field_tokens}")
        self.field_tokens = field_tokens

    @abstractmethod
    def regex(self) -> str:
        """The whole output as a regular expression (outlines-core syntax)."""

    @abstractmethod
    def parse(self, text: str) -> BaseModel:
        """Text → typed verdict, or `ParseError` naming what is wrong."""

    @abstractmethod
    def normalise(self, verdict: Any) -> float | None:
        """Verdict → score in [0, 1]; None where the format carries no score."""

    def value(self, verdict: Any) -> Any:
        """The raw value a user reads (yes/no, a number, a label, a dict of criteria)."""
        return verdict.model_dump()

    def rationale(self, verdict: Any) -> str | None:
        return None

    def n_free_fields(self) -> int:
        return 1

    def max_tokens(self) -> int:
        """Whole-output token budget: every free field's budget plus room for the structure."""
        return self.n_free_fields() * self.field_tokens + 32 + len(self.regex()) // 2

    def params(self) -> dict[str, Any]:
        return {"field_tokens": self.field_tokens}

    # -- probability-weighted scores (G-Eval style) and fast verdicts --------------------------

    value_prefix: ClassVar[str | None] = None  # the text that precedes the verdict value in the output

    def value_scores(self) -> dict[str, float] | None:
        """Each allowed verdict literal → its normalised score (None: this format has no single verdict)."""
        return None

    def expected_score(self, steps: list[tuple[str, dict[str, float]]]) -> float | None:
        """Expected normalised score under the model's distribution at the verdict position.

        `steps` are (output text before the step, {token piece: probability among allowed tokens});
        the verdict step is the first whose preceding text ends with `value_prefix`. A token counts
        for every value it is consistent with (piece is a prefix of the value or starts with it);
        a token that spells a whole value counts for the longest value it spells ("10" → 10), one
        that only begins several values counts for the shortest ("1" → 1, not 10).
        """
        values = self.value_scores()
        if not values or self.value_prefix is None:
            return None
        for before, dist in steps:
            if not before.endswith(self.value_prefix):
                continue
            mass: dict[str, float] = {}
            for piece, p in dist.items():
                covered = [v for v in values if piece.startswith(v)]  # the piece spells the whole value
                started = [v for v in values if v.startswith(piece)]  # the piece only begins it
                if covered or started:
                    v = max(covered, key=len) if covered else min(started, key=len)
                    mass[v] = mass.get(v, 0.0) + p
            total = sum(mass.values())
            if total <= 0:
                return None
            return sum(values[v] * m for v, m in mass.items()) / total
        return None

    def fast(self) -> OutputFormat | None:
        """The same contract without free text (verdict only), or None where that makes no sense."""
        return None

    def spec(self) -> dict[str, Any]:
        """Canonical description (for cache keys and reproducibility records)."""
        return {"kind": self.kind, **self.params()}

    def describe(self) -> str:
        return f"{self.kind}({', '.join(f'{k}={v}' for k, v in self.params().items())})"


# --------------------------------------------------------------------------------- numeric ranges


class NumberRange:
    """Closed range [lo, hi] with a fixed number of decimals; rendered as an enumerating regex."""

    MAX_VALUES = 2000

    def __init__(self, lo: float, hi: float, decimals: int = 0):
        if hi < lo:
            raise InputError(f"score range min {lo} is above max {hi}")
        if decimals < 0 or decimals > 3:
            raise InputError(f"decimals must be 0..3, got {decimals}")
        if decimals == 0 and (lo != int(lo) or hi != int(hi)):
            raise InputError(f"integer range needs integer bounds, got {lo}..{hi}")
        n_int = int(hi) - int(lo) + 1
        if n_int > self.MAX_VALUES:
            raise InputError(f"score range {lo}..{hi} has {n_int} integer values; at most {self.MAX_VALUES} can be constrained")
        self.lo, self.hi, self.decimals = lo, hi, decimals

    def regex(self) -> str:
        lo, hi, d = self.lo, self.hi, self.decimals
        if d == 0:
            return "(" + "|".join(str(v) for v in range(int(hi), int(lo) - 1, -1)) + ")"
        if lo != int(lo) or hi != int(hi):
            raise InputError(f"decimal ranges need integer bounds, got {lo}..{hi}")
        parts = []
        frac = r"(\.[0-9]{1," + str(d) + "})?"
        for v in range(int(lo), int(hi)):
            parts.append(f"{v}{frac}" if v >= 0 else f"{v}")
        parts.append(f"{int(hi)}" + r"(\.0{1," + str(d) + "})?")
        return "(" + "|".join(reversed(parts)) + ")"

    def check(self, x: float, fmt: str, text: str) -> float:
        if x < self.lo or x > self.hi:
            raise ParseError(fmt, f"score {x:g} is outside {self.lo:g}..{self.hi:g}", text)
        if self.decimals == 0 and x != int(x):
            raise ParseError(fmt, f"score {x:g} is not an integer", text)
        return x

    def normalise(self, x: float) -> float:
        return 1.0 if self.hi == self.lo else (x - self.lo) / (self.hi - self.lo)


# ---------------------------------------------------------------------------------------- formats


class YesNoJSON(OutputFormat):
    """`{"rationale": str, "result": "yes"|"no"}` (MLflow judges)."""

    kind = "yes_no_json"
    value_prefix = '"result": "'

    def __init__(self, field_tokens: int = 80, rationale: bool = True):
        super().__init__(field_tokens)
        self.with_rationale = rationale

    def n_free_fields(self) -> int:
        return 1 if self.with_rationale else 0

    def regex(self) -> str:
        if not self.with_rationale:
            return r'\{"result": "(yes|no)"\}'
        return r'\{"rationale": "' + JSON_STR + r'", "result": "(yes|no)"\}'

    def parse(self, text: str) -> YesNoVerdict:
        o = _first_with(text, self.kind, ("result",))
        res = o["result"]
        if not isinstance(res, str) or res.strip().lower() not in ("yes", "no"):
            raise ParseError(self.kind, f"result must be 'yes' or 'no', got {res!r}", text)
        return YesNoVerdict(rationale=_as_text(o.get("rationale"), self.kind, "rationale", text), result=res.strip().lower())

    def normalise(self, v: YesNoVerdict) -> float:
        return 1.0 if v.result == "yes" else 0.0

    def value(self, v: YesNoVerdict) -> str:
        return v.result

    def rationale(self, v: YesNoVerdict) -> str | None:
        return v.rationale or None

    def value_scores(self) -> dict[str, float]:
        return {"yes": 1.0, "no": 0.0}

    def fast(self) -> YesNoJSON:
        return YesNoJSON(self.field_tokens, rationale=False)

    def params(self) -> dict[str, Any]:
        return {**super().params(), **({} if self.with_rationale else {"rationale": False})}


class ScoreJSON(OutputFormat):
    """`{"eval_score": number, "explanation": str}` with a configurable range (RAG metrics)."""

    kind = "score_json"
    value_prefix = '"eval_score": '

    def __init__(self, min: float = 1, max: float = 5, decimals: int = 0, field_tokens: int = 80, explanation: bool = True):
        super().__init__(field_tokens)
        self.range = NumberRange(min, max, decimals)
        self.with_explanation = explanation

    def n_free_fields(self) -> int:
        return 1 if self.with_explanation else 0

    def regex(self) -> str:
        if not self.with_explanation:
            return r'\{"eval_score": ' + self.range.regex() + r'\}'
        return r'\{"eval_score": ' + self.range.regex() + r', "explanation": "' + JSON_STR + r'"\}'

    def parse(self, text: str) -> ScoreVerdict:
        o = _first_with(text, self.kind, ("eval_score",))
        x = self.range.check(_as_number(o["eval_score"], self.kind, "eval_score", text), self.kind, text)
        return ScoreVerdict(eval_score=x, explanation=_as_text(o.get("explanation"), self.kind, "explanation", text))

    def normalise(self, v: ScoreVerdict) -> float:
        return self.range.normalise(v.eval_score)

    def value(self, v: ScoreVerdict) -> float:
        return int(v.eval_score) if self.range.decimals == 0 else v.eval_score

    def rationale(self, v: ScoreVerdict) -> str:
        return v.explanation

    def value_scores(self) -> dict[str, float] | None:
        if self.range.decimals:
            return None  # a decimal score spans several tokens: no single verdict position
        return {str(x): self.range.normalise(x) for x in range(int(self.range.lo), int(self.range.hi) + 1)}

    def fast(self) -> ScoreJSON:
        return ScoreJSON(self.range.lo, self.range.hi, self.range.decimals, self.field_tokens, explanation=False)

    def params(self) -> dict[str, Any]:
        extra = {} if self.with_explanation else {"explanation": False}
        return {"min": self.range.lo, "max": self.range.hi, "decimals": self.range.decimals, **super().params(), **extra}


class PairwiseJSON(OutputFormat):
    """`{"better_response": 1|2|0, "explanation": str}`.

    The seed's prompt says 1 = first, 0 = second; its examples say 2 = second. Both 0 and 2 parse as
    "the second response is better"; `raw_value` keeps what the model wrote. Score: 1.0 when the first
    response is better, 0.0 when the second is.
    """

    kind = "pairwise_json"
    value_prefix = '"better_response": '

    def regex(self) -> str:
        return r'\{"better_response": (1|2|0), "explanation": "' + JSON_STR + r'"\}'

    def parse(self, text: str) -> PairwiseVerdict:
        o = _first_with(text, self.kind, ("better_response",))
        x = _as_number(o["better_response"], self.kind, "better_response", text)
        if x not in (0, 1, 2):
            raise ParseError(self.kind, f"better_response must be 1, 2 or 0, got {o['better_response']!r}", text)
        return PairwiseVerdict(
            better_response=1 if x == 1 else 2,
            raw_value=int(x),
            explanation=_as_text(o.get("explanation"), self.kind, "explanation", text),
        )

    def normalise(self, v: PairwiseVerdict) -> float:
        return 1.0 if v.better_response == 1 else 0.0

    def value(self, v: PairwiseVerdict) -> int:
        return v.better_response

    def rationale(self, v: PairwiseVerdict) -> str:
        return v.explanation

    def value_scores(self) -> dict[str, float]:
        return {"1": 1.0, "2": 0.0, "0": 0.0}


class ScoreLines(OutputFormat):
    """Two lines: `score: N` / `justification: ...` (MLflow v1 metrics)."""

    kind = "score_lines"
    value_prefix = "score: "

    def __init__(self, min: int = 1, max: int = 5, field_tokens: int = 80, justification: bool = True):
        super().__init__(field_tokens)
        self.range = NumberRange(min, max, 0)
        self.with_justification = justification

    def n_free_fields(self) -> int:
        return 1 if self.with_justification else 0

    def regex(self) -> str:
        if not self.with_justification:
            return "score: " + self.range.regex()
        return "score: " + self.range.regex() + r"\njustification: " + FREE_LINE

    _SCORE = re.compile(r"^[\s*#>-]*score\**\s*[:=]\s*\**\s*(\S+?)\**\s*$", re.I | re.M)
    _JUST = re.compile(r"^[\s*#>-]*justification\**\s*[:=]\**\s*(.*)", re.I | re.M | re.S)

    def parse(self, text: str) -> ScoreLinesVerdict:
        m = self._SCORE.search(text)
        if not m:
            raise ParseError(self.kind, "no 'score:' line", text)
        raw = m.group(1).strip().strip("\"'").rstrip(".,")
        if "/" in raw:  # "4/5"
            raw = raw.split("/")[0]
        x = self.range.check(_as_number(raw, self.kind, "score", text), self.kind, text)
        j = self._JUST.search(text, m.end())
        return ScoreLinesVerdict(score=int(x), justification=j.group(1).strip() if j else "")

    def normalise(self, v: ScoreLinesVerdict) -> float:
        return self.range.normalise(v.score)

    def value(self, v: ScoreLinesVerdict) -> int:
        return v.score

    def rationale(self, v: ScoreLinesVerdict) -> str:
        return v.justification

    def value_scores(self) -> dict[str, float]:
        return {str(x): self.range.normalise(x) for x in range(int(self.range.lo), int(self.range.hi) + 1)}

    def fast(self) -> ScoreLines:
        return ScoreLines(int(self.range.lo), int(self.range.hi), self.field_tokens, justification=False)

    def params(self) -> dict[str, Any]:
        extra = {} if self.with_justification else {"justification": False}
        return {"min": self.range.lo, "max": self.range.hi, **super().params(), **extra}


class FourLine(OutputFormat):
    """`Accuracy: X` / `Comprehensiveness: Y` / `Context Precision: Z` / `Final: W` (0–10 ints).

    `final` is always recomputed as round((X+Y+Z)/30, 1); the model's own `Final` is kept as
    `final_reported` and never trusted. `apply_rules` enforces the seed's capping rules.
    """

    kind = "four_line"
    KEYS = (("accuracy", "Accuracy"), ("comprehensiveness", "Comprehensiveness"), ("context_precision", "Context Precision"))

    def n_free_fields(self) -> int:
        return 0

    def max_tokens(self) -> int:
        return 64

    def regex(self) -> str:
        n = "(10|[0-9])"
        return f"Accuracy: {n}\\nComprehensiveness: {n}\\nContext Precision: {n}\\nFinal: (0\\.[0-9]|1\\.0)"

    def parse(self, text: str) -> FourLineVerdict:
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
        return v.final

    def value(self, v: FourLineVerdict) -> dict[str, Any]:
        return {"accuracy": v.accuracy, "comprehensiveness": v.comprehensiveness,
                "context_precision": v.context_precision, "final": v.final}

    def params(self) -> dict[str, Any]:
        return {}


class Choice(OutputFormat):
    """A choice among labels: bare (`A`) or with a rationale first (`{"rationale": .., "result": "A"}`).

    `values` maps each label to a score in [0, 1] (all labels or none).
    """

    kind = "choice"

    def __init__(self, labels: list[str], values: dict[str, float] | None = None,
                 rationale: bool = False, field_tokens: int = 80):
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
        return "(" + "|".join(_lit(x) for x in sorted(self.labels, key=len, reverse=True)) + ")"

    def n_free_fields(self) -> int:
        return 1 if self.with_rationale else 0

    def regex(self) -> str:
        if self.with_rationale:
            return r'\{"rationale": "' + JSON_STR + r'", "result": "' + self._alt() + r'"\}'
        return self._alt()

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
        objs = [_lower_keys(o) for o in _json_objects(text)]
        for o in objs:
            for key in ("result", "choice", "answer", "label"):
                if key in o:
                    lab = self._match_label(_as_text(o[key], self.kind, key, text), text)
                    why = _as_text(o["rationale"], self.kind, "rationale", text) if "rationale" in o else None
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
        return self.values[v.label] if self.values else None

    def value(self, v: ChoiceVerdict) -> str:
        return v.label

    def rationale(self, v: ChoiceVerdict) -> str | None:
        return v.rationale

    @property
    def value_prefix(self) -> str:  # type: ignore[override]
        return '"result": "' if self.with_rationale else ""

    def value_scores(self) -> dict[str, float] | None:
        return dict(self.values) if self.values else None

    def fast(self) -> Choice:
        return Choice(self.labels, self.values, rationale=False, field_tokens=self.field_tokens)

    def params(self) -> dict[str, Any]:
        return {"labels": self.labels, "values": self.values, "rationale": self.with_rationale, **super().params()}


class Statements(OutputFormat):
    """`{"statements": [str, ...]}` with at most `max_items` statements."""

    kind = "statements"

    def __init__(self, max_items: int = 12, field_tokens: int = 48):
        super().__init__(field_tokens)
        if max_items < 1:
            raise InputError(f"max_items must be >= 1, got {max_items}")
        self.max_items = max_items

    def n_free_fields(self) -> int:
        return self.max_items

    def regex(self) -> str:
        item = '"' + JSON_STR + '"'
        return r'\{"statements": \[(' + item + "(, " + item + "){0," + str(self.max_items - 1) + "})?" + r"\]\}"

    def parse(self, text: str) -> StatementsVerdict:
        o = _first_with(text, self.kind, ("statements",))
        st = o["statements"]
        if not isinstance(st, list) or not all(isinstance(s, (str, int, float)) and not isinstance(s, bool) for s in st):
            raise ParseError(self.kind, "statements must be a list of strings", text)
        return StatementsVerdict(statements=[str(s) for s in st])

    def normalise(self, v: StatementsVerdict) -> None:
        return None

    def value(self, v: StatementsVerdict) -> list[str]:
        return v.statements

    def params(self) -> dict[str, Any]:
        return {"max_items": self.max_items, **super().params()}


class VerdictList(OutputFormat):
    """`{"verdicts": [{"verdict": "yes"|"no"|"unsure", "reason": str}] * n}` with exactly n items.

    Score: mean with yes = 1, no = 0, unsure = `unsure_value` (seed: 0.5; Mastra today: 0.3).
    """

    kind = "verdict_list"

    def __init__(self, n: int, unsure_value: float = 0.5, field_tokens: int = 40):
        super().__init__(field_tokens)
        if n < 1:
            raise InputError(f"an exactly-N verdict list needs n >= 1, got {n}")
        if not 0 <= unsure_value <= 1:
            raise InputError(f"unsure_value must be in [0, 1], got {unsure_value}")
        self.n = n
        self.unsure_value = unsure_value

    def n_free_fields(self) -> int:
        return self.n

    def regex(self) -> str:
        item = r'\{"verdict": "(yes|no|unsure)", "reason": "' + JSON_STR + r'"\}'
        return r'\{"verdicts": \[' + ", ".join([item] * self.n) + r"\]\}"

    def parse(self, text: str) -> VerdictListVerdict:
        o = _first_with(text, self.kind, ("verdicts",))
        vs = o["verdicts"]
        if not isinstance(vs, list):
            raise ParseError(self.kind, "verdicts must be a list", text)
        if len(vs) != self.n:
            raise ParseError(self.kind, f"expected exactly {self.n} verdicts, got {len(vs)}", text)
        out = []
        for i, item in enumerate(vs):
            if not isinstance(item, dict):
                raise ParseError(self.kind, f"verdict {i} is not an object", text)
            item = _lower_keys(item)
            v = item.get("verdict")
            if not isinstance(v, str) or v.strip().lower() not in ("yes", "no", "unsure"):
                raise ParseError(self.kind, f"verdict {i} must be yes, no or unsure, got {v!r}", text)
            out.append(StatementVerdict(verdict=v.strip().lower(), reason=_as_text(item.get("reason"), self.kind, "reason", text)))
        return VerdictListVerdict(verdicts=out)

    def normalise(self, v: VerdictListVerdict) -> float:
        w = {"yes": 1.0, "no": 0.0, "unsure": self.unsure_value}
        return sum(w[x.verdict] for x in v.verdicts) / len(v.verdicts)

    def value(self, v: VerdictListVerdict) -> list[str]:
        return [x.verdict for x in v.verdicts]

    def rationale(self, v: VerdictListVerdict) -> str:
        return " | ".join(x.reason for x in v.verdicts)

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "unsure_value": self.unsure_value, **super().params()}


FORMATS: dict[str, type[OutputFormat]] = {
    cls.kind: cls for cls in (YesNoJSON, ScoreJSON, PairwiseJSON, ScoreLines, FourLine, Choice, Statements, VerdictList)
}


def make_format(kind: str, **params: Any) -> OutputFormat:
    """Build a format by its kind name (`yes_no_json`, `score_json`, ...) with its parameters."""
    if kind not in FORMATS:
        raise InputError(f"unknown output format {kind!r}; known: {', '.join(FORMATS)}")
    try:
        return FORMATS[kind](**params)
    except TypeError as e:
        raise InputError(f"bad parameters for format {kind!r}: {e}") from None
