"""The only place that talks to llama.cpp and outlines-core.

`load_engine(model)` returns a `LlamaEngine` (loaded once per process); `ScriptedEngine` is the fake
with the same interface for tests. Heavy imports happen on first use, not at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import DecodeOptions, Engine, Generation, Message, ScriptedEngine, TokenInfo, canonical_hash

if TYPE_CHECKING:
    from .llama import LlamaEngine

__all__ = ["DecodeOptions", "Engine", "Generation", "Message", "ScriptedEngine", "TokenInfo", "canonical_hash",
           "load_engine", "LlamaEngine"]


def load_engine(model: str | None = None, **kwargs: Any) -> LlamaEngine:
    """Load a GGUF model (registry name, path, or None for the embedded default) once per process."""
    from .llama import load_engine as _load

    return _load(model, **kwargs)


def __getattr__(name: str):
    if name == "LlamaEngine":
        from .llama import LlamaEngine

        return LlamaEngine
    raise AttributeError(name)
