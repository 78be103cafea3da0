"""Where localjudge keeps its files: the cache home and the models home. Nothing else lives here.

$LOCALJUDGE_HOME            (default: $XDG_CACHE_HOME/localjudge, else ~/.cache/localjudge)
  fsm/                      compiled constraint indexes, per vocabulary
  sha256/                   file checksums, by (path, size, mtime)
  runs.sqlite               the shared store of runs made without --out
$LOCALJUDGE_MODELS_HOME     (default: $LOCALJUDGE_HOME/models) assembled, pulled and added models
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """Where localjudge keeps compiled indexes, checksums and the shared run store."""
    env = os.environ.get("LOCALJUDGE_HOME")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "localjudge"


def models_home() -> Path:
    """Where model files assembled from packages, pulled from a hub or added by hand live."""
    env = os.environ.get("LOCALJUDGE_MODELS_HOME")
    return Path(env) if env else cache_home() / "models"


def shared_store() -> Path:
    """The SQLite store of runs made without a run directory (their cache still applies)."""
    return cache_home() / "runs.sqlite"
