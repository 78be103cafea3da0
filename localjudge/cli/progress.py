"""The live status line of `localjudge run` on a terminal: rows, judgements, cache hits, rate, ETA, pass rates.

One self-overwriting line on stderr, redrawn at most every `interval_s` (and once at the end), cut to the
terminal's width; nothing at all when disabled (--quiet, or stderr not a terminal).
"""

from __future__ import annotations

import time
from typing import Any, TextIO


def _fmt_duration(s: float | None) -> str:
    if s is None:
        return "?"
    s = int(s)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class ProgressLine:
    """One self-overwriting status line on a terminal: rows, rate, ETA, running pass rate per judge."""

    def __init__(self, stream: TextIO, enabled: bool, interval_s: float = 0.25, width: int | None = None):
        self.stream, self.enabled, self.interval_s, self.width = stream, enabled, interval_s, width
        self._last = 0.0
        self._shown = 0

    def __call__(self, p: Any) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last < self.interval_s and p.cells_done < p.cells_total):
            return
        self._last = now
        passes = " ".join(f"{j} {k / n:.0%}" if n else f"{j} -" for j, (k, n) in p.pass_rates.items())
        bar_w = 20
        filled = int(bar_w * p.cells_done / p.cells_total) if p.cells_total else bar_w
        line = (
            f"[{'#' * filled}{'.' * (bar_w - filled)}] rows {p.rows_done}/{p.rows_total} "
            f"({p.cells_done}/{p.cells_total} judgements, {p.cached + p.reused} cached) "
            f"{p.rows_per_min:.1f} rows/min ETA {_fmt_duration(p.eta_s)} | pass: {passes}"
        )
        if self.width is None:
            import shutil

            self.width = shutil.get_terminal_size((120, 20)).columns
        line = line[: self.width - 1]
        self.stream.write("\r" + line.ljust(self._shown))
        self.stream.flush()
        self._shown = len(line)

    def close(self) -> None:
        """End the status line (a newline after it, if one was shown)."""
        if self.enabled and self._shown:
            self.stream.write("\n")
            self.stream.flush()
