"""llama.cpp does one thing at a time in a process: `LLAMA_LOCK` is held while a model loads or frees and
around every `llama_decode` (the judge engine's and the embedder's), whichever engine it is for.

Separate llama.cpp contexts are not safe to load or decode from several threads at once on the CPU build
(other bindings hold one global inference lock for this reason). Seen here: two SmolLM2 engines loaded from
two threads at the same moment and then decoding side by side segfaulted inside `llama_decode` in 2 of 6
processes (then 0 of 15: a rare fault); MLflow's session-scorer snippet, whose thread pool scored two sessions
at once, each loading the default model, in 1 of 8 runs here and once in CI. A judge's own requests are one
`llama_decode` per step for every sequence at once (`n_parallel`), so only separate engines wait on each
other, and on a CPU they share the same cores anyway.
"""

from __future__ import annotations

import threading
from typing import Any

# re-entrant: a thread that holds it (a load) may call code that takes it again
LLAMA_LOCK = threading.RLock()
# (the llama_cpp module, its system-info text), read once each; the module is held, so no other object takes its id
_SYSTEM_INFO: list[tuple[Any, bytes]] = []


def system_info(llama_cpp: Any) -> bytes:
    """llama.cpp's system-info line (its CPU features, `AMX_INT8 = 1` ...), read once per process under
    `LLAMA_LOCK`: `llama_print_system_info` rebuilds one static C++ string on every call, so two threads calling it
    at once read each other's half-written text (features missing or garbled: 5 of 6 processes with 16 threads
    here) or free it twice (a `double free` abort ended a two-engine load in CI)."""
    with LLAMA_LOCK:
        for module, text in _SYSTEM_INFO:
            if module is llama_cpp:
                return text
        text = bytes(llama_cpp.llama_print_system_info())
        _SYSTEM_INFO.append((llama_cpp, text))
        return text


__all__ = ["LLAMA_LOCK", "system_info"]
