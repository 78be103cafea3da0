"""Human labels and what they say about a judge: the label table of a run (`store`), agreement of
a judge with the labels (`agreement`) and pass rates corrected for its measured error rates (`calibration`).

`localjudge.labels.NAME` still finds what the flat `localjudge.labels` module held (its `store` module).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any


def import_labels(run_dir: str | Path, path: str | Path, labeller: str | None = None) -> int:
    """The flat module's `import_labels`: `importing.import_labels` (check every record, then append them all to the
    run directory's store), returning how many. It lives here, not in `store`, which `importing` builds on."""
    from .importing import import_labels as checked_import

    return checked_import(run_dir, path, labeller).imported


def __getattr__(name: str) -> Any:
    """A name of the flat module this package replaced, from its `store` module (kept for one release)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(import_module(f"{__name__}.store"), name)
