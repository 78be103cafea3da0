"""Deprecated: the batch runner's old import path. `localjudge.evaluate` (localjudge/api.py) is the one entry point;
`execute` (given a `RunSpec`) and `to_frame` live beside it in `localjudge.api`. This package re-exports them and the run
types for one release; `localjudge.runner.evaluate` warns and always returns the `RunResult`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..api import execute
from ..run.exports import CSV_COLUMNS
from ..run.loop import MAX_CONSECUTIVE_FAILURES
from ..run.plain import RUN_SCHEMA_VERSION, localjudge_version
from ..run.spec import RunSpec, TrustSpec
from ..run.types import Progress, ResultsView, RunCounts, RunResult, RunSummary

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
