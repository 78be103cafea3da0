"""The HTML report: read a run directory, render one self-contained HTML file.

`load_run(path)` reads and checks a run directory; `build_report(run, out, compare=..., agreements=...)`
writes the report atomically. Jinja2 is imported on first render, not here.
"""

from __future__ import annotations

from .build import TrustSection, build_report, render_report
from .compare import Comparison, compare_runs
from .rundir import SCHEMA_VERSION, Run, RunDirError, load_run

__all__ = [
    "SCHEMA_VERSION",
    "Comparison",
    "Run",
    "RunDirError",
    "TrustSection",
    "build_report",
    "compare_runs",
    "load_run",
    "render_report",
]
