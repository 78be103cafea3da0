"""The native output formats of dedicated judge models: feedback first, then the verdict.

    prometheus   `<feedback> [RESULT] 4`  (absolute, 1-5)  /  `<feedback> [RESULT] A`  (relative, A or B)
                 Prometheus 2, prometheus-eval/prometheus-eval (libs/prometheus-eval/prometheus_eval/prompts.py)
    flow_judge   `<feedback>…</feedback>` then `<score>N</score>` (flowaicom/flow-judge, EvalOutput)
    selene       `**Reasoning:** …` blank line `**Result:** 4` (atla-ai/selene-mini prompt-templates)

Each is a mode: `absolute` (an integer score in min..max, normalised linearly) or `relative` (A or B:
value 1 when A, the first response, is better, 2 when B is; score 1.0 / 0.0, like `pairwise_json`, so
both-order judging, pairwise statistics and agreement treat them alike). The feedback is free text
bounded in tokens (`field_tokens`); the constraint forces it closed and the verdict to follow. Parsing
is lenient in the way each project's own parser is (Prometheus also accepts `Score: 4`, `[RESULT] (4)`,
`4 out of 5`, `[Response B]`, …), written here from their documented behaviour and test cases; text that
does not give one clear verdict is a `ParseError`, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from ..errors import InputError, ParseError
from .base import FREE_LINE, LabelKind, NumberRange, OutputFormat, literal

Mode = Literal["absolute", "relative"]


class FeedbackVerdict(BaseModel):
    """A dedicated judge's verdict: its feedback, the result as written, and the score or the preferred response."""

    feedback: str
    result: str  # as the model wrote it: "4", "A"
    score: int | None = None  # absolute mode
    better_response: Literal[1, 2] | None = None  # relative mode: A -> 1 (the first response), B -> 2


class FeedbackFormat(OutputFormat):
    """Shared by the dedicated-judge formats: free-text feedback, then a score (absolute) or A/B (relative)."""

    LABELS: ClassVar[tuple[str, str]] = ("A", "B")
    verdict_before: ClassVar[re.Pattern[str]]  # the output text just before the verdict value

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None] | None:
        """Absolute mode: numeric; relative mode: pairwise (1, 2 or a tie)."""
        return ("pairwise", [1, 2, "tie"]) if cls.is_pairwise(params) else ("numeric", None)

    @classmethod
    def is_pairwise(cls, params: Mapping[str, Any]) -> bool:
        """In relative mode (A or B)."""
        return params.get("mode") == "relative"

    def score_range(self) -> NumberRange | None:
        """The score's range in absolute mode; None in relative mode (the value is 1 or 2, not a score)."""
        return self.range if self.mode == "absolute" else None

    def example_output(self, positive: bool, rationale: str) -> str:
        """The verdict (A or B in relative mode, the top or bottom score in absolute mode) after the feedback
        (`-` when empty), laid out as the model writes it (`_example`)."""
        value = ("A" if positive else "B") if self.mode == "relative" else str(int(self.range.hi if positive else self.range.lo))
        return self._example(rationale or "-", value)

    def _example(self, feedback: str, value: str) -> str:
        """`feedback` and the verdict `value` in this model's layout (Selene's by default)."""
        return f"**Reasoning:** {feedback}\n\n**Result:** {value}"

    def __init__(self, mode: Mode = "absolute", min: int = 1, max: int = 5, field_tokens: int = 200, feedback: bool = True):
        super().__init__(field_tokens)
        if mode not in ("absolute", "relative"):
            raise InputError(f"{self.kind} mode must be 'absolute' or 'relative', got {mode!r}")
        self.mode: Mode = mode
        self.range = NumberRange(min, max, 0)
        self.with_feedback = feedback

    # -- the verdict value ---------------------------------------------------------------------

    def _value_regex(self) -> str:
        if self.mode == "relative":
            return "(" + "|".join(self.LABELS) + ")"
        return self.range.regex()

    def _verdict(self, raw: str, feedback: str, text: str) -> FeedbackVerdict:
        raw = raw.strip()
        if self.mode == "relative":
            lab = raw.upper()
            if lab not in self.LABELS:
                raise ParseError(self.kind, f"result must be A or B, got {raw!r}", text)
            return FeedbackVerdict(feedback=feedback, result=lab, better_response=1 if lab == "A" else 2)
        if not re.fullmatch(r"[+-]?\d+", raw):
            raise ParseError(self.kind, f"result must be an integer {self.range.lo:g}..{self.range.hi:g}, got {raw!r}", text)
        x = self.range.check(float(raw), self.kind, text)
        return FeedbackVerdict(feedback=feedback, result=str(int(x)), score=int(x))

    def n_free_fields(self) -> int:
        """1 for the feedback; 0 in the verdict-only variant."""
        return 1 if self.with_feedback else 0

    def normalise(self, v: FeedbackVerdict) -> float:
        """absolute: (score − min) / (max − min); relative: 1.0 when A (the first response) is better, 0.0 when B is."""
        if self.mode == "relative":
            return 1.0 if v.better_response == 1 else 0.0
        assert v.score is not None
        return self.range.normalise(v.score)

    def value(self, v: FeedbackVerdict) -> int:
        """absolute: the integer score; relative: 1 (A, the first response) or 2 (B)."""
        if self.mode == "relative":
            assert v.better_response is not None
            return v.better_response
        assert v.score is not None
        return v.score

    def rationale(self, v: FeedbackVerdict) -> str | None:
        """The feedback, or None when it is empty."""
        return v.feedback or None

    def value_scores(self) -> dict[str, float]:
        """Each verdict literal → its normalised score: the integers of the range, or A → 1.0, B → 0.0."""
        if self.mode == "relative":
            return {"A": 1.0, "B": 0.0}
        return {str(x): self.range.normalise(x) for x in range(int(self.range.lo), int(self.range.hi) + 1)}

    @property
    def value_prefix(self) -> str:  # type: ignore[override]
        """Unused: the verdict step is found with `verdict_before` (whitespace around the value may vary)."""
        return ""

    def expected_score(self, steps: list[tuple[str, dict[str, float]]]) -> float | None:
        """The expected normalised score at the verdict: the last choice point whose preceding text ends with the
        verdict marker (after any optional whitespace the model chose), weighted as in `OutputFormat.expected_score`."""
        at = [s for s in steps if self.verdict_before.search(s[0])]
        return super().expected_score(at[-1:]) if at else None

    def params(self) -> dict[str, Any]:
        """mode, min, max (absolute only), field_tokens, plus `feedback: False` in the verdict-only variant."""
        rng = {"min": int(self.range.lo), "max": int(self.range.hi)} if self.mode == "absolute" else {}
        return {"mode": self.mode, **rng, **super().params(), **({} if self.with_feedback else {"feedback": False})}

    def _same(self, feedback: bool) -> Any:
        return type(self)(self.mode, int(self.range.lo), int(self.range.hi), self.field_tokens, feedback=feedback)

    def fast(self) -> Any:
        """The same verdict without the feedback."""
        return self._same(False)


class Prometheus(FeedbackFormat):
    """Prometheus 2: `(feedback) [RESULT] (score)` — absolute 1-5 or relative A/B."""

    kind = "prometheus"
    verdict_before = re.compile(r"\[RESULT\] $")

    def regex(self) -> str:
        """Feedback (no '[') then ` [RESULT] ` and the verdict; `[RESULT] V` alone without feedback."""
        head = r"[^\[]+" if self.with_feedback else ""
        return head + r"\[RESULT\] " + self._value_regex()

    def _example(self, feedback: str, value: str) -> str:
        """`feedback [RESULT] value`; `[RESULT] value` alone without feedback."""
        return f"{feedback} [RESULT] {value}" if self.with_feedback else f"[RESULT] {value}"

    _ABS = re.compile(
        r"(?:\[RESULT\]|\[SCORE\]|score\s+of|score|result)\s*:?\s*[(\[\s]*(\d+(?:\.\d+)?)\s*[)\]]*"
        r"\s*(?:/\s*5|out\s+of\s+5)?\s*$",
        re.I,
    )
    _REL = re.compile(
        r"(?:\[RESULT\]|\[RESULT:\s*|\[Response\s+|\[Result\](?:\s+Response)?|\[Result:\s*|(?:^|\n)Result:?\s*)"
        r"\s*(A|B)\]?\s*$",
        re.I | re.M,
    )

    def parse(self, text: str) -> FeedbackVerdict:
        """The verdict at the end of the text (relative: else at the end of a line, where several that disagree are a
        `ParseError`), after `[RESULT]` (also `[SCORE]`, `Score:`, `Result:`, `score of`,
        `(Score 4)`, `4/5`, `4 out of 5`; relative: `[RESULT] A`, `[RESULT: B]`, `[Response B]`, `[Result] Response A`,
        a line `Result: A`); the feedback is the text before it (a leading `Feedback:` dropped)."""
        body = text.strip()
        if self.mode == "relative":
            found = list(self._REL.finditer(body))
            at_end = [f for f in found if f.end() == len(body)]
            if not at_end and len({f.group(1).upper() for f in found}) > 1:
                raise ParseError(self.kind, "several verdicts given: " + ", ".join(f.group(1) for f in found), text)
            m = at_end[-1] if at_end else (found[0] if found else None)
        else:
            m = self._ABS.search(body)
        if not m:
            what = "A or B" if self.mode == "relative" else f"an integer score {self.range.lo:g}..{self.range.hi:g}"
            raise ParseError(self.kind, f"no '[RESULT] ' followed by {what} at the end", text)
        feedback = re.sub(r"^\s*(?:###\s*)?Feedback\s*:\s*", "", body[: m.start()], flags=re.I).strip()
        return self._verdict(m.group(1), feedback, text)


class FlowJudge(FeedbackFormat):
    """Flow-Judge: `<feedback>…</feedback>` then `<score>N</score>` (newlines inside the tags optional)."""

    kind = "flow_judge"
    verdict_before = re.compile(r"<score>\n?$")

    def _example(self, feedback: str, value: str) -> str:
        """The feedback and the score in their tags, each on its own lines."""
        return f"<feedback>\n{feedback}\n</feedback>\n<score>\n{value}\n</score>"

    @classmethod
    def is_pairwise(cls, params: Mapping[str, Any]) -> bool:
        """Never: Flow-Judge grades one output on a rubric (absolute mode only)."""
        return False

    def __init__(self, mode: Mode = "absolute", min: int = 1, max: int = 5, field_tokens: int = 200, feedback: bool = True):
        if mode != "absolute":
            raise InputError("flow_judge grades one output on a rubric: mode must be 'absolute'")
        super().__init__(mode, min, max, field_tokens, feedback)

    def regex(self) -> str:
        """`<feedback>` text (no '<') `</feedback>` then `<score>` N `</score>`, a newline allowed after each tag."""
        score = r"<score>\n?" + self._value_regex() + r"\n?</score>"
        return (r"<feedback>\n?[^<]+</feedback>\n?" + score) if self.with_feedback else score

    _SCORE = re.compile(r"<score>\s*([+-]?\d+(?:\.\d+)?)\s*</score>", re.S)
    _FEEDBACK = re.compile(r"<feedback>\s*(.*?)\s*</feedback>", re.S)

    def parse(self, text: str) -> FeedbackVerdict:
        """The integer inside `<score>…</score>` (one score tag; several that disagree are a `ParseError`) and the
        text inside `<feedback>…</feedback>` ("" when absent)."""
        scores = {s.strip() for s in self._SCORE.findall(text)}
        if not scores:
            raise ParseError(self.kind, "no <score>N</score>", text)
        if len(scores) > 1:
            raise ParseError(self.kind, f"several scores given: {sorted(scores)}", text)
        fb = self._FEEDBACK.search(text)
        return self._verdict(scores.pop(), fb.group(1) if fb else "", text)


class Selene(FeedbackFormat):
    """Atla Selene: `**Reasoning:** <feedback>` then a blank line and `**Result:** <score or A/B>`."""

    kind = "selene"
    verdict_before = re.compile(r"\*\*Result:\*\* $")

    def regex(self) -> str:
        """`**Reasoning:** ` one paragraph, a blank line, `**Result:** ` and the verdict (`**Result:** V` alone without it)."""
        res = literal("**Result:** ") + self._value_regex()
        return (literal("**Reasoning:** ") + FREE_LINE + r"\n\n" + res) if self.with_feedback else res

    _RESULT = re.compile(r"^[ \t>*_-]*\**\s*result\s*\**\s*:\s*\**\s*\[?([A-Za-z0-9+-]+)\]?\**\s*\.?\s*$", re.I | re.M)
    _REASON = re.compile(r"\**\s*reasoning\s*\**\s*:\s*\**\s*", re.I)

    def parse(self, text: str) -> FeedbackVerdict:
        """The last line `**Result:** V` (bold optional, any case); the feedback is what follows `**Reasoning:**`
        up to that line (or all text before it)."""
        found = list(self._RESULT.finditer(text))
        if not found:
            raise ParseError(self.kind, "no '**Result:**' line", text)
        m = found[-1]
        before = text[: m.start()]
        r = self._REASON.search(before)
        feedback = (before[r.end() :] if r else before).strip()
        return self._verdict(m.group(1), feedback, text)
