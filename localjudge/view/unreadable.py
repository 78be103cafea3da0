"""Run directories the view lists but cannot open: their entry in the run list and when to try them again.

A store that is garbage, written by a newer localjudge or unreadable is kept as `Unreadable` with a one-line reason
(the first line of the error, at most 300 characters) and the store file's (mtime, size) signature when it failed,
so `Runs.scan` tries it again only once the file changed, and one bad store never hides the others.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from ..errors import LocalJudgeError

# what reading a store can raise when the file is not a store this localjudge reads (damaged, newer, replaced)
STORE_ERRORS = (LocalJudgeError, sqlite3.Error, OSError, ValueError)


class Unreadable:
    """A run directory whose store cannot be opened (garbage, written by a newer localjudge, unreadable): listed with
    its one-line reason beside the readable runs, never opened by a route. `signature` is the store file's
    (mtime, size) when it failed: a changed file is tried again."""

    def __init__(self, rid: str, path: Path, reason: str, signature: tuple[int, int] | None):
        self.rid, self.path, self.reason, self.signature = rid, path, reason, signature

    def status(self) -> dict[str, Any]:
        """The same keys as `RunHandle.status()`, status `unreadable` and the reason in `error`."""
        return unreadable_status(self.rid, self.path, self.reason)


def unreadable_status(rid: str, path: Path, reason: str) -> dict[str, Any]:
    """A run list entry for a run that cannot be read: status `unreadable`, the one-line `error`, no counts."""
    return {
        "rid": rid,
        "run_id": None,
        "path": str(path),
        "status": "unreadable",
        "error": reason,
        "judges": [],
        "members": {},
        "model": "",
        "data": "",
        "started": None,
        "finished": None,
        "cells_done": 0,
        "cells_total": 0,
        "rows_total": 0,
        "progress": 0.0,
        "eta_s": None,
        "labels": 0,
    }


def reason_of(e: BaseException) -> str:
    """The error's first line (its type's name when it has no text), at most 300 characters."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:300]


def store_signature(path: Path) -> tuple[int, int] | None:
    """The (mtime in ns, size) of a run directory's results.sqlite, None when it cannot be read."""
    try:
        st = (path / "results.sqlite").stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
