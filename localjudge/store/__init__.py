"""A run's SQLite store (`db`), the typed result it holds (`results`) and the one atomic write (`atomic`).

`localjudge.store.NAME` still finds what the flat `localjudge.store` module held (its `db` module).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def __getattr__(name: str) -> Any:
    """A name of the flat module this package replaced, from its `db` module (kept for one release)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(import_module(f"{__name__}.db"), name)
