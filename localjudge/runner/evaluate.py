"""`execute`: the batch runner's one entry point, given a `RunSpec` (run/spec.py) built at the edge: a panel or
a cascade goes to localjudge/trust, which builds it out of plain runs; everything else is one plain run
(localjudge/run/run.py). The public entry point is `localjudge.evaluate`.

How a run goes:
  1. Before any inference: the data's columns and row count are read, every judge's variables are
     mapped onto columns (a missing column is an `InputError` listing the columns that exist) (run/plan.py).
  2. Rows stream in chunks; inside a chunk each judge runs over every row (consecutive prompts share
     the judge's prefix in the KV cache). Every finished result is committed to the store at once (run/loop.py).
  3. Each judgement's reproducibility record (model sha256, judge version, format, rendered-prompt
     hash, decode options, seed, localjudge version) hashed with `canonical_hash` is its cache key.
     A cell whose stored key matches is skipped; a key found in the cache is copied without
     inference; only what changed runs. The model is loaded on the first cache miss, never before.
  4. Exports (results.jsonl, results.csv, summary.json, run.json) are written atomically from the
     store at the end, and also when the run is interrupted (run/plain.py).

Row problems are data: a malformed line, a missing/empty/wrong-type value, a prompt too long for
the context window or a judgement that raised gets an unscored result naming file, line/row,
column and reason (top-level `error`), and the other rows still run. Only model errors abort, and
storage errors (`StorageError`: disk full, read-only run directory); the store keeps every result
committed before, so running again resumes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..run.plain import run_plain
from ..run.spec import RunSpec
from ..run.types import Progress, RunResult


def execute(spec: RunSpec, progress: Callable[[Progress], None] | None = None) -> RunResult:
    """Run `spec` (see the module docstring); `progress` is called as cells finish."""
    if spec.trust.wanted:
        from .. import trust as trust_runs

        return trust_runs.dispatch(spec, progress)
    return run_plain(spec, progress)


def evaluate(
    data: Any, judges: Sequence[Any], *, progress: Callable[[Progress], None] | None = None, **keywords: Any
) -> RunResult:
    """Deprecated: `localjudge.evaluate` (which also returns the `RunResult`, except for a DataFrame in: then a
    DataFrame). The keywords are `localjudge.evaluate`'s (`RunSpec.build`); this name goes in the next release."""
    warnings.warn(
        "localjudge.runner.evaluate is deprecated: use localjudge.evaluate (or runner.execute with a RunSpec); "
        "it goes in the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    return execute(RunSpec.build(data, judges, **keywords), progress)
