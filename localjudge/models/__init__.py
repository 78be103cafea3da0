"""Models: the registry (`registry`), GGUF files (`files`), hub pulls (`hub`), the manifest of local
models (`manifest`) and file digests (`digest`).

`localjudge.models.NAME` still finds what the flat `localjudge.models` module held (its `registry` module).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def __getattr__(name: str) -> Any:
    """A name of the flat module this package replaced, from its `registry` module (kept for one release)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(import_module(f"{__name__}.registry"), name)
