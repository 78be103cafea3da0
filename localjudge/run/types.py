"""What a batch run hands back: progress while it runs, counts, the summary, and the result with its rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..store.db import Store
from ..store.results import ResultRow
from .aggregate import JudgeSummary
from .exports import CSV_COLUMNS, flat_row
from .record import RunRecord


@dataclass
class Progress:
    """What a progress callback receives after every (row, judge) cell."""

    rows_done: int
    rows_total: int
    cells_done: int
    cells_total: int
    evaluated: int  # judgements that ran on the engine in this invocation
    cached: int  # served from the cache table
    reused: int  # already in this run's results with the same key
    elapsed_s: float
    pass_rates: dict[str, tuple[int, int]]  # judge -> (passed, with a pass/fail) so far

    @property
    def rows_per_min(self) -> float:
        """Rows' worth of judgements per minute (judges run row chunk by row chunk, so rows complete in steps)."""
        if self.elapsed_s <= 0 or not self.cells_total:
            return 0.0
        return 60.0 * self.cells_done * self.rows_total / self.cells_total / self.elapsed_s

    @property
    def eta_s(self) -> float | None:
        """Remaining judgements at the pace of those that ran on the engine (cached ones cost nothing)."""
        if self.cells_done >= self.cells_total:
            return 0.0
        if self.evaluated == 0:
            return None
        return (self.cells_total - self.cells_done) * self.elapsed_s / self.evaluated


class RunCounts(BaseModel):
    """What a run did with its cells: judged now, from the cache, already stored, failed, unscored."""

    rows: int = 0
    cells: int = 0
    evaluated: int = 0  # engine judgements in this invocation ("model calls")
    cached: int = 0
    reused: int = 0
    failed: int = 0  # cells with a top-level error (bad input, prompt too long, a raised judgement)
    unscored: int = 0  # all unscored cells, failed ones included
    engine_loaded: bool = False


class ControlCalls(BaseModel):
    """What judging a run's negative controls cost (report/controls.py): control rows judged now, and those read from
    their cache (a resumed or repeated control run). Not part of the controls' report: the same controls judged again
    are the same report."""

    judged: int = 0
    cached: int = 0

    def __add__(self, other: ControlCalls) -> ControlCalls:
        return ControlCalls(judged=self.judged + other.judged, cached=self.cached + other.cached)

    def note(self) -> str:
        """The calls beside a run's own, as its count line says them: `(+ 20 control calls)`, with `, 4 from cache`
        when some were."""
        cached = f", {self.cached} from cache" if self.cached else ""
        return f"(+ {self.judged} control call{'s' if self.judged != 1 else ''}{cached})"


class RunSummary(BaseModel):
    """The run record (run.json) and a summary per judge. Read the record by field through `record`; `run` is the
    same record as the dict run.json holds, kept for code written before `record` (and for writing it as it is)."""

    run: dict[str, Any]  # run.json as written (`record` reads it by field)
    judges: dict[str, JudgeSummary]

    @property
    def record(self) -> RunRecord:
        """The run record, typed (run/record.py): the way to read a run's fields (`record.counts`, `record.panel`,
        `record.cascade`, `record.conversations`, ...)."""
        return RunRecord.read(self.run)


@dataclass
class RunResult:
    """A finished (or interrupted) run: results streamed from its store, summary, counts."""

    run_id: str
    store_path: Path
    out: Path | None
    judges: list[str]
    n_rows: int
    summary: RunSummary
    counts: RunCounts
    controls: Any = None  # the negative controls judged after the run (report/controls.py `ControlsReport`), if asked
    control_calls: ControlCalls | None = None  # what those controls cost (None: no controls judged)

    @property
    def results(self) -> ResultsView:
        """The run's results, read from its store (re-iterable)."""
        return ResultsView(self.store_path, self.run_id, self.judges, self.n_rows)

    @property
    def cautions(self) -> list[str]:
        """One line each on what the numbers cannot mean: a model for trying the tool judged, a judge gave one
        verdict to every row (run/cautions.py); computed from the summary, never stored."""
        from .cautions import cautions

        return cautions(self.summary.record, self.summary.judges, controls=self.controls is not None)

    @property
    def exit_code(self) -> int:
        """0 when every (row, judge) was scored, 1 when any is unscored (see localjudge/cli/run.py for all codes)."""
        return 1 if self.counts.unscored else 0

    def to_pandas(self) -> Any:
        """The results as a pandas DataFrame with the CSV export's columns."""
        import pandas as pd

        return pd.DataFrame([flat_row(r) for r in self.results], columns=CSV_COLUMNS)


class ResultsView:
    """Re-iterable typed `ResultRow`s of a run, read from its store on each iteration."""

    def __init__(self, store_path: Path, run_id: str, judges: list[str], n_rows: int):
        self.store_path, self.run_id, self.judges, self.n_rows = store_path, run_id, judges, n_rows

    def __iter__(self) -> Iterator[ResultRow]:
        with Store(self.store_path) as st:
            yield from st.iter_results(self.run_id, self.judges, self.n_rows)

    def __len__(self) -> int:
        with Store(self.store_path) as st:
            return st.count(self.run_id, self.judges, self.n_rows)
