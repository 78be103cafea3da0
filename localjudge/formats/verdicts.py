"""The verdict models: what each output format parses its text into (typed, pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class YesNoVerdict(BaseModel):
    """A yes/no result with its rationale (`yes_no_json`)."""

    rationale: str
    result: Literal["yes", "no"]


class ScoreVerdict(BaseModel):
    """A numeric `eval_score` with its explanation (`score_json`)."""

    eval_score: float
    explanation: str


class PairwiseVerdict(BaseModel):
    """The better response (1 or 2), `raw_value` as the model wrote it (0, 1 or 2), and why (`pairwise_json`)."""

    better_response: Literal[1, 2]
    raw_value: int
    explanation: str


class ScoreLinesVerdict(BaseModel):
    """An integer score with its justification (`score_lines`)."""

    score: int
    justification: str


class FourLineVerdict(BaseModel):
    """The four-line rubric: three 0–10 criteria, `final` recomputed in [0, 1], the model's own
    `final_reported` (None when absent), and the capping rules applied (`four_line`)."""

    accuracy: int
    comprehensiveness: int
    context_precision: int
    final: float
    final_reported: float | None = None
    rules_applied: list[str] = []


class ChoiceVerdict(BaseModel):
    """The chosen label, with the rationale when one was given (`choice`)."""

    label: str
    rationale: str | None = None


class StatementsVerdict(BaseModel):
    """The statements extracted from a text (`statements`)."""

    statements: list[str]


class StatementVerdict(BaseModel):
    """One statement's verdict (yes, no or unsure) and the reason for it."""

    verdict: Literal["yes", "no", "unsure"]
    reason: str


class VerdictListVerdict(BaseModel):
    """One `StatementVerdict` per statement, in order (`verdict_list`)."""

    verdicts: list[StatementVerdict]
