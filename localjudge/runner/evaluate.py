"""`evaluate`: the batch runner's one entry point: a panel or a cascade goes to localjudge/trust, which
builds it out of plain runs; everything else is one plain run (localjudge/batch/run.py).

How a run goes:
  1. Before any inference: the data's columns and row count are read, every judge's variables are
     mapped onto columns (a missing column is an `InputError` listing the columns that exist) (batch/plan.py).
  2. Rows stream in chunks; inside a chunk each judge runs over every row (consecutive prompts share
     the judge's prefix in the KV cache). Every finished result is committed to the store at once (batch/loop.py).
  3. Each judgement's reproducibility record (model sha256, judge version, format, rendered-prompt
     hash, decode options, seed, localjudge version) hashed with `canonical_hash` is its cache key.
     A cell whose stored key matches is skipped; a key found in the cache is copied without
     inference; only what changed runs. The model is loaded on the first cache miss, never before.
  4. Exports (results.jsonl, results.csv, summary.json, run.json) are written atomically from the
     store at the end, and also when the run is interrupted (batch/run.py).

Row problems are data: a malformed line, a missing/empty/wrong-type value, a prompt too long for
the context window or a judgement that raised gets an unscored result naming file, line/row,
column and reason (top-level `error`), and the other rows still run. Only model errors abort, and
storage errors (`StorageError`: disk full, read-only run directory); the store keeps every result
committed before, so running again resumes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ..batch.run import run
from ..batch.types import Progress, RunResult
from ..distributed.base import Executor
from ..engine.backends import BackendOptions
from ..engine.base import DecodeOptions, Engine
from ..judges.protocol import JudgeProtocol


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
    confidence is below the threshold are judged again by `escalate_to` (see trust/cascade.py); with `panel`,
    the panel is the first stage and its confidence the members' agreement (see trust/panel_cascade.py).
    `run_id`: store the results under this run of the store (panels and cascades put every member in one run);
    `rows`: only these row indexes (a cascade's escalated rows).
    """
    trusted = aggregation != "majority" or weights is not None
    common: dict[str, Any] = dict(
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
        csv_raw=csv_raw,
    )
    if panel is not None or escalate_to is not None or escalate_below is not None or trusted:
        from .. import trust as trust_runs

        return trust_runs.dispatch(
            data,
            judges,
            **common,
            panel=panel,
            escalate_to=escalate_to,
            escalate_below=escalate_below,
            **({"aggregation": aggregation, "weights": weights} if trusted else {}),
        )
    return run(data, judges, **common, run_id=run_id, rows=rows)
