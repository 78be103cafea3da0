"""llama.cpp's own log lines: quieted to errors (unless verbose), the last few kept to quote in our one-line errors.

Process-wide: llama.cpp has one log callback, set once by the first engine or embedder that loads a model.
"""

from __future__ import annotations

import ctypes

from .llama_lock import LLAMA_LOCK

_LOG_CB = None
LLAMA_ERRORS: list[str] = []  # llama.cpp's last error lines, quoted in our own one-line errors


def quiet_llama_logs(llama_cpp, verbose: bool) -> None:
    """llama.cpp logs model loading to stderr; keep only errors unless verbose (process-wide)."""
    global _LOG_CB
    if verbose:
        return
    with LLAMA_LOCK:  # set once: two engines loading from two threads would otherwise both set it
        if _LOG_CB is not None:
            return

        @llama_cpp.llama_log_callback
        def _cb(level, text, user_data):  # pragma: no cover - called from C
            if level == 4:  # GGML_LOG_LEVEL_ERROR (NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5)
                LLAMA_ERRORS.append(text.decode("utf-8", "replace").strip())
                del LLAMA_ERRORS[:-5]

        _LOG_CB = _cb
        llama_cpp.llama_log_set(_LOG_CB, ctypes.c_void_p(0))
