"""Batch runs: datasets in, one result per (row, judge) out; cached, resumable, streamed (see evaluate.py).

    import localjudge
    run = localjudge.evaluate("data.jsonl", judges=["correctness", "groundedness"], out="runs/demo")
    run.summary.judges["correctness"].pass_rate;  df = run.to_pandas()

`execute` (evaluate.py) takes a `RunSpec` (run/spec.py) and sends a panel or a cascade to localjudge/trust and anything else to one plain run,
localjudge/batch: types.py (what a run hands back), plan.py (judges onto columns, chunks, cache keys),
loop.py (the one cell loop), run.py (the store, run.json, exports), spec.py (the run spec). `evaluate` here is the
deprecated alias of `localjudge.evaluate`. Both build on batch, so it sits below them.
"""

from ..run.exports import CSV_COLUMNS
from ..run.loop import MAX_CONSECUTIVE_FAILURES
from ..run.plain import RUN_SCHEMA_VERSION, localjudge_version
from ..run.spec import RunSpec, TrustSpec
from ..run.types import Progress, ResultsView, RunCounts, RunResult, RunSummary
from .evaluate import evaluate, execute

__all__ = [
    "CSV_COLUMNS",
    "MAX_CONSECUTIVE_FAILURES",
    "RUN_SCHEMA_VERSION",
    "Progress",
    "ResultsView",
    "RunCounts",
    "RunResult",
    "RunSpec",
    "RunSummary",
    "TrustSpec",
    "evaluate",
    "execute",
    "localjudge_version",
]
