"""The one cell loop of a batch run: prepare each (row, judge) cell, judge what needs the model, commit each result.

`CellLoop` owns a run's cells: `prepare` commits a cell that needs no inference at once (bad input, already
stored with the same key, found in the cache) and returns the rest; `judged` turns a judgement (or the
exception it raised) into a stored result and counts it. Two drivers feed it, and differ only in who judges:
`run_chunk` on this process's engine (chunk by chunk, judge by judge, one drain per chunk, through
`judges.batch.EngineBatch`, the step a Ray worker runs too) and `run_on` on an executor (cells streamed to
it, results committed in the order they come back). Every result is committed the moment it finishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..datasets import Row, extract
from ..distributed.base import Executor
from ..engine.backends import ModelRef
from ..engine.base import Engine
from ..errors import ConstraintError, InputError, ModelError, PromptTooLongError, StorageError, UnscoredReason
from ..judges.batch import EngineBatch
from ..judges.protocol import JudgeProtocol, Prepared
from ..store.db import Store
from ..store.results import JudgeResult, Record, ResultRow
from .plan import CellKeys, JudgePlan
from .types import Progress, RunCounts

MAX_CONSECUTIVE_FAILURES = 10  # judgements in a row raising unexpected errors before the run stops


@dataclass
class RunState:
    """A run's running totals: counts, passes per judge, cells done, unexpected failures in a row."""

    counts: RunCounts = field(default_factory=RunCounts)
    passes: dict[str, list[int]] = field(default_factory=dict)
    cells_done: int = 0
    consecutive_failures: int = 0

    def progress(self, rows_done: int, n_rows: int, n_judges: int, t0: float) -> Progress:
        """The `Progress` a callback receives now."""
        c = self.counts
        return Progress(
            rows_done=rows_done,
            rows_total=n_rows,
            cells_done=self.cells_done,
            cells_total=n_rows * n_judges,
            evaluated=c.evaluated,
            cached=c.cached,
            reused=c.reused,
            elapsed_s=time.time() - t0,
            pass_rates={j: (p[0], p[1]) for j, p in self.passes.items()},
        )


@dataclass
class Cell:
    """A (row, judge) cell that needs the model: its values, its stored row's fields, record and cache key."""

    row: Row
    plan: JudgePlan
    values: dict[str, Any]
    base: dict[str, Any]
    record: Record
    key: str
    prepared: Prepared  # the values as the judge prepared them for the key: its calls start from them

    @property
    def judge(self) -> JudgeProtocol:
        """The judge this cell needs (what an executor sees: `judge` and `values`)."""
        return self.plan.judge


@dataclass
class CellLoop:
    """The cells of one run in one store: prepared, judged and committed; `tick` runs after every cell."""

    store: Store
    run_id: str
    keys: CellKeys
    st: RunState
    tick: Callable[[], None] = lambda: None

    def prepare(self, row: Row, plan: JudgePlan) -> Cell | None:
        """Commit a cell that needs no inference (bad input, already stored, cached) and return None;
        else return what its judgement needs."""
        values, problem = extract(row, plan.columns, plan.required, plan.allow_empty)
        base = dict(run_id=self.run_id, row_index=row.index, row_id=row.row_id, source=row.source, judge=plan.name, inputs=values)
        if row.position is not None:  # a row of a conversation (conversations/dataset.py)
            pos = row.position
            base.update(
                conversation_id=pos.conversation_id,
                turn_index=pos.turn_index,
                tool_call_index=pos.tool_call_index,
                truncated_turns=pos.truncated_turns,
            )
        record = key = prepared = None
        if problem is None:
            try:
                # every prompt the judge will send (a two-stage judge's second prompt, each per-item prompt),
                # not only the first one render() shows; bad input raises here. Its calls reuse this work.
                prepared = plan.judge.prepare(values)
            except InputError as e:
                problem = (UnscoredReason.INPUT_ERROR, f"{row.source}: {e}")
            else:
                record, key = self.keys.record_and_key(plan, prepared.fingerprint)
        if problem is not None:
            self._commit(plan, ResultRow(**base, result=self._failed(plan, *problem), error=problem[1]))
            return None
        assert key is not None and record is not None and prepared is not None
        legacy = self.keys.legacy_key(plan, record)  # a panel member's key in stores written before it was a solo key
        stored = self.store.cell(self.run_id, row.index, plan.name)
        if stored is not None and stored[0] == key:
            self.st.counts.reused += 1
            self._count(plan.name, stored[1], stored[2], failed=False)
            return None
        if stored is not None and legacy is not None and stored[0] == legacy:
            # an older panel's member: reused, and re-keyed (with its cache entry) so that solo runs find it too
            self.st.counts.reused += 1
            old = self.store.cached(legacy)
            if old is None:
                self._count(plan.name, stored[1], stored[2], failed=False)
            else:
                self._commit(plan, self._row(plan, base, key, record, old), cache=True, failed=False)
            return None
        cached = self.store.cached(key)
        from_legacy = False
        if cached is None and legacy is not None:  # cached by an older panel: copied under this key too
            cached = self.store.cached(legacy)
            from_legacy = cached is not None
        if cached is not None:
            self.st.counts.cached += 1
            self._commit(plan, self._row(plan, base, key, record, cached), cache=from_legacy)
            return None
        return Cell(row, plan, values, base, record, key, prepared)

    @staticmethod
    def _row(plan: JudgePlan, base: dict[str, Any], key: str, record: Record, cached: JudgeResult) -> ResultRow:
        """A stored row for a result found in the cache (under this cell's key, or a panel member's older key)."""
        err = cached.error if cached.unscored_reason == UnscoredReason.PROMPT_TOO_LONG else None
        if cached.judge != plan.name:  # a solo run's result reused by a panel member, or the other way round
            cached = cached.model_copy(update={"judge": plan.name})
        return ResultRow(**base, cache_key=key, record=record, result=cached, error=err)

    def pending(self, chunk: list[Row], plan: JudgePlan) -> list[Cell]:
        """`prepare` over a chunk's rows for one judge (ticking for each cell committed at once): the cells left."""
        cells = []
        for row in chunk:
            cell = self.prepare(row, plan)
            if cell is None:
                self.tick()
            else:
                cells.append(cell)
        return cells

    def judged(self, cell: Cell, result: JudgeResult | Exception) -> None:
        """Commit a judgement that ran on the engine (or the exception it raised), count it, tick."""
        self.st.counts.evaluated += 1
        result, error, cacheable = self._outcome(cell, result)
        # a judgement that raised is stored without its key, so the next run retries it
        row = ResultRow(**cell.base, cache_key=cell.key if cacheable else None, record=cell.record, result=result, error=error)
        self._commit(cell.plan, row, cache=cacheable)
        self.tick()

    def _outcome(self, cell: Cell, result: JudgeResult | Exception) -> tuple[JudgeResult, str | None, bool]:
        """A judgement's result or exception as (result, top-level error, whether to cache it). Model
        errors propagate; ten unexpected errors in a row stop the run."""
        plan, row, values, st = cell.plan, cell.row, cell.values, self.st
        if isinstance(result, (ModelError, ConstraintError)):
            raise result
        if isinstance(result, PromptTooLongError):
            result = self._failed(plan, UnscoredReason.PROMPT_TOO_LONG, str(result))
        elif isinstance(result, InputError):
            st.consecutive_failures = 0
            msg = f"{row.source}: {result}"
            return self._failed(plan, UnscoredReason.INPUT_ERROR, msg), msg, False
        elif isinstance(result, Exception):  # a poison row must not stop an overnight run nor block its resume
            st.consecutive_failures += 1
            if st.consecutive_failures >= MAX_CONSECUTIVE_FAILURES:
                raise ModelError(
                    f"{st.consecutive_failures} judgements in a row failed, the last with {type(result).__name__}: "
                    f"{result}; check the model and judge (finished results are kept)"
                ) from result
            msg = f"{row.source}: judge {plan.name!r} failed: {type(result).__name__}: {result}"
            return self._failed(plan, UnscoredReason.ERROR, msg), msg, False
        st.consecutive_failures = 0
        if result.unscored_reason == UnscoredReason.PROMPT_TOO_LONG:
            col, n = max(((plan.columns[v].column, len(str(x))) for v, x in values.items()), key=lambda t: t[1])
            msg = f"{row.source}: {result.error or 'prompt too long'}; longest column {col!r} ({n} chars)"
            result = result.model_copy(update={"error": msg})
            return result, msg, True
        return result, None, True

    def _failed(self, plan: JudgePlan, reason: str, message: str) -> JudgeResult:
        return JudgeResult(
            judge=plan.name,
            judge_version=plan.judge.version,
            format=plan.format_name,
            model_id=self.keys.model_id,
            unscored_reason=reason,
            error=message,
        )

    def _commit(self, plan: JudgePlan, row: ResultRow, cache: bool = False, failed: bool | None = None) -> None:
        self.store.put(row, cache=cache)
        self._count(plan.name, row.result.scored, row.result.passed, failed=row.error is not None if failed is None else failed)

    def _count(self, judge: str, scored: bool, passed: bool | None, failed: bool) -> None:
        st = self.st
        st.cells_done += 1
        st.counts.failed += int(failed)
        st.counts.unscored += int(not scored)
        if scored and passed is not None:
            st.passes[judge][0] += int(passed)
            st.passes[judge][1] += 1


def run_chunk(loop: CellLoop, chunk: list[Row], plans: list[JudgePlan], ref: ModelRef) -> None:
    """Every (row, judge) cell of a chunk on this process's engine: stored/cached/bad ones at once, the rest
    submitted judge by judge and decoded in one drain (side by side when it batches); each result committed
    as it finishes. The model is loaded on the chunk's first cell that needs it, never before (never for a
    model-free judge's cells, judged here at once)."""
    batch: EngineBatch | None = None
    queued: list[Cell] = []
    for plan in plans:
        cells = loop.pending(chunk, plan)
        if not cells:
            continue
        if not plan.needs_model:  # a model-free judge: judged here, the model not loaded for it
            for cell in cells:
                loop.judged(cell, _without_model(cell, loop.keys.model_id))
            continue
        if batch is None:
            engine: Engine = ref.engine()
            batch = EngineBatch(engine, loop.keys.opts, loop.keys.model_id, lambda k, r: loop.judged(queued[k], r))
        queued.extend(cells)
        batch.submit(plan.judge, [c.prepared for c in cells])
    if batch is not None:  # a failure mid-batch: every unfinished cell is an error, retried next run
        batch.drain(fatal=(ModelError, ConstraintError, StorageError))


def _without_model(cell: Cell, model_id: str) -> JudgeResult | Exception:
    """A model-free judge's result for a cell, or the exception it raised (bad input: stored as such)."""
    from ..judges.judge import Judge

    assert isinstance(cell.judge, Judge)
    try:
        return cell.judge.judge_without_model(model_id, **cell.values)
    except Exception as e:
        return e


def run_on(ex: Executor, loop: CellLoop, chunks: Iterator[list[Row]], plans: list[JudgePlan]) -> None:
    """The cells on an executor: prepared here in the local loop's order (stored, cached and bad ones
    committed at once), the rest judged by `ex`, each result committed the moment it arrives."""

    def pending() -> Iterator[Cell]:
        for chunk in chunks:
            for plan in plans:
                for row in chunk:
                    cell = loop.prepare(row, plan)
                    if cell is None:
                        loop.tick()
                    else:
                        yield cell

    for cell, result in ex.judge(pending(), loop.keys.opts, loop.keys.model_id):
        loop.judged(cell, result)
