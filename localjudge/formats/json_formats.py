"""JSON formats: yes/no verdict, 1-N score, pairwise choice, statement lists, exactly-N verdict arrays."""

from __future__ import annotations

from typing import Any

from ..errors import InputError, ParseError
from .base import (
    JSON_STR,
    NumberRange,
    OutputFormat,
    PairwiseVerdict,
    ScoreVerdict,
    StatementsVerdict,
    StatementVerdict,
    VerdictListVerdict,
    YesNoVerdict,
    _as_number,
    _as_text,
    _first_with,
    _lower_keys,
)


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
