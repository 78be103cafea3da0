"""Text embeddings from a local GGUF model (llama.cpp's embedding mode, mean-pooled, L2-normalised).

For framework metrics that need an embedding model (RAGAS's answer relevancy compares questions by
cosine similarity) without a download: any GGUF the registry resolves works, the default judge model
included. A decoder's mean-pooled hidden states are a weak sentence embedding next to a trained one
(MiniLM and the like), but a real, offline one; pass a better GGUF embedding model (a BERT-family GGUF
such as all-MiniLM-L6-v2 converted by llama.cpp) as `model` when quality matters.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence
from typing import Any

from ..models.registry import resolve_model
from .llama_lock import LLAMA_LOCK
from .threads import default_threads


class LlamaEmbedder:
    """`embed(texts) -> list of vectors`; loads the model on first use, any thread may call it (serialised)."""

    def __init__(self, model: str | os.PathLike[str] | None = None, n_ctx: int = 1024, n_threads: int | None = None):
        self.info = resolve_model(None if model is None else os.fspath(model))
        self.n_ctx, self.n_threads = n_ctx, n_threads
        self._llama: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The model's registry name or file name."""
        return self.info.name

    def _load(self) -> Any:
        from .threads import limit_spin_wait

        limit_spin_wait()  # before llama.cpp (and its OpenMP runtime) first loads, as the judge engine does
        import llama_cpp

        from .llama_amx import no_amx_weights
        from .llama_log import quiet_llama_logs

        quiet_llama_logs(llama_cpp, False)
        threads = self.n_threads or default_threads()
        with LLAMA_LOCK, no_amx_weights(llama_cpp):  # one load at a time (llama_lock.py)
            return llama_cpp.Llama(
                model_path=self.info.path,
                embedding=True,
                pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                n_ctx=self.n_ctx,
                n_threads=threads,
                verbose=False,
            )

    def close(self) -> None:
        """Free the model (it loads again on the next `embed`)."""
        with self._lock:
            if self._llama is not None:
                with LLAMA_LOCK:
                    self._llama.close()
                self._llama = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text (texts longer than the context are truncated)."""
        if not texts:
            return []
        with self._lock:
            if self._llama is None:
                self._llama = self._load()
                atexit.register(self.close)  # before interpreter teardown, which llama-cpp-python's __del__ trips over
            with LLAMA_LOCK:  # beside a judge engine's decodes (llama_lock.py)
                out = self._llama.embed([t if t.strip() else " " for t in texts], normalize=True, truncate=True)
        return [list(map(float, v)) for v in out]
