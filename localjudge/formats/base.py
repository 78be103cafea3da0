"""The `OutputFormat` contract and the lenient parsing helpers all formats share (the verdict models: verdicts.py).

Each `OutputFormat` knows three things:
  * `constraint()` – the decoding constraint as a typed value (`constraints.Regex`, `JSONSchema`, `Lark`; the
    constraint registry picks the engine that compiles it); `regex()` for a format whose constraint is a regex;
  * `parse(text)` – raw text (constrained or not) → typed pydantic verdict, or `ParseError`;
  * `normalise(verdict)` – the verdict as a score in [0, 1] (None where a format has no score).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from ..constraints.spec import ConstraintSpec, Regex
from ..errors import ConstraintError, InputError, ParseError
from ..store.format_spec import FormatSpec
from .verdicts import (  # noqa: F401  (the verdict models stay importable from here)
    ChoiceVerdict,
    FourLineVerdict,
    PairwiseVerdict,
    ScoreLinesVerdict,
    ScoreVerdict,
    StatementsVerdict,
    StatementVerdict,
    VerdictListVerdict,
    YesNoVerdict,
)

# A JSON string body: any char but quote, backslash and control chars, or a simple escape.
JSON_STR = r'([^"\\\x00-\x1F]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*'
FREE_LINE = r"[^\n]+"
# how a format's results compare with human labels (labels/agreement.py, trust/, the labelling view); the one
# "kind" type of results; "none": they cannot be compared (a statement list)
LabelKind = Literal["categorical", "numeric", "pairwise", "none"]


def literal(text: str) -> str:
    """`text` as a regex that matches it literally."""
    return re.escape(text)


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema object with these properties, all required, in this order, nothing else allowed."""
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def number_schema(lo: float, hi: float, decimals: int) -> dict[str, Any]:
    """A closed range as a JSON schema: an integer, or a number with `decimals` places (`multipleOf`)."""
    lo_, hi_ = (int(lo), int(hi)) if lo == int(lo) and hi == int(hi) else (lo, hi)
    if decimals == 0:
        return {"type": "integer", "minimum": lo_, "maximum": hi_}
    return {"type": "number", "minimum": lo_, "maximum": hi_, "multipleOf": 10**-decimals}


# ------------------------------------------------------------------------------------- text helpers
# Public: the parsing helpers every format (and the trace judge's action format) builds on.

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def json_objects(text: str) -> list[Any]:
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


def lower_keys(obj: dict) -> dict:
    """Keys lower-cased, spaces as underscores ("Better Response" → "better_response")."""
    return {str(k).strip().lower().replace(" ", "_"): v for k, v in obj.items()}


def first_json_with(text: str, fmt: str, keys: tuple[str, ...]) -> dict:
    """The first JSON object in `text` (keys lower-cased) that has every key; `ParseError` otherwise."""
    objs = [lower_keys(o) for o in json_objects(text)]
    for o in objs:
        if all(k in o for k in keys):
            return o
    if objs:
        raise ParseError(fmt, f"JSON object lacks key(s) {', '.join(k for k in keys if k not in objs[0])}", text)
    raise ParseError(fmt, "no JSON object found", text)


def as_text(value: Any, fmt: str, key: str, text: str) -> str:
    """A JSON value as text (None → ""); a list or object is a `ParseError`."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise ParseError(fmt, f"{key!r} must be a string, got {type(value).__name__}", text)
    return str(value)


def as_number(value: Any, fmt: str, key: str, text: str) -> float:
    """A JSON number, or a string that spells one ("4", " 3.5 "), as a finite float; else `ParseError`."""
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


_THINK = re.compile(r"\A\s*<(think|thinking|reasoning)>.*?</\1>\s*", re.S)


def strip_think(text: str) -> str:
    """`text` without a leading reasoning block (`<think>...</think>`, as reasoning judges and reasoning models
    write before their answer); text without one is returned unchanged. Every format's `parse` applies it."""
    m = _THINK.match(text)
    return text[m.end() :] if m else text


def think_text(text: str) -> str | None:
    """The leading reasoning block's inner text, or None when there is none."""
    m = _THINK.match(text)
    if not m:
        return None
    inner = m.group(0).strip()
    return inner[inner.index(">") + 1 : inner.rindex("<")].strip()


class OutputFormat(ABC):
    """An output contract: decoding constraint + parser + normaliser."""

    kind: ClassVar[str]
    constrained: ClassVar[bool] = True  # False: decoded without a constraint (free text), bounded by max_tokens() alone

    def __init_subclass__(cls, **kw: Any) -> None:
        """Every subclass's `parse` reads the text after a leading think block (never the block itself)."""
        super().__init_subclass__(**kw)
        own = cls.__dict__.get("parse")
        if own is not None and not getattr(own, "_strips_think", False):

            def parse(self: Any, text: str, _own: Any = own) -> BaseModel:
                return _own(self, strip_think(text))

            parse.__doc__, parse.__name__, parse._strips_think = own.__doc__, "parse", True  # type: ignore[attr-defined]
            cls.parse = parse  # type: ignore[method-assign]

    def __init__(self, field_tokens: int = 80):
        if field_tokens < 1:
            raise InputError(f"field_tokens must be >= 1, got {field_tokens}")
        self.field_tokens = field_tokens

    def constraint(self) -> ConstraintSpec:
        """The decoding constraint as a typed value: by default the whole output as `Regex(self.regex())`; a format
        whose output is not a regular language returns another (`JSONSchema`, `Lark`) instead."""
        if type(self).regex is OutputFormat.regex:
            raise NotImplementedError(f"{type(self).__name__} defines neither regex() nor constraint()")
        return Regex(self.regex())

    def regex(self) -> str:
        """The whole output as a regular expression (outlines-core syntax): what a regex format defines (its
        `constraint()` wraps it); `ConstraintError` for a format whose constraint is not a regex."""
        spec = self.constraint()
        if isinstance(spec, Regex):
            return spec.pattern
        raise ConstraintError(f"the {self.kind} format's constraint is a {spec.name}, not a regex")

    @abstractmethod
    def parse(self, text: str) -> BaseModel:
        """Text → typed verdict, or `ParseError` naming what is wrong."""

    @abstractmethod
    def normalise(self, verdict: Any) -> float | None:
        """Verdict → score in [0, 1]; None where the format carries no score."""

    def value(self, verdict: Any) -> Any:
        """The raw value a user reads (yes/no, a number, a label, a dict of criteria)."""
        return verdict.model_dump()

    def json_schema(self) -> dict[str, Any] | None:
        """The JSON schema whose values are exactly what `regex()` allows (what the `server:` backend sends as
        `response_format`), or None for a format whose output is not JSON."""
        return None

    def rationale(self, verdict: Any) -> str | None:
        """The verdict's free-text justification, or None (the default: the format has none)."""
        return None

    def n_free_fields(self) -> int:
        """How many free-text fields the output has, each bounded by `field_tokens` (default 1)."""
        return 1

    def max_tokens(self) -> int:
        """Whole-output token budget: every free field's budget plus room for the structure."""
        return self.n_free_fields() * self.field_tokens + 32 + len(self.constraint().text()) // 2

    def params(self) -> dict[str, Any]:
        """The parameters that define this format; with `kind` they make `spec()`."""
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
        """A short readable form, `kind(param=value, ...)`."""
        return f"{self.kind}({', '.join(f'{k}={v}' for k, v in self.params().items())})"

    def format_spec(self) -> FormatSpec:
        """This format as typed data (what a result carries and the store keeps); `make_format` builds it back."""
        return FormatSpec(kind=self.kind, params=self.params())

    # -- facts about the format's results that reports, agreement and integrations read -------------
    # Class methods take the parameters of a stored spec (a record's format), so no format is built.

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """How results compare with human labels, and the values the format can produce (None: any);
        None (the default) when that is decided from the results' values (numbers: numeric)."""
        return None

    @classmethod
    def is_pairwise(cls, params: Mapping[str, Any]) -> bool:
        """Whether results pick the better of two responses (1 or 2): a pairwise format, swappable for
        position-bias checks (default False)."""
        return False

    def score_range(self) -> NumberRange | None:
        """The closed numeric range the verdict's value lies in, for integrations that rescale a value
        (MLflow's pass rule); None (the default) for a format whose value is not a number in a range."""
        return None

    def example_output(self, positive: bool, rationale: str) -> str:
        """The output a few-shot example shows for a positive or negative label: the verdict the label implies
        (yes/no, the top or bottom score, the first or second answer, a labelled choice) with `rationale` in the
        free-text field where there is one; `InputError` (the default) for a format that has no such verdict."""
        raise InputError(f"few-shot examples are not supported for format {self.kind!r}; use --examples 0")


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
        """Every allowed value as an alternation, highest first; with decimals, each integer below `hi` may take
        1..decimals fractional digits (negative integers none) and `hi` only zeros."""
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
        """`x` unchanged when it lies in lo..hi (and is an integer when decimals is 0), else `ParseError`.
        The number of decimal places is not checked."""
        if x < self.lo or x > self.hi:
            raise ParseError(fmt, f"score {x:g} is outside {self.lo:g}..{self.hi:g}", text)
        if self.decimals == 0 and x != int(x):
            raise ParseError(fmt, f"score {x:g} is not an integer", text)
        return x

    def normalise(self, x: float) -> float:
        """`x` scaled to [0, 1] as (x − lo) / (hi − lo); 1.0 for a one-value range."""
        return 1.0 if self.hi == self.lo else (x - self.lo) / (self.hi - self.lo)


# ---------------------------------------------------------------------------------------- formats
