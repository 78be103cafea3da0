"""The typed result of one judgement: what every judge returns and every store, summary and
report reads. Failure is data: a result that could not be scored has `score=None` and an
`unscored_reason`, and is counted apart from "no" everywhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field


class Usage(BaseModel):
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    output_tokens: int = 0
    forced_tokens: int = 0
    calls: int = 0
    fields_cut: int = 0

    @classmethod
    def of(cls, gens: Sequence[Any]) -> Usage:
        """Summed over an evaluation's `Generation`s."""
        return cls(prompt_tokens=sum(g.n_prompt_tokens for g in gens), cached_prompt_tokens=sum(g.n_cached_prompt_tokens for g in gens),
                   output_tokens=sum(g.n_output_tokens for g in gens), forced_tokens=sum(g.n_forced_tokens for g in gens),
                   calls=len(gens), fields_cut=sum(g.fields_cut for g in gens))


class Timings(BaseModel):
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    total_ms: float = 0.0

    @classmethod
    def of(cls, gens: Sequence[Any]) -> Timings:
        return cls(prompt_ms=sum(g.prompt_ms for g in gens), decode_ms=sum(g.decode_ms for g in gens),
                   total_ms=sum(g.total_ms for g in gens))


class JudgeResult(BaseModel):
    judge: str
    judge_version: str
    format: str
    value: Any = None  # yes/no, an int, a dict of criteria, a label, a list of verdicts
    score: float | None = None  # normalised to [0, 1]
    passed: bool | None = None
    rationale: str | None = None
    raw_text: str = ""
    verdict: dict[str, Any] | None = None  # the typed verdict, dumped
    unscored_reason: str | None = None  # e.g. "parse_error", "max_iterations", "prompt_too_long"
    error: str | None = None  # one-line explanation when unscored
    model_id: str = ""
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    expected_score: float | None = None  # probability-weighted score, when asked
    details: dict[str, Any] = Field(default_factory=dict)  # judge-specific extras (per-doc verdicts, tool calls)

    @property
    def scored(self) -> bool:
        return self.unscored_reason is None
