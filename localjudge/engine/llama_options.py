"""`LlamaOptions`: the typed options of `llama:` models, and which of them change outputs (the cache key's settings)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .backends import BackendOptions

SPLIT_FREE_UBATCH = 32  # physical batches up to this many tokens round alike whatever their size (llama_scheduler.py)


class LlamaOptions(BackendOptions):
    """Options of `llama:` models (`--option key=value`; --n-ctx, --threads, --gpu-layers, --n-batch,
    --chat-template and run's --parallel are aliases)."""

    n_ctx: int | None = Field(None, ge=16, description="context window in tokens per sequence (default: min(4096, the model's))")
    n_threads: int | None = Field(
        None, ge=1, description="CPU threads (default: every physical core this process may use, at most 16)"
    )
    n_batch: int = Field(512, ge=1, description="tokens per llama.cpp batch")
    n_ubatch: int = Field(
        32,
        ge=1,
        description="tokens llama.cpp computes at once (<= 32: an output never depends on how its prompt was split or reused)",
    )
    n_gpu_layers: int = Field(0, ge=-1, description="layers offloaded to the GPU (-1: all)")
    n_parallel: int = Field(1, ge=1, le=64, description="requests decoded side by side (1: byte-identical to one at a time)")
    layout: Literal["auto", "shipped"] | None = Field(
        None,
        description="a registry model marked layout=auto (the default model): auto = converted once to this CPU's fast "
        "weight type, shipped = its file as it ships (default: $LOCALJUDGE_LAYOUT, else auto)",
    )
    chat_template: str | None = Field(None, description="'gguf' (from the model), 'raw' (plain text) or a Jinja template")
    jump_forward: bool = Field(True, description="feed literals the format forces without sampling them")
    reuse_prefix: bool = Field(True, description="reuse the KV cache of a shared prompt prefix")
    verbose: bool = Field(False, description="show llama.cpp's own logs")
    template_timeout: float = Field(10.0, gt=0, description="seconds one chat-template render may take (untrusted templates)")
    template_memory_mb: int = Field(1024, ge=16, description="memory a chat-template render may use, in MB")

    def settings(self) -> dict[str, Any]:
        """The options that change outputs, as the cache key has always recorded them: n_ctx and
        chat_template when given, n_parallel when > 1 (batched kernels round differently), and the physical batch
        (n_ubatch, as far as n_batch lets it) when over `SPLIT_FREE_UBATCH` (its prompts round differently; at or below
        it nothing is recorded, as before: any split rounds alike)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("n_ctx", "chat_template") if getattr(self, k) is not None}
        if self.n_parallel > 1:
            out["n_parallel"] = self.n_parallel
        ubatch = max(1, min(self.n_ubatch, self.n_batch))
        if ubatch > SPLIT_FREE_UBATCH:
            out["n_ubatch"] = ubatch
        return out
