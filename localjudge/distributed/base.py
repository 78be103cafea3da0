"""The executor seam of the batch runner: who judges the cells that need the model.

The runner prepares every (row, judge) cell itself (stored, cached and bad cells are committed at
once, without the model) and hands the rest to an executor, then commits each result the moment it
comes back. `executor=None` (or "local") is the runner's own loop in this process; `RayExecutor`
(ray_executor.py) judges the same cells on a Ray cluster. Anything with these three methods can be
passed as `evaluate(..., executor=...)`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from ..engine.backends import ModelRef
from ..engine.base import DecodeOptions, ModelIdentity
from ..judges.protocol import JudgeProtocol
from ..store.results import JudgeResult


class PendingCell(Protocol):
    """What an executor sees of a cell that needs a judgement: the judge and the row's values."""

    @property
    def judge(self) -> JudgeProtocol:
        """The judge to run."""

    @property
    def values(self) -> Mapping[str, Any]:
        """The judge's variables for this row (as `submit_many` takes them)."""


@runtime_checkable
class Executor(Protocol):
    """Judges pending cells somewhere else than the runner's own loop."""

    def open(self, model: ModelRef, identity: ModelIdentity) -> None:
        """Connect and check the configuration, before the run writes anything (a bad one: `InputError`).
        `identity` is what the driver recorded (workers must run the model with this digest)."""

    def judge(self, cells: Iterator[Any], options: DecodeOptions, model_id: str) -> Iterator[tuple[Any, JudgeResult | Exception]]:
        """Judge each `PendingCell` pulled from `cells` (lazily: pulling prepares more rows), yielding
        (cell, result or the exception its judgement raised) as results arrive, in any order, each
        cell exactly once. Errors that stop the run (`ModelError`, `ConstraintError`) are raised."""

    def close(self) -> None:
        """Release the workers (called once the run ends, however it ends)."""
