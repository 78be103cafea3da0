"""The only place that talks to llama.cpp and outlines-core.

`load_engine(spec, **options)` loads a model once per process through its backend (backends.py:
`llama:` in process, `scripted:` canned answers, `server:` an OpenAI-compatible endpoint);
`ScriptedEngine` is the fake with the same interface for tests. Heavy imports happen on first use,
not at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .backends import Backend, BackendOptions, ModelRef, get_backend, load_engine, parse_spec, register_backend
from .base import (
    DecodeOptions,
    Engine,
    Generation,
    Message,
    ModelIdentity,
    RequestQueue,
    ScriptedEngine,
    SequentialQueue,
    TokenInfo,
    canonical_hash,
)

if TYPE_CHECKING:
    from .llama import LlamaEngine, LlamaOptions

__all__ = [
    "Backend",
    "BackendOptions",
    "DecodeOptions",
    "Engine",
    "Generation",
    "LlamaEngine",
    "LlamaOptions",
    "Message",
    "ModelIdentity",
    "ModelRef",
    "RequestQueue",
    "ScriptedEngine",
    "SequentialQueue",
    "TokenInfo",
    "canonical_hash",
    "get_backend",
    "load_engine",
    "parse_spec",
    "register_backend",
]


def __getattr__(name: str) -> Any:
    if name in ("LlamaEngine", "LlamaOptions"):
        from . import llama

        return getattr(llama, name)
    raise AttributeError(name)
