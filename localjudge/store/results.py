"""The typed result of one judgement, and the stored row that carries it.

`JudgeResult` is what every judge returns; `ResultRow` (one (row, judge) cell with its inputs and
reproducibility `Record`) is what the store writes, the exports print (results.jsonl) and the report
reads: one model for all three. Failure is data: a result that could not be scored has `score=None`
and an `unscored_reason`, and is counted apart from "no" everywhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, model_validator

from .format_spec import FormatSpec, legacy_format_spec


class Usage(BaseModel):
    """Tokens and calls one judgement cost (summed over its generations)."""

    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    output_tokens: int = 0
    forced_tokens: int = 0
    calls: int = 0
    fields_cut: int = 0

    @classmethod
    def of(cls, gens: Sequence[Any]) -> Usage:
        """Summed over an evaluation's `Generation`s."""
        return cls(
            prompt_tokens=sum(g.n_prompt_tokens for g in gens),
            cached_prompt_tokens=sum(g.n_cached_prompt_tokens for g in gens),
            output_tokens=sum(g.n_output_tokens for g in gens),
            forced_tokens=sum(g.n_forced_tokens for g in gens),
            calls=len(gens),
            fields_cut=sum(g.fields_cut for g in gens),
        )


class Timings(BaseModel):
    """Milliseconds one judgement took: prompt evaluation, decoding, and in all."""

    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    total_ms: float = 0.0

    @classmethod
    def of(cls, gens: Sequence[Any]) -> Timings:
        """Summed over an evaluation's `Generation`s."""
        return cls(
            prompt_ms=sum(g.prompt_ms for g in gens),
            decode_ms=sum(g.decode_ms for g in gens),
            total_ms=sum(g.total_ms for g in gens),
        )


class JudgeResult(BaseModel):
    """One judgement: value, score in [0, 1], pass/fail, rationale, raw text, or why it is unscored."""

    judge: str
    judge_version: str
    format: str
    value: Any = None  # yes/no, an int, a dict of criteria, a label, a list of verdicts
    score: float | None = None  # normalised to [0, 1]
    passed: bool | None = None
    rationale: str | None = None
    raw_text: str = ""
    verdict: dict[str, Any] | None = None  # the typed verdict, dumped
    unscored_reason: str | None = None  # an `UnscoredReason` value (or a plugin's own), None when scored
    error: str | None = None  # one-line explanation when unscored
    model_id: str = ""
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    expected_score: float | None = None  # probability-weighted score, when asked
    details: dict[str, Any] = Field(default_factory=dict)  # judge-specific extras (per-doc verdicts, tool calls)
    # the format typed (kind + parameters): what reports, agreement and labels ask about the results; never part
    # of the result's JSON (stored rows and results.jsonl stay as they were), kept in the store's own column
    format_spec: FormatSpec | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _legacy_spec(self) -> JudgeResult:
        """A result made without a typed spec (read from an old results.jsonl, or made by a judge that names its
        format only) carries the one its `format` string names (the legacy reader)."""
        if self.format_spec is None and self.format:
            self.format_spec = legacy_format_spec(self.format)
        return self

    @property
    def scored(self) -> bool:
        """False when the judgement could not be scored (see `unscored_reason`)."""
        return self.unscored_reason is None


class Record(BaseModel):
    """The reproducibility record of one judgement; its hash (minus `model_id`) is the cache key."""

    model_id: str
    model_sha256: str
    judge_version: str
    format: Any = None
    prompt_hash: str
    decode_options: dict[str, Any]
    seed: int | None = None
    localjudge_version: str


class ResultRow(BaseModel):
    """One (row, judge) cell as stored, exported (a line of results.jsonl) and reported."""

    run_id: str = ""
    row_index: int
    row_id: str
    source: str = ""
    judge: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    cache_key: str | None = None
    record: Record | None = None  # None when the row failed before its prompt could be rendered
    result: JudgeResult
    error: str | None = None
    # where the row sits in a conversation (store migration 005_conversations); left out of the JSON when None, so
    # single-turn rows are written exactly as before
    conversation_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
    turn_index: int | None = Field(default=None, exclude_if=lambda v: v is None)
    tool_call_index: int | None = Field(default=None, exclude_if=lambda v: v is None)
    truncated_turns: int | None = Field(default=None, exclude_if=lambda v: v is None)  # leading turns cut to fit

    @property
    def key(self) -> tuple[str, str]:
        """(row_id, judge): how rows of two runs of the same data are matched."""
        return (self.row_id, self.judge)

    def record_fields(self) -> dict[str, Any]:
        """The record as a plain dict (empty when there is none)."""
        return self.record.model_dump() if self.record is not None else {}
