"""Aligning a judge to human labels: the pipeline (`aligner`), labelled rows as few-shot examples
(`examples`), what is measured (`measure`), the aligned judge file (`spec`) and the report as text (`text`).

`localjudge.align.NAME` still finds what the flat `localjudge.align` module held (its `aligner` module).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def __getattr__(name: str) -> Any:
    """A name of the flat module this package replaced, from its `aligner` module (kept for one release)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(import_module(f"{__name__}.aligner"), name)
