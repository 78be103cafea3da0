"""A weights-free engine for the unit tier: the default model's real vocabulary (a vocab-only llama.cpp load, no
weights) and the product's own decoding (`LlamaEngine._job`: prompt, compiled constraint, budgets; `DecodeJob.step`:
masking, sampling, jump-forward, field budgets), fed seeded random logits instead of llama_decode's. So "valid by
construction" and "never past max_tokens" are checked on many inputs in milliseconds each; what only a model shows
stays in the model tier."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import llama_cpp
import numpy as np

from localjudge.constraints.llg import llama_tokenizer
from localjudge.engine.base import DecodeOptions, Generation, Message
from localjudge.engine.llama import LlamaEngine
from localjudge.engine.llama_lock import LLAMA_LOCK
from localjudge.engine.llama_options import LlamaOptions
from localjudge.formats import OutputFormat
from localjudge.models.registry import resolve_model

POOL = 1 << 22  # 4M floats (16 MB): windows of 49,152 at 4.1M offsets


class RandomLogitsEngine(LlamaEngine):
    """`LlamaEngine` without weights or a context: `decode` runs one request's `DecodeJob` on random logits."""

    def __init__(self, model: str | None = None, n_ctx: int = 4096):  # not LlamaEngine's: no weights, no context
        self._L = llama_cpp
        self.info = resolve_model(model)
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        with LLAMA_LOCK:
            self._model = llama_cpp.llama_model_load_from_file(str(self.info.path).encode(), params)
        assert self._model, f"could not read the vocabulary of {self.info.path}"
        self._vocab_p = llama_cpp.llama_model_get_vocab(self._model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab_p))
        self.n_ctx = n_ctx
        self.vocab = self._read_vocab()
        self.vocab.tokenizers["llguidance"] = lambda: llama_tokenizer(self._vocab_p, self.vocab)
        self.model_id = self.info.name
        self.jump_forward = LlamaOptions().jump_forward  # the product's default
        self._fsm_cache = OrderedDict()
        self._pools: dict[float, np.ndarray] = {}  # by scale: see _pool

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The messages' text tokenized as is (no chat template: random logits do not read the prompt)."""
        return self.tokenize("\n".join(m.content for m in messages))

    def decode(self, fmt: OutputFormat, seed: int, options: DecodeOptions, scale: float = 3.0) -> Generation:
        """One request decoded under `fmt` with N(0, scale) logits from `seed`: the product's path minus llama.cpp."""
        rng = np.random.default_rng(seed)
        pool = self._pool(scale)
        job = self._job([Message(role="user", content="Judge this.")], fmt, options)
        job.start()
        while job.step(pool[(o := int(rng.integers(len(pool) - self.n_vocab))) : o + self.n_vocab]) is not None:
            pass
        return job.generation()

    def _pool(self, scale: float) -> np.ndarray:
        """POOL N(0, scale) floats drawn once (seed 0), read-only: each step's logits are a window at a seeded offset,
        a view, not n_vocab fresh draws (those were 28 % of a decode's time, profiled)."""
        if scale not in self._pools:
            pool = np.random.default_rng(0).standard_normal(POOL, dtype=np.float32) * np.float32(scale)
            pool.flags.writeable = False  # a step that wrote into its logits would change later decodes: it raises
            self._pools[scale] = pool
        return self._pools[scale]

    def close(self) -> None:
        """Free the vocabulary-only model."""
        if getattr(self, "_model", None):
            llama_cpp.llama_model_free(self._model)
            self._model = None

    def __del__(self) -> None:
        self.close()
