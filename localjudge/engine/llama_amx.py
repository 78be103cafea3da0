"""llama.cpp builds that use Intel AMX: their weight layout crashes, so weights load without it there.

A native llama-cpp-python build on a CPU with AMX (Sapphire Rapids and later: `AMX_INT8 = 1` in llama.cpp's
system info) puts quantised weights in its AMX "extra buffer type", and 0.3.36 then segfaults in the first
`llama_decode` (`ggml_backend_amx_mul_mat`; seen with SmolLM2's Q4_1 on such a machine: every command that ran
the model, the embedder too). Loading with `use_extra_bufts` off keeps the plain CPU kernels. Machines without
AMX keep the extra buffer types (CPU repacking) and so their speed and outputs unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .llama_lock import system_info


def amx_build(llama_cpp: Any) -> bool:
    """Whether this llama.cpp build runs matmuls through AMX (then weights must load without extra buffer types)."""
    try:
        return b"AMX_INT8 = 1" in system_info(llama_cpp)
    except (AttributeError, TypeError, OSError):
        return False


@contextlib.contextmanager
def no_amx_weights(llama_cpp: Any) -> Iterator[None]:
    """Inside it, `llama_cpp.Llama(...)` loads weights without extra buffer types when `amx_build` (its
    constructor takes no such argument: the module's default model parameters are wrapped meanwhile)."""
    if not amx_build(llama_cpp):
        yield
        return
    low = llama_cpp.llama_cpp
    default = low.llama_model_default_params

    def params() -> Any:
        p = default()
        p.use_extra_bufts = False
        return p

    low.llama_model_default_params = params
    try:
        yield
    finally:
        low.llama_model_default_params = default


__all__ = ["amx_build", "no_amx_weights"]
