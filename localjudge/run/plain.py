"""One plain batch run: datasets in, the run's store and run directory, the cell loop, exports out.

`run_plain` is a run without panels and cascades (which localjudge/trust builds out of plain runs): it
reads the data and plans the judges before any inference, opens the store (a run directory's, or the
shared one), records the run (run.json), feeds the cell loop on this process's engine or on an executor,
and writes the exports from the store at the end, also when the run is interrupted or fails.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from ..conversations.dataset import conversation_rows
from ..conversations.stored import put_conversations
from ..datasets import open_dataset, parse_mapping
from ..distributed.base import Executor
from ..engine.base import Engine
from ..errors import InputError, StorageError
from ..paths import shared_store
from ..store.db import SCHEMA_VERSION, Store
from .exports import export, write_json_atomic
from .loop import CellLoop, RunState, run_chunk, run_on
from .plan import CellKeys, chunks, plan_judges
from .record import JudgeRef, RunRecord
from .resumed_model import resumed_model
from .samedata import check_same_data
from .spec import RunSpec
from .turns import bind_plans, per_conversation, takes_conversation
from .types import Progress, RunCounts, RunResult, RunSummary

RUN_SCHEMA_VERSION = 1  # of the run directory (run.json, results.jsonl, ...), see the shared schema


def localjudge_version() -> str:
    """The installed localjudge version (part of every cache key)."""
    try:
        from importlib.metadata import version

        return version("localjudge")
    except Exception:  # not installed (a source checkout on sys.path)
        from .. import __version__

        return __version__


def run_plain(spec: RunSpec, progress: Callable[[Progress], None] | None = None) -> RunResult:
    """One plain run of `spec` (its `trust` is not looked at: localjudge/trust builds panels and cascades out of
    plain runs); `progress` is called as cells finish."""
    t0 = time.time()
    spec = spec.model_copy(update={"model": resumed_model(spec.model, spec.out)})  # a resumed run keeps its model file
    ref = spec.model.ref()
    engine, limit, rows, run_id = spec.model.engine, spec.limit, spec.rows, spec.run_id
    conv_ds = conversation_rows(spec.data, spec.conversation, takes_conversation(spec.judges, spec.judges_dir))
    ds = conv_ds or open_dataset(spec.data)
    plans = plan_judges(spec.judges, spec.judges_dir, ds, parse_mapping(spec.mapping), spec.both_orders)
    if conv_ds is not None:
        bind_plans(conv_ds, plans, lambda: spec.model.ref().engine(), spec.decode)
    n_data = ds.count()
    n_rows = n_export = n_data if limit is None else min(n_data, limit)
    if n_rows == 0:
        raise InputError(f"{ds.label}: no rows to evaluate; check the file")
    opts = spec.decode
    ident = ref.identity()
    version = localjudge_version()
    # engine settings that change outputs (see the backend's identity) are part of every cache key
    keys = CellKeys(ident.model_id, ident.digest, version, ident.settings, opts)
    ex = _executor(spec.executor, engine)
    if ex is not None:
        ex.open(ref, ident)  # joins the cluster: a bad address fails here, before anything is written

    out_dir = spec.out
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
    try:  # a reused run (a run directory's, or a given id) must hold this data's results, not another dataset's
        check_same_data(store, run_id, ds, plans, n_rows, out_dir if out_dir is not None else store_path)
    except BaseException:
        store.close()
        if ex is not None:
            ex.close()
        raise
    record = RunRecord(
        run_id=run_id,
        data=str(ds.path or ds.label),
        judges=[JudgeRef(name=p.name, version=p.judge.version) for p in plans],
        model_id=keys.model_id,
        model_sha256=keys.model_sha,
        backend=ident.backend,
        options=opts.model_dump(),
        engine=keys.key_extra,
        mapping={p.name: {v: s.column + ("" if s.kind == "auto" else ":" + s.kind) for v, s in p.columns.items()} for p in plans},
        localjudge_version=version,
        schema_version=RUN_SCHEMA_VERSION,
        store_schema_version=SCHEMA_VERSION,
        started=_iso(t0),
        finished=None,
        status="running",
        rows=n_rows,
    )
    if conv_ds is not None:  # how the rows were cut (the view marks the window a per-turn judge saw)
        record = record.updated(conversation=conv_ds.options.model_dump())
    n_sel = n_rows if rows is None else len({i for i in rows if 0 <= i < n_rows})
    st = RunState(counts=RunCounts(rows=n_sel, cells=n_sel * len(plans)), passes={p.name: [0, 0] for p in plans})
    loop = CellLoop(store, run_id, keys, st)
    n_judges = len(plans)

    def tick(rows_done: int) -> None:
        if progress is not None:
            progress(st.progress(rows_done, n_sel, n_judges, t0))

    status = "failed"
    try:
        store.set_run_meta(run_id, record.to_json())
        if conv_ds is not None:  # each conversation whole, for the view's transcript (conversations/stored.py)
            put_conversations(store, run_id, conv_ds.conversations())
        if out_dir is not None:
            write_json_atomic(out_dir / "run.json", record.to_json())
        if ex is not None:  # another executor judges the cells that need the model; results are committed here
            # rows done: whole rows' worth of cells (results arrive in any order)
            loop.tick = lambda: tick(min(n_sel, st.cells_done // n_judges))
            run_on(ex, loop, chunks(ds, n_rows, spec.chunk_size, rows), plans)
        else:
            done_rows = 0
            for chunk in chunks(ds, n_rows, spec.chunk_size, rows):
                loop.tick = functools.partial(tick, done_rows)  # rows done: the chunks finished before this one
                run_chunk(loop, chunk, plans, ref)
                done_rows += len(chunk)
                tick(done_rows)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if ex is not None:
            ex.close()
        st.counts.engine_loaded = ref.loaded and engine is None
        record = record.updated(status=status, finished=_iso(time.time()), counts=st.counts.model_dump())
        try:
            # exports cover every row of the data this run has results for: a later `--limit 10` must not
            # shrink the exports of an earlier full run (the store keeps them all)
            n_export = n_rows if limit is None else min(n_data, max(n_rows, store.rows_with_results(run_id)))
            if conv_ds is not None:  # results aggregated to their conversation (run/turns.py)
                record = record.updated(
                    conversations=per_conversation(store.iter_results(run_id, [p.name for p in plans], n_export))
                )
            store.set_run_meta(run_id, record.to_json())
            summaries = export(store, run_id, [p.name for p in plans], n_export, out_dir, record, st.counts, spec.csv_raw)
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
        summary=RunSummary(run=record.to_json(), judges=summaries),
        counts=st.counts,
    )


def _executor(executor: str | Executor | None, engine: Engine | None) -> Executor | None:
    """None for this process (the runner's own loop), else the executor that judges pending cells."""
    if executor is None or executor == "local":
        return None
    if engine is not None:
        raise InputError(f"executor={executor!r}: its workers load the model themselves; give model=SPEC, not a loaded engine")
    if executor == "ray":
        from ..distributed.ray_executor import RayExecutor

        return RayExecutor()
    if isinstance(executor, str):
        raise InputError(f"executor {executor!r}: use 'local' or 'ray' (or an executor object)")
    return executor


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))
