"""One engine drain over judges' rows: the step the batch runner's local loop and a Ray worker share.

    batch = EngineBatch(engine, options, model_id, on_result)
    batch.submit(judge_a, rows_a)        # numbered 0..len(rows_a)-1
    batch.submit(judge_b, rows_b)        # numbered on: len(rows_a)..
    batch.drain(fatal=(ModelError, ConstraintError))

Every row is reported exactly once through `on_result(number, JudgeResult | Exception)`, in the order the
judge finishes it. A drain that fails with an error not in `fatal` (the engine broke mid-batch) reports
that error for every row not reported yet, in submission order; a `fatal` error propagates. A judge that
never reports a row is left to the caller (`unreported()` names those rows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..engine.base import DecodeOptions, Engine
from ..store.results import JudgeResult
from .protocol import JudgeProtocol

OnResult = Callable[[int, "JudgeResult | Exception"], None]


class EngineBatch:
    """Rows of one or more judges submitted to `engine` and decoded in one drain (side by side when it batches)."""

    def __init__(self, engine: Engine, options: DecodeOptions, model_id: str, on_result: OnResult):
        self.engine, self.options, self.model_id, self.on_result = engine, options, model_id, on_result
        self.size = 0
        self._finished: set[int] = set()

    def submit(self, judge: JudgeProtocol, rows: Sequence[Mapping[str, Any]]) -> None:
        """Queue `judge` over `rows`; their numbers continue after the rows submitted before."""
        first = self.size
        self.size += len(rows)

        def report(i: int, r: JudgeResult | Exception) -> None:
            self._finished.add(first + i)
            self.on_result(first + i, r)

        judge.submit_many(self.engine, rows, self.options, report, self.model_id)

    def drain(self, fatal: tuple[type[BaseException], ...]) -> None:
        """Decode everything submitted; on a non-`fatal` failure every unreported row gets that error."""
        try:
            self.engine.drain()
        except fatal:
            raise
        except Exception as e:  # the engine failed mid-batch: every unfinished row gets this error
            for k in range(self.size):
                if k not in self._finished:
                    self._finished.add(k)
                    self.on_result(k, e)

    def unreported(self) -> list[int]:
        """The rows no result was reported for (a judge that dropped one)."""
        return [k for k in range(self.size) if k not in self._finished]
