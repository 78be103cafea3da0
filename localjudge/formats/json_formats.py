"""JSON formats: yes/no verdict, 1-N score, pairwise choice, statement lists, exactly-N verdict arrays."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import InputError, ParseError
from .base import (
    JSON_STR,
    LabelKind,
    NumberRange,
    OutputFormat,
    PairwiseVerdict,
    ScoreVerdict,
    StatementsVerdict,
    StatementVerdict,
    VerdictListVerdict,
    YesNoVerdict,
    as_number,
    as_text,
    first_json_with,
    lower_keys,
    number_schema,
    object_schema,
)

# MLflow's verdict spellings, copied from mlflow/genai/judges/constants.py (MLflow 3.x, Apache-2.0):
# `_sanitize_scorer_feedback` maps these to CategoricalRating.YES / NO; anything else becomes UNKNOWN.
MLFLOW_AFFIRMATIVE = frozenset(
    "true pass passed correct success 1 1.0 yes y yea yeah affirmative absolutely certainly indeed sure ok okay "
    "agree accepted right positive accurate valid validity confirmed approved complete completed good great excellent "
    "active enabled on present found match matched validated approve accept pos".split()
)
MLFLOW_NEGATIVE = frozenset(
    "false fail failed incorrect failure 0 0.0 no n nah nope negative reject rejected disagree invalid inaccurate wrong "
    "declined denied incomplete bad poor inactive disabled off missing absent notfound mismatch mismatched none null "
    "nil deny disapprove disapproved neg".split()
) | {"not approved"}


def yes_no_of(value: Any) -> str | None:
    """A verdict as MLflow reads it: "yes" or "no" for its affirmative / negative spellings (pass/fail,
    true/false, correct/incorrect, ...; a JSON boolean too), None for anything else (MLflow's "unknown")."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, str):
        return None
    v = value.strip().lower()
    return "yes" if v in MLFLOW_AFFIRMATIVE else "no" if v in MLFLOW_NEGATIVE else None


class YesNoJSON(OutputFormat):
    """`{"rationale": str, "result": "yes"|"no"}` (MLflow judges)."""

    kind = "yes_no_json"
    value_prefix = '"result": "'

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Categorical: yes or no."""
        return "categorical", ["yes", "no"]

    def __init__(self, field_tokens: int = 80, rationale: bool = True):
        super().__init__(field_tokens)
        self.with_rationale = rationale

    def n_free_fields(self) -> int:
        """1 for the rationale; 0 in the verdict-only variant."""
        return 1 if self.with_rationale else 0

    def regex(self) -> str:
        """`{"rationale": "...", "result": "yes"|"no"}`, or `{"result": ...}` alone without the rationale."""
        if not self.with_rationale:
            return r'\{"result": "(yes|no)"\}'
        return r'\{"rationale": "' + JSON_STR + r'", "result": "(yes|no)"\}'

    def json_schema(self) -> dict[str, Any]:
        """`{"rationale": string, "result": "yes"|"no"}` (or `result` alone), every key required."""
        props: dict[str, Any] = {"rationale": {"type": "string"}} if self.with_rationale else {}
        return object_schema({**props, "result": {"type": "string", "enum": ["yes", "no"]}})

    def parse(self, text: str) -> YesNoVerdict:
        """The first JSON object with a `result` key: yes or no (any case, padded), or one of MLflow's spellings
        of them (pass/fail, true/false, correct/incorrect, ...: `yes_no_of`); anything else (maybe, unknown, a
        number) is a `ParseError`, so the result is unscored, never a "no". The rationale is optional ("")."""
        o = first_json_with(text, self.kind, ("result",))
        res = o["result"]
        verdict = yes_no_of(res)
        if verdict is None:
            raise ParseError(
                self.kind,
                f"result must be 'yes' or 'no' (or an MLflow spelling of them: pass/fail, true/false, ...), got {res!r}, "
                "which MLflow reads as 'unknown'",
                text,
            )
        return YesNoVerdict(rationale=as_text(o.get("rationale"), self.kind, "rationale", text), result=verdict)

    def normalise(self, v: YesNoVerdict) -> float:
        """yes → 1.0, no → 0.0."""
        return 1.0 if v.result == "yes" else 0.0

    def value(self, v: YesNoVerdict) -> str:
        """`yes` or `no`."""
        return v.result

    def rationale(self, v: YesNoVerdict) -> str | None:
        """The rationale, or None when it is empty."""
        return v.rationale or None

    def value_scores(self) -> dict[str, float]:
        """`yes` → 1.0, `no` → 0.0 (the token after `"result": "`)."""
        return {"yes": 1.0, "no": 0.0}

    def fast(self) -> YesNoJSON:
        """The same format without the rationale field."""
        return YesNoJSON(self.field_tokens, rationale=False)

    def example_output(self, positive: bool, rationale: str) -> str:
        """`yes` (positive) or `no`, with the rationale unless this is the verdict-only variant."""
        res = "yes" if positive else "no"
        return json.dumps({"rationale": rationale, "result": res}) if self.with_rationale else json.dumps({"result": res})

    def params(self) -> dict[str, Any]:
        """`field_tokens`, plus `rationale: False` for the verdict-only variant."""
        return {**super().params(), **({} if self.with_rationale else {"rationale": False})}


class ScoreJSON(OutputFormat):
    """`{"eval_score": number, "explanation": str}` with a configurable range (RAG metrics)."""

    kind = "score_json"
    value_prefix = '"eval_score": '

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Numeric: compared with labels by rank correlation."""
        return "numeric", None

    def score_range(self) -> NumberRange | None:
        """The score's range."""
        return self.range

    def __init__(self, min: float = 1, max: float = 5, decimals: int = 0, field_tokens: int = 80, explanation: bool = True):
        super().__init__(field_tokens)
        self.range = NumberRange(min, max, decimals)
        self.with_explanation = explanation

    def n_free_fields(self) -> int:
        """1 for the explanation; 0 without it."""
        return 1 if self.with_explanation else 0

    def regex(self) -> str:
        """`{"eval_score": N, "explanation": "..."}` (or `{"eval_score": N}` alone); N enumerated over min..max."""
        if not self.with_explanation:
            return r'\{"eval_score": ' + self.range.regex() + r"\}"
        return r'\{"eval_score": ' + self.range.regex() + r', "explanation": "' + JSON_STR + r'"\}'

    def json_schema(self) -> dict[str, Any]:
        """`{"eval_score": min..max, "explanation": string}` (or the score alone); decimals as `multipleOf`."""
        props: dict[str, Any] = {"eval_score": number_schema(self.range.lo, self.range.hi, self.range.decimals)}
        if self.with_explanation:
            props["explanation"] = {"type": "string"}
        return object_schema(props)

    def parse(self, text: str) -> ScoreVerdict:
        """The first JSON object with `eval_score`: a number (or a string spelling one) within min..max, an integer
        when decimals is 0; the explanation is optional ("")."""
        o = first_json_with(text, self.kind, ("eval_score",))
        x = self.range.check(as_number(o["eval_score"], self.kind, "eval_score", text), self.kind, text)
        return ScoreVerdict(eval_score=x, explanation=as_text(o.get("explanation"), self.kind, "explanation", text))

    def normalise(self, v: ScoreVerdict) -> float:
        """The score scaled to [0, 1]: (score − min) / (max − min)."""
        return self.range.normalise(v.eval_score)

    def value(self, v: ScoreVerdict) -> float:
        """The score: an int when decimals is 0, else a float."""
        return int(v.eval_score) if self.range.decimals == 0 else v.eval_score

    def rationale(self, v: ScoreVerdict) -> str:
        """The explanation (possibly empty)."""
        return v.explanation

    def value_scores(self) -> dict[str, float] | None:
        """Each integer score as text → its normalised score; None for a decimal range (several tokens per score)."""
        if self.range.decimals:
            return None  # a decimal score spans several tokens: no single verdict position
        return {str(x): self.range.normalise(x) for x in range(int(self.range.lo), int(self.range.hi) + 1)}

    def fast(self) -> ScoreJSON:
        """The same range without the explanation field."""
        return ScoreJSON(self.range.lo, self.range.hi, self.range.decimals, self.field_tokens, explanation=False)

    def example_output(self, positive: bool, rationale: str) -> str:
        """The top score (positive) or the bottom one, as an integer, with the explanation unless verdict-only."""
        x = int(self.range.hi if positive else self.range.lo)
        return json.dumps({"eval_score": x, "explanation": rationale}) if self.with_explanation else json.dumps({"eval_score": x})

    def params(self) -> dict[str, Any]:
        """min, max, decimals and field_tokens, plus `explanation: False` without the explanation."""
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

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Pairwise: 1, 2 or a tie (both orders disagree)."""
        return "pairwise", [1, 2, "tie"]

    @classmethod
    def is_pairwise(cls, params: Mapping[str, Any]) -> bool:
        """Always: it picks the better of two responses."""
        return True

    def regex(self) -> str:
        """`{"better_response": 1|2|0, "explanation": "..."}`."""
        return r'\{"better_response": (1|2|0), "explanation": "' + JSON_STR + r'"\}'

    def json_schema(self) -> dict[str, Any]:
        """`{"better_response": 1|2|0, "explanation": string}`."""
        return object_schema({"better_response": {"type": "integer", "enum": [1, 2, 0]}, "explanation": {"type": "string"}})

    def parse(self, text: str) -> PairwiseVerdict:
        """The first JSON object with `better_response` 0, 1 or 2 (a number or a string spelling one); 0 and 2
        both read as the second response; the explanation is optional ("")."""
        o = first_json_with(text, self.kind, ("better_response",))
        x = as_number(o["better_response"], self.kind, "better_response", text)
        if x not in (0, 1, 2):
            raise ParseError(self.kind, f"better_response must be 1, 2 or 0, got {o['better_response']!r}", text)
        return PairwiseVerdict(
            better_response=1 if x == 1 else 2,
            raw_value=int(x),
            explanation=as_text(o.get("explanation"), self.kind, "explanation", text),
        )

    def normalise(self, v: PairwiseVerdict) -> float:
        """1.0 when the first response is better, 0.0 when the second is."""
        return 1.0 if v.better_response == 1 else 0.0

    def value(self, v: PairwiseVerdict) -> int:
        """The better response: 1 or 2 (a written 0 reads as 2)."""
        return v.better_response

    def rationale(self, v: PairwiseVerdict) -> str:
        """The explanation (possibly empty)."""
        return v.explanation

    def value_scores(self) -> dict[str, float]:
        """`1` → 1.0; `2` and `0` (both: the second response) → 0.0."""
        return {"1": 1.0, "2": 0.0, "0": 0.0}

    def example_output(self, positive: bool, rationale: str) -> str:
        """The first response (positive) or the second one, with the explanation."""
        return json.dumps({"better_response": 1 if positive else 2, "explanation": rationale})


class Statements(OutputFormat):
    """`{"statements": [str, ...]}` with at most `max_items` statements."""

    kind = "statements"

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """None to compare: a statement list is not a verdict."""
        return "none", None

    def __init__(self, max_items: int = 12, field_tokens: int = 48):
        super().__init__(field_tokens)
        if max_items < 1:
            raise InputError(f"max_items must be >= 1, got {max_items}")
        self.max_items = max_items

    def n_free_fields(self) -> int:
        """`max_items`: every statement is a free-text field."""
        return self.max_items

    def regex(self) -> str:
        """`{"statements": ["...", ...]}` with 0 to `max_items` strings."""
        item = '"' + JSON_STR + '"'
        return r'\{"statements": \[(' + item + "(, " + item + "){0," + str(self.max_items - 1) + "})?" + r"\]\}"

    def json_schema(self) -> dict[str, Any]:
        """`{"statements": [string, ...]}` with at most `max_items` strings."""
        return object_schema({"statements": {"type": "array", "items": {"type": "string"}, "maxItems": self.max_items}})

    def parse(self, text: str) -> StatementsVerdict:
        """The first JSON object with a `statements` list of strings (numbers kept as text); the count is not
        checked against `max_items`."""
        o = first_json_with(text, self.kind, ("statements",))
        st = o["statements"]
        if not isinstance(st, list) or not all(isinstance(s, (str, int, float)) and not isinstance(s, bool) for s in st):
            raise ParseError(self.kind, "statements must be a list of strings", text)
        return StatementsVerdict(statements=[str(s) for s in st])

    def normalise(self, v: StatementsVerdict) -> None:
        """None: a statement list carries no score."""
        return None

    def value(self, v: StatementsVerdict) -> list[str]:
        """The statements, in order."""
        return v.statements

    def params(self) -> dict[str, Any]:
        """max_items and field_tokens."""
        return {"max_items": self.max_items, **super().params()}


class VerdictList(OutputFormat):
    """`{"verdicts": [{"verdict": "yes"|"no"|"unsure", "reason": str}] * n}` with exactly n items.

    Score: mean with yes = 1, no = 0, unsure = `unsure_value` (seed: 0.5; Mastra today: 0.3).
    """

    kind = "verdict_list"

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Numeric: compared with labels by rank correlation."""
        return "numeric", None

    def __init__(self, n: int, unsure_value: float = 0.5, field_tokens: int = 40):
        super().__init__(field_tokens)
        if n < 1:
            raise InputError(f"an exactly-N verdict list needs n >= 1, got {n}")
        if not 0 <= unsure_value <= 1:
            raise InputError(f"unsure_value must be in [0, 1], got {unsure_value}")
        self.n = n
        self.unsure_value = unsure_value

    def n_free_fields(self) -> int:
        """`n`: one reason per verdict."""
        return self.n

    def regex(self) -> str:
        """`{"verdicts": [{"verdict": "yes"|"no"|"unsure", "reason": "..."}, ...]}` with exactly `n` items."""
        item = r'\{"verdict": "(yes|no|unsure)", "reason": "' + JSON_STR + r'"\}'
        return r'\{"verdicts": \[' + ", ".join([item] * self.n) + r"\]\}"

    def json_schema(self) -> dict[str, Any]:
        """`{"verdicts": [{"verdict": "yes"|"no"|"unsure", "reason": string}, ...]}` with exactly `n` items."""
        item = object_schema({"verdict": {"type": "string", "enum": ["yes", "no", "unsure"]}, "reason": {"type": "string"}})
        return object_schema({"verdicts": {"type": "array", "items": item, "minItems": self.n, "maxItems": self.n}})

    def parse(self, text: str) -> VerdictListVerdict:
        """The first JSON object with a `verdicts` list of exactly `n` objects, each verdict yes, no or unsure
        (any case); a reason is optional ("")."""
        o = first_json_with(text, self.kind, ("verdicts",))
        vs = o["verdicts"]
        if not isinstance(vs, list):
            raise ParseError(self.kind, "verdicts must be a list", text)
        if len(vs) != self.n:
            raise ParseError(self.kind, f"expected exactly {self.n} verdicts, got {len(vs)}", text)
        out = []
        for i, item in enumerate(vs):
            if not isinstance(item, dict):
                raise ParseError(self.kind, f"verdict {i} is not an object", text)
            item = lower_keys(item)
            v = item.get("verdict")
            if not isinstance(v, str) or v.strip().lower() not in ("yes", "no", "unsure"):
                raise ParseError(self.kind, f"verdict {i} must be yes, no or unsure, got {v!r}", text)
            out.append(StatementVerdict(verdict=v.strip().lower(), reason=as_text(item.get("reason"), self.kind, "reason", text)))
        return VerdictListVerdict(verdicts=out)

    def normalise(self, v: VerdictListVerdict) -> float:
        """The mean over the verdicts: yes 1, no 0, unsure `unsure_value`."""
        w = {"yes": 1.0, "no": 0.0, "unsure": self.unsure_value}
        return sum(w[x.verdict] for x in v.verdicts) / len(v.verdicts)

    def value(self, v: VerdictListVerdict) -> list[str]:
        """The verdicts (`yes`/`no`/`unsure`), in order."""
        return [x.verdict for x in v.verdicts]

    def rationale(self, v: VerdictListVerdict) -> str:
        """The reasons, joined with ` | `."""
        return " | ".join(x.reason for x in v.verdicts)

    def params(self) -> dict[str, Any]:
        """n, unsure_value and field_tokens."""
        return {"n": self.n, "unsure_value": self.unsure_value, **super().params()}
