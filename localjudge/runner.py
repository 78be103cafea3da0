"""Batch runs: datasets in, one result per (row, judge) out; cached, resumable, streamed.

    from localjudge.runner import evaluate
    run = evaluate("data.jsonl", judges=["correctness", "groundedness"], out="runs/demo")
    run.summary.judges["correctness"].pass_rate;  df = run.to_pandas()

How a run goes:
  1. Before any inference: the data's columns and row count are read, every judge's variables are
     mapped onto columns (a missing column is an `InputError` listing the columns that exist).
  2. Rows stream in chunks; inside a chunk each judge runs over every row (consecutive prompts share
     the judge's prefix in the KV cache). Every finished result is committed to the store at once.
  3. Each judgement's reproducibility record (model sha256, judge version, format, rendered-prompt
     hash, decode options, seed, localjudge version) hashed with `canonical_hash` is its cache key.
     A cell whose stored key matches is skipped; a key found in the cache is copied without
     inference; only what changed runs. The model is loaded on the first cache miss, never before.
  4. Exports (results.jsonl, results.csv, summary.json, run.json) are written atomically from the
     store at the end, and also when the run is interrupted.

Row problems are data: a malformed line, a missing/empty/wrong-type value, a prompt too long for
the context window or a judgement that raised gets an unscored result naming file, line/row,
column and reason (top-level `error`), and the other rows still run. Only model errors abort, and
storage errors (`StorageError`: disk full, read-only run directory); the store keeps every result
committed before, so running again resumes.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .aggregate import JudgeSummary
from .datasets import ColumnSpec, Dataset, Row, extract, open_dataset, parse_mapping, resolve_mapping
from .distributed.base import Executor
from .engine.backends import BackendOptions, ModelRef
from .engine.base import DecodeOptions, Engine, canonical_hash
from .errors import ConstraintError, InputError, ModelError, PromptTooLongError, StorageError
from .exports import CSV_COLUMNS, export, flat_row, write_json_atomic
from .judges.protocol import JudgeProtocol
from .pairwise import BothOrders, is_pairwise_format
from .paths import shared_store
from .results import JudgeResult, Record, ResultRow
from .store import SCHEMA_VERSION, Store

RUN_SCHEMA_VERSION = 1  # of the run directory (run.json, results.jsonl, ...), see the shared schema
MAX_CONSECUTIVE_FAILURES = 10  # judgements in a row raising unexpected errors before the run stops


def localjudge_version() -> str:
    """The installed localjudge version (part of every cache key)."""
    try:
        from importlib.metadata import version

        return version("localjudge")
    except Exception:  # not installed (a source checkout on sys.path)
        from . import __version__

        return __version__


# ----------------------------------------------------------------------------------- public types


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


class RunSummary(BaseModel):
    """The run record (run.json) and a summary per judge."""

    run: dict[str, Any]
    judges: dict[str, JudgeSummary]


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

    @property
    def results(self) -> ResultsView:
        """The run's results, read from its store (re-iterable)."""
        return ResultsView(self.store_path, self.run_id, self.judges, self.n_rows)

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


# ----------------------------------------------------------------------------------- evaluate


@dataclass
class _JudgePlan:
    judge: JudgeProtocol
    name: str
    required: list[str]
    allow_empty: list[str]
    columns: dict[str, ColumnSpec]
    format_spec: Any
    format_name: str


@dataclass
class _State:
    counts: RunCounts = field(default_factory=RunCounts)
    passes: dict[str, list[int]] = field(default_factory=dict)
    cells_done: int = 0
    consecutive_failures: int = 0


def evaluate(
    data: Any,
    judges: Sequence[str | JudgeProtocol],
    *,
    model: str | os.PathLike[str] | None = None,
    engine: Engine | None = None,
    out: str | os.PathLike[str] | None = None,
    mapping: Any = None,
    options: DecodeOptions | dict[str, Any] | None = None,
    progress: Callable[[Progress], None] | None = None,
    judges_dir: str | None = None,
    model_options: Mapping[str, Any] | BackendOptions | None = None,
    limit: int | None = None,
    chunk_size: int = 16,
    both_orders: bool = False,
    engine_kwargs: Mapping[str, Any] | None = None,
    executor: str | Executor | None = None,
    csv_raw: bool = False,
    panel: Sequence[str | Engine] | None = None,
    escalate_to: str | Engine | None = None,
    escalate_below: float | None = None,
    run_id: str | None = None,
    rows: Collection[int] | None = None,
    aggregation: str = "majority",
    weights: Sequence[float] | None = None,
) -> RunResult:
    """Run `judges` (catalog names or judge objects) over every row of `data`; see the module docstring.

    `model`: a model spec (`llama:`/`scripted:`/`server:`, a registry name, a .gguf path; None: the
    default) with its backend's `model_options` (n_ctx=..., n_parallel=...); or an `engine` already loaded.
    `out`: a run directory (store + exports; re-running with it resumes). None: results go to the
    shared store in LOCALJUDGE_HOME (its cache still applies) and no files are exported.
    `mapping`: {"judge_var": "column"} or ["var=column", "var=column:list"]. `limit`: first N rows only.
    `both_orders`: pairwise judges judge every pair in both orders (disagreement = tie; see pairwise.py).
    `engine_kwargs`: the former name of `model_options`. `executor`: None or "local" (this process),
    "ray" (a `distributed.RayExecutor` with its defaults) or an executor object: who judges the cells
    that need the model; everything else (store, cache, resume, exports) stays here.
    `csv_raw`: results.csv keeps text that starts like a spreadsheet formula as it is (by default it gets a
    leading `'`; see exports.py).
    `panel`: model specs (or engines) that each judge every cell; the run stores each member's result under
    `JUDGE@MEMBER` and the panel's under `JUDGE` (see trust/panel.py); `aggregation` ("majority"; "mean" or
    "median" for scores) and `weights` (one per member) say how members are combined.
    `escalate_to` + `escalate_below`: a cascade: `model` judges every cell, the cells whose
    confidence is below the threshold are judged again by `escalate_to` (see trust/cascade.py).
    `run_id`: store the results under this run of the store (panels and cascades put every member in one run);
    `rows`: only these row indexes (a cascade's escalated rows).
    """
    trusted = aggregation != "majority" or weights is not None
    if panel is not None or escalate_to is not None or escalate_below is not None or trusted:
        from . import trust as trust_runs

        return trust_runs.dispatch(
            data,
            judges,
            model=model,
            engine=engine,
            out=out,
            mapping=mapping,
            options=options,
            progress=progress,
            judges_dir=judges_dir,
            model_options=model_options,
            limit=limit,
            chunk_size=chunk_size,
            both_orders=both_orders,
            engine_kwargs=engine_kwargs,
            executor=executor,
            panel=panel,
            escalate_to=escalate_to,
            escalate_below=escalate_below,
            **({"aggregation": aggregation, "weights": weights} if trusted else {}),
        )
    t0 = time.time()
    given: Mapping[str, Any] | BackendOptions | None = model_options
    if engine_kwargs:
        given = {**engine_kwargs, **dict(model_options or {})}
    ref = ModelRef(model, given, engine=engine)
    ds = open_dataset(data)
    plans = _plan(judges, judges_dir, ds, parse_mapping(mapping), both_orders)
    n_data = ds.count()
    n_rows = n_export = n_data if limit is None else min(n_data, limit)
    if n_rows == 0:
        raise InputError(f"{ds.label}: no rows to evaluate; check the file")
    opts = options if isinstance(options, DecodeOptions) else DecodeOptions(**(options or {}))
    ident = ref.identity()
    model_id, model_sha = ident.model_id, ident.digest
    version = localjudge_version()
    key_extra = ident.settings  # engine settings that change outputs (see the backend's identity)
    ex = _executor(executor, engine)
    if ex is not None:
        ex.open(ref, ident)  # joins the cluster: a bad address fails here, before anything is written

    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        if out_dir.exists() and not out_dir.is_dir():
            raise InputError(f"--out {str(out_dir)!r} is a file; give a directory for the run")
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageError(
                f"cannot create the run directory {str(out_dir)!r} ({e.strerror or e}); choose a writable --out"
            ) from None
        store_path = out_dir / "results.sqlite"
    else:
        store_path = shared_store()
    store = Store(store_path)
    if run_id is not None:
        run_id = store.new_run(run_id=run_id)
    else:
        run_id = store.run_for_dir() if out_dir is not None else store.new_run()
    meta = {
        "run_id": run_id,
        "data": ds.path or ds.label,
        "judges": [{"name": p.name, "version": p.judge.version} for p in plans],
        "model_id": model_id,
        "model_sha256": model_sha,
        "backend": ident.backend,
        "options": opts.model_dump(),
        "engine": key_extra,
        "mapping": {
            p.name: {v: s.column + ("" if s.kind == "auto" else ":" + s.kind) for v, s in p.columns.items()} for p in plans
        },
        "localjudge_version": version,
        "schema_version": RUN_SCHEMA_VERSION,
        "store_schema_version": SCHEMA_VERSION,
        "started": _iso(t0),
        "finished": None,
        "status": "running",
        "rows": n_rows,
    }
    n_sel = n_rows if rows is None else len({i for i in rows if 0 <= i < n_rows})
    st = _State(counts=RunCounts(rows=n_sel, cells=n_sel * len(plans)), passes={p.name: [0, 0] for p in plans})
    status = "failed"
    try:
        store.set_run_meta(run_id, meta)
        if out_dir is not None:
            write_json_atomic(out_dir / "run.json", meta)
        done_rows = 0
        if ex is not None:  # another executor judges the cells that need the model; results are committed here
            chunks = _chunks(ds, n_rows, chunk_size, rows)
            _run_on(ex, store, run_id, chunks, plans, opts, model_id, model_sha, version, key_extra, st, progress, n_sel, t0)
        else:
            for chunk in _chunks(ds, n_rows, chunk_size, rows):
                tick = functools.partial(_tick, progress, st, done_rows, n_sel, len(plans), t0)
                _run_chunk(store, run_id, chunk, plans, ref, opts, model_id, model_sha, version, key_extra, st, tick)
                done_rows += len(chunk)
                if progress is not None:
                    progress(_progress(st, done_rows, n_sel, len(plans), t0))
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if ex is not None:
            ex.close()
        st.counts.engine_loaded = ref.loaded and engine is None
        meta.update(status=status, finished=_iso(time.time()), counts=st.counts.model_dump())
        try:
            store.set_run_meta(run_id, meta)
            # exports cover every row of the data this run has results for: a later `--limit 10` must not
            # shrink the exports of an earlier full run (the store keeps them all)
            n_export = n_rows if limit is None else min(n_data, max(n_rows, store.rows_with_results(run_id)))
            summaries = export(store, run_id, [p.name for p in plans], n_export, out_dir, meta, st.counts, csv_raw)
        except StorageError:
            if status == "finished":
                raise
            # the run is already failing (a full disk, Ctrl-C): report that error; the store keeps every result
        finally:
            store.close()
    return RunResult(
        run_id=run_id,
        store_path=store_path,
        out=out_dir,
        judges=[p.name for p in plans],
        n_rows=n_export,
        summary=RunSummary(run=meta, judges=summaries),
        counts=st.counts,
    )


def _plan(
    judges: Sequence[str | JudgeProtocol],
    judges_dir: str | None,
    ds: Dataset,
    explicit: dict[str, ColumnSpec],
    both_orders: bool = False,
) -> list[_JudgePlan]:
    if not judges:
        raise InputError("no judge given; name at least one with --judge (see `localjudge judges list`)")
    plans: list[_JudgePlan] = []
    for given in judges:
        j: JudgeProtocol
        if isinstance(given, str):
            from .judges import get_judge

            j = get_judge(given, judges_dir=judges_dir)
        else:
            j = given
        fmts = j.output_formats
        if both_orders and not isinstance(j, BothOrders) and len(fmts) == 1 and is_pairwise_format(fmts[0].spec()):
            j = BothOrders(j)
        if any(p.name == j.name for p in plans):
            raise InputError(f"judge {j.name!r} given twice; name each judge once")
        req, opt = list(j.required_variables), list(j.optional_variables)
        aliases = {v.name: list(v.aliases) for v in j.variables}
        allow_empty = [v.name for v in j.variables if v.allow_empty]
        spec = [f.spec() for f in fmts] if len(fmts) > 1 else fmts[0].spec() if fmts else None
        name = " + ".join(f.describe() for f in fmts)
        columns = resolve_mapping(j.name, req, opt, ds.columns, explicit, aliases)
        plans.append(_JudgePlan(j, j.name, req, allow_empty, columns, spec, name))
    unused = [v for v in explicit if not any(v in p.columns for p in plans)]
    if unused:
        takes = sorted({v for p in plans for v in [*p.judge.required_variables, *p.judge.optional_variables]})
        raise InputError(f"--map {unused[0]}=...: no judge takes a variable {unused[0]!r}; they take {', '.join(takes)}")
    return plans


def _chunks(ds: Dataset, n_rows: int, size: int, only: Collection[int] | None = None) -> Iterator[list[Row]]:
    chunk: list[Row] = []
    only = None if only is None else set(only)
    for row in ds:
        if row.index >= n_rows:
            break
        if only is not None and row.index not in only:
            continue
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@dataclass
class _Cell:
    row: Row
    plan: _JudgePlan
    values: dict[str, Any]
    base: dict[str, Any]
    record: Record
    key: str

    @property
    def judge(self) -> JudgeProtocol:
        """The judge this cell needs (what an executor sees: `judge` and `values`)."""
        return self.plan.judge


def _executor(executor: str | Executor | None, engine: Engine | None) -> Executor | None:
    """None for this process (the runner's own loop), else the executor that judges pending cells."""
    if executor is None or executor == "local":
        return None
    if engine is not None:
        raise InputError(f"executor={executor!r}: its workers load the model themselves; give model=SPEC, not a loaded engine")
    if executor == "ray":
        from .distributed.ray_executor import RayExecutor

        return RayExecutor()
    if isinstance(executor, str):
        raise InputError(f"executor {executor!r}: use 'local' or 'ray' (or an executor object)")
    return executor


def _run_on(
    ex: Executor,
    store: Store,
    run_id: str,
    chunks: Iterator[list[Row]],
    plans: list[_JudgePlan],
    opts: DecodeOptions,
    model_id: str,
    model_sha: str,
    version: str,
    key_extra: dict[str, Any],
    st: _State,
    progress: Callable[[Progress], None] | None,
    n_rows: int,
    t0: float,
) -> None:
    """The run on an executor: cells prepared here in the local loop's order (stored, cached and bad ones
    committed at once), the rest judged by `ex`, each result committed the moment it arrives."""

    def tick() -> None:  # rows done: whole rows' worth of cells (results arrive in any order)
        _tick(progress, st, min(n_rows, st.cells_done // len(plans)), n_rows, len(plans), t0)

    def pending() -> Iterator[_Cell]:
        for chunk in chunks:
            for plan in plans:
                for row in chunk:
                    cell = _prepare_cell(store, run_id, row, plan, opts, model_id, model_sha, version, key_extra, st)
                    if cell is None:
                        tick()
                    else:
                        yield cell

    for cell, result in ex.judge(pending(), opts, model_id):
        st.counts.evaluated += 1
        _commit_judged(store, st, cell, *_outcome(cell, result, model_id, st))
        tick()


def _run_chunk(
    store: Store,
    run_id: str,
    chunk: list[Row],
    plans: list[_JudgePlan],
    ref: ModelRef,
    opts: DecodeOptions,
    model_id: str,
    model_sha: str,
    version: str,
    key_extra: dict[str, Any],
    st: _State,
    tick: Callable[[], None],
) -> None:
    """Every (row, judge) cell of a chunk: stored/cached/bad ones at once, the rest submitted judge by judge
    on the engine and run together (side by side when it batches); each result committed as it finishes."""
    engine: Engine | None = None
    queued: list[_Cell] = []
    finished: set[int] = set()
    for plan in plans:
        cells = []
        for row in chunk:
            cell = _prepare_cell(store, run_id, row, plan, opts, model_id, model_sha, version, key_extra, st)
            if cell is None:
                tick()
            else:
                cells.append(cell)
        if not cells:
            continue
        engine = ref.engine()
        first = len(queued)
        queued.extend(cells)

        def on_result(i: int, r: JudgeResult | Exception, first: int = first) -> None:
            finished.add(first + i)
            st.counts.evaluated += 1
            cell = queued[first + i]
            _commit_judged(store, st, cell, *_outcome(cell, r, model_id, st))
            tick()

        plan.judge.submit_many(engine, [c.values for c in cells], opts, on_result, model_id)
    if engine is None:
        return
    try:
        engine.drain()
    except (ModelError, ConstraintError, StorageError):
        raise
    except Exception as e:  # the engine failed mid-batch: every unfinished cell is an error, retried next run
        for k, cell in enumerate(queued):
            if k not in finished:
                st.counts.evaluated += 1
                _commit_judged(store, st, cell, *_outcome(cell, e, model_id, st))
                tick()


def _prepare_cell(
    store: Store,
    run_id: str,
    row: Row,
    plan: _JudgePlan,
    opts: DecodeOptions,
    model_id: str,
    model_sha: str,
    version: str,
    key_extra: dict[str, Any],
    st: _State,
) -> _Cell | None:
    """Commit a cell that needs no inference (bad input, already stored, cached) and return None;
    else return what its judgement needs."""
    values, problem = extract(row, plan.columns, plan.required, plan.allow_empty)
    base = dict(run_id=run_id, row_index=row.index, row_id=row.row_id, source=row.source, judge=plan.name, inputs=values)
    record = key = None
    if problem is None:
        try:
            # every prompt the judge will send (a two-stage judge's second prompt, each per-item prompt),
            # not only the first one render() shows; bad input raises here
            prompt_hash = plan.judge.fingerprint(**values)
        except InputError as e:
            problem = ("input_error", f"{row.source}: {e}")
        else:
            record = Record(
                model_id=model_id,
                model_sha256=model_sha,
                judge_version=plan.judge.version,
                format=plan.format_spec,
                prompt_hash=prompt_hash,
                decode_options=opts.model_dump(),
                seed=opts.seed,
                localjudge_version=version,
            )
            key = canonical_hash({"judge": plan.name, **record.model_dump(exclude={"model_id"}), "engine": key_extra})
    if problem is not None:
        _commit(store, st, plan, ResultRow(**base, result=_failed(plan, model_id, *problem), error=problem[1]))
        return None
    assert key is not None and record is not None
    stored = store.cell(run_id, row.index, plan.name)
    if stored is not None and stored[0] == key:
        st.counts.reused += 1
        _count(st, plan.name, stored[1], stored[2], failed=False)
        return None
    cached = store.cached(key)
    if cached is not None:
        st.counts.cached += 1
        err = cached.error if cached.unscored_reason == "prompt_too_long" else None
        _commit(store, st, plan, ResultRow(**base, cache_key=key, record=record, result=cached, error=err))
        return None
    return _Cell(row, plan, values, base, record, key)


def _commit_judged(store: Store, st: _State, cell: _Cell, result: JudgeResult, error: str | None, cacheable: bool) -> None:
    # a judgement that raised is stored without its key, so the next run retries it
    _commit(
        store,
        st,
        cell.plan,
        ResultRow(**cell.base, cache_key=cell.key if cacheable else None, record=cell.record, result=result, error=error),
        cache=cacheable,
    )


def _outcome(cell: _Cell, result: JudgeResult | Exception, model_id: str, st: _State) -> tuple[JudgeResult, str | None, bool]:
    """A judgement's result or exception as (result, top-level error, whether to cache it). Model
    errors propagate; ten unexpected errors in a row stop the run."""
    plan, row, values = cell.plan, cell.row, cell.values
    if isinstance(result, (ModelError, ConstraintError)):
        raise result
    if isinstance(result, PromptTooLongError):
        result = _failed(plan, model_id, "prompt_too_long", str(result))
    elif isinstance(result, InputError):
        st.consecutive_failures = 0
        msg = f"{row.source}: {result}"
        return _failed(plan, model_id, "input_error", msg), msg, False
    elif isinstance(result, Exception):  # a poison row must not stop an overnight run nor block its resume
        st.consecutive_failures += 1
        if st.consecutive_failures >= MAX_CONSECUTIVE_FAILURES:
            raise ModelError(
                f"{st.consecutive_failures} judgements in a row failed, the last with {type(result).__name__}: "
                f"{result}; check the model and judge (finished results are kept)"
            ) from result
        msg = f"{row.source}: judge {plan.name!r} failed: {type(result).__name__}: {result}"
        return _failed(plan, model_id, "error", msg), msg, False
    st.consecutive_failures = 0
    if result.unscored_reason == "prompt_too_long":
        col, n = max(((plan.columns[v].column, len(str(x))) for v, x in values.items()), key=lambda t: t[1])
        msg = f"{row.source}: {result.error or 'prompt too long'}; longest column {col!r} ({n} chars)"
        result = result.model_copy(update={"error": msg})
        return result, msg, True
    return result, None, True


def _failed(plan: _JudgePlan, model_id: str, reason: str, message: str) -> JudgeResult:
    return JudgeResult(
        judge=plan.name,
        judge_version=plan.judge.version,
        format=plan.format_name,
        model_id=model_id,
        unscored_reason=reason,
        error=message,
    )


def _commit(store: Store, st: _State, plan: _JudgePlan, row: ResultRow, cache: bool = False) -> None:
    store.put(row, cache=cache)
    _count(st, plan.name, row.result.scored, row.result.passed, failed=row.error is not None)


def _count(st: _State, judge: str, scored: bool, passed: bool | None, failed: bool) -> None:
    st.cells_done += 1
    st.counts.failed += int(failed)
    st.counts.unscored += int(not scored)
    if scored and passed is not None:
        st.passes[judge][0] += int(passed)
        st.passes[judge][1] += 1


def _tick(progress: Callable[[Progress], None] | None, st: _State, rows_done: int, n_rows: int, n_judges: int, t0: float) -> None:
    if progress is not None:
        progress(_progress(st, rows_done, n_rows, n_judges, t0))


def _progress(st: _State, rows_done: int, n_rows: int, n_judges: int, t0: float) -> Progress:
    c = st.counts
    return Progress(
        rows_done=rows_done,
        rows_total=n_rows,
        cells_done=st.cells_done,
        cells_total=n_rows * n_judges,
        evaluated=c.evaluated,
        cached=c.cached,
        reused=c.reused,
        elapsed_s=time.time() - t0,
        pass_rates={j: (p[0], p[1]) for j, p in st.passes.items()},
    )


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))
