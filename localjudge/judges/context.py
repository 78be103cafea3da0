"""What a judge's program reads for one row: `CallContext`, built once where the row's calls start (`Judge._calls`)
and handed to its program (programs.py) and from there to a several-call module's metric (ragas_agent.py,
deepeval_*.py), instead of the same six or seven arguments at every step.

The two protocols say what the programs use of `judges.judge.Judge` (typed here, so that the modules judge.py imports
do not import it back): `Judge`, what a several-call module uses, and `ProgramJudge`, what the programs of one call,
one call per item and two stages use besides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, cast

from ..engine.base import Calls, DecodeOptions, Generation, Message
from ..errors import UnscoredReason
from ..formats import OutputFormat
from ..store.results import JudgeResult
from .sections import KindSection, Section, typed_section
from .spec import JudgeSpec


class StageFormats(Protocol):
    """What the programs read of a judge's plan (`builders.Plan`, not imported: builders imports the modules that
    import this one): its stages' formats, None where a stage's format is built per call."""

    formats: list[OutputFormat | None]


class Judge(Protocol):
    """What the several-call modules use of `judges.judge.Judge`."""

    spec: JudgeSpec

    @property
    def formats(self) -> list[OutputFormat | None]: ...

    @property
    def output_formats(self) -> list[OutputFormat]:
        """The stages' formats known before any output."""
        ...

    def _messages(self, stage: int, raw: dict[str, Any], text: dict[str, str]) -> list[Message]: ...

    def _base(self, gens: Sequence[Generation], fmt: OutputFormat | None, model_id: str = "") -> dict[str, Any]: ...

    def _scored(
        self,
        base: dict[str, Any],
        value: Any,
        score: float | None,
        rationale: str | None,
        verdict: dict[str, Any] | None,
        details: dict[str, Any] | None = None,
    ) -> JudgeResult: ...

    def _unscored(
        self, gens: Sequence[Generation], model_id: str, reason: str, error: str, details: dict[str, Any] | None = None
    ) -> JudgeResult: ...


class ProgramJudge(Judge, Protocol):
    """What the programs (programs.py) use of `judges.judge.Judge` besides."""

    @property
    def _plan(self) -> StageFormats: ...

    section: KindSection  # the judge's kind section (sections.py), checked at load

    def _item_texts(self, raw: dict[str, Any], text: dict[str, str]) -> list[tuple[Any, dict[str, str]]]: ...

    def _single(self, gens: list[Generation], fmt: OutputFormat, raw: dict[str, Any]) -> JudgeResult: ...

    def _aligned(self, res: JudgeResult, fmt: OutputFormat) -> JudgeResult: ...

    def _per_item(self, gens: list[Generation], fmt: OutputFormat, is_list: bool) -> JudgeResult: ...

    def _two_stage(self, ctx: CallContext[KindSection]) -> Calls: ...


S = TypeVar("S", bound=Section)
T = TypeVar("T", bound=Section)


@dataclass(frozen=True)
class CallContext(Generic[S]):
    """One row's calls: the judge, its kind's section (typed `S` once a program has checked it: `typed`), the row's
    raw values and prompt texts, the generations so far (`gens`, filled as the calls answer; the result keeps them),
    the model id recorded on the result, the decode options, and what the stages parsed so far (`outputs`, kept on an
    unscored result; its length names the stage that failed). `gens` and `outputs` are the row's own lists, filled in
    place: a program extends them, never rebinds them."""

    judge: ProgramJudge
    section: S
    raw: dict[str, Any]
    text: dict[str, str]
    model_id: str
    options: DecodeOptions | None = None
    gens: list[Generation] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def typed(self, want: type[T]) -> CallContext[T]:
        """This context with its section as the type `want` a program reads (the same object, checked: a kind whose
        traits name a program of another kind's section is a programming error, named)."""
        typed_section(self.section, want, self.judge.spec.kind)
        return cast("CallContext[T]", self)

    def messages(self, stage: int, fields: dict[str, str] | None = None) -> list[Message]:
        """Stage `stage`'s messages for the row, with `fields` (the values the program computed between calls) over
        its texts."""
        return self.judge._messages(stage, self.raw, {**self.text, **fields} if fields is not None else self.text)

    def scored(
        self,
        fmt: OutputFormat | None,
        value: Any,
        score: float | None,
        rationale: str | None,
        verdict: dict[str, Any] | None,
        details: dict[str, Any] | None = None,
    ) -> JudgeResult:
        """The row's result, scored: its calls so far under `fmt` (the last call's format) and the model id."""
        return self.judge._scored(self.judge._base(self.gens, fmt, self.model_id), value, score, rationale, verdict, details)

    def parse_failed(self, stage: str, error: Exception) -> JudgeResult:
        """The row's result, unscored (`parse_error`) at the stage named `stage`: its calls so far and what the stages
        parsed (`outputs`) kept."""
        return self.judge._unscored(self.gens, self.model_id, UnscoredReason.PARSE_ERROR, f"{stage}: {error}", self.outputs)
