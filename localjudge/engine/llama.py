"""LlamaEngine: a GGUF model through llama.cpp's C API, with our own constrained decode loop.

Per call: render the chat template, tokenize, reuse the longest common token prefix already in the
KV cache (only the new suffix is evaluated), then loop: read the last logits in place (no copy),
keep only tokens the format's automaton allows within the token budget, pick greedily (or sample
with a seed), advance the automaton. Literals the format forces (JSON keys, `", "result": "`,
closing braces) are tokenized and fed with the chosen token before it (jump-forward); a forced tail
that ends the output is not evaluated at all. The per-request half of that loop is `job.DecodeJob`.

Several requests run side by side (`n_parallel` llama.cpp sequences, each with its own stream of
n_ctx KV cells): every `llama_decode` carries the next token of each decoding sequence plus prompt
chunks of those still prefilling, so one pass over the weights serves many rows. `submit` queues
requests, `drain` runs them; `generate` is one request through the same path.

This module loads the model and builds each request's job (constraint, budgets); the rest lives beside it:
`llama_options.py` (the options), `llama_text.py` (vocabulary, chat template, prompt tokens),
`llama_scheduler.py` (the queue, KV prefix reuse, the batched decode step), `llama_log.py` (llama.cpp's logs).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from .. import constraints
from ..constraints.base import Compiled
from ..constraints.llg import LLGCompiled, llama_tokenizer
from ..errors import ConstraintError, GPUUnavailableError, ModelError, NotGGUFError, PromptTooLongError
from ..formats import OutputFormat
from ..models.registry import ModelInfo, check_gguf, check_sha256, resolve_model, sha256_of
from .backends import Backend, BackendOptions
from .base import (
    THINK_CLOSE,
    THINK_OPEN,
    DecodeOptions,
    GenerateOptions,
    Generation,
    Message,
    ModelIdentity,
    generate_queued,
)
from .capabilities import ALL
from .job import DecodeJob
from .layout import fast_layout
from .llama_amx import amx_build
from .llama_lock import LLAMA_LOCK
from .llama_log import LLAMA_ERRORS, quiet_llama_logs
from .llama_options import LlamaOptions
from .llama_scheduler import SequenceScheduler
from .llama_text import LlamaText
from .threads import default_threads, limit_spin_wait

__all__ = ["LlamaBackend", "LlamaEngine", "LlamaOptions"]
_quiet_llama_logs = quiet_llama_logs  # its name when it lived here

FSM_CACHE_SIZE = 64  # compiled automata kept in memory (least recently used dropped; the disk cache keeps them all)
# llguidance grammars kept in memory, in characters of grammar text as well: a 1 MB schema's compiled grammar takes
# ~24 MB, so 64 of them could take 1.5 GB; 4 M characters keep a few large ones or many small ones
LLG_CACHE_CHARS = 4 << 20


class LlamaBackend(Backend):
    """`llama:NAME_OR_PATH` (or no scheme): a GGUF model in this process."""

    scheme = "llama"
    Options = LlamaOptions
    summary = "a GGUF model in this process (llama.cpp); a registry name, a .gguf path, or nothing for the default"
    capabilities = ALL

    def identity(self, target: str | None, options: BackendOptions) -> ModelIdentity:
        """Registry name (or file name), the file's sha256 (the registry's pin, else computed), settings."""
        assert isinstance(options, LlamaOptions)
        info = fast_layout(resolve_model(target), options.layout)
        return ModelIdentity(
            backend="llama", model_id=info.name, digest=info.sha256 or sha256_of(info.path), settings=options.settings()
        )

    def load(self, target: str | None, options: BackendOptions) -> LlamaEngine:
        """A `LlamaEngine` for the model."""
        assert isinstance(options, LlamaOptions)
        return LlamaEngine(target, options=options)


class LlamaEngine(LlamaText, SequenceScheduler):
    """A loaded GGUF model. Load once per process; call `generate` as often as you like.

    `LlamaEngine(model, n_ctx=..., n_threads=...)`: keyword options as in `LlamaOptions`."""

    capabilities = ALL  # vocab, compile, token probabilities, streaming (engine/capabilities.py)

    def __init__(self, model: str | os.PathLike | None = None, *, options: LlamaOptions | None = None, **kwargs: Any):
        limit_spin_wait()  # before llama.cpp (and its OpenMP runtime) is loaded
        import llama_cpp

        self.options = options if options is not None else LlamaBackend().options(kwargs)
        assert isinstance(self.options, LlamaOptions)
        o = self.options
        n_ctx, n_threads, n_batch, n_gpu_layers, n_parallel = o.n_ctx, o.n_threads, o.n_batch, o.n_gpu_layers, o.n_parallel
        chat_template, verbose = o.chat_template, o.verbose

        self._L = llama_cpp
        quiet_llama_logs(llama_cpp, verbose)
        self.info: ModelInfo = fast_layout(resolve_model(model), o.layout)  # the default model in this CPU's fast layout
        check_gguf(self.info.path)
        if self.info.sha256:
            check_sha256(self.info, sha256_of(self.info.path))
        if n_gpu_layers and not llama_cpp.llama_supports_gpu_offload():
            raise GPUUnavailableError(
                f"--gpu-layers {n_gpu_layers} asked, but this llama-cpp-python build is CPU-only; reinstall it with "
                'CMAKE_ARGS="-DGGML_CUDA=on" (or -DGGML_METAL=on) pip install --force-reinstall --no-cache-dir '
                "llama-cpp-python, or drop --gpu-layers"
            )
        with LLAMA_LOCK:  # one llama.cpp load or decode at a time in the process (llama_lock.py)
            llama_cpp.llama_backend_init()
            LLAMA_ERRORS.clear()
            mp = llama_cpp.llama_model_default_params()
            # -1 = every layer, passed as the largest int as llama-cpp-python's Llama does (what llama.cpp makes of a
            # negative count has changed between its versions)
            mp.n_gpu_layers = 0x7FFFFFFF if int(n_gpu_layers) < 0 else int(n_gpu_layers)
            if amx_build(llama_cpp):
                mp.use_extra_bufts = False  # llama.cpp's AMX weight layout segfaults in its first matmul (see amx_build)
            self._model = llama_cpp.llama_model_load_from_file(self.info.path.encode(), mp)
            if not self._model:
                why = next((e for e in LLAMA_ERRORS if "error loading model" in e), LLAMA_ERRORS[0] if LLAMA_ERRORS else "")
                raise NotGGUFError(
                    f"llama.cpp could not load {self.info.path!r} ({why or 'no reason given'}): truncated, "
                    "corrupt or an unsupported architecture; re-copy the file or update llama-cpp-python"
                )
            self._vocab_p = llama_cpp.llama_model_get_vocab(self._model)
            n_train = int(llama_cpp.llama_model_n_ctx_train(self._model))
            self.n_ctx = int(n_ctx) if n_ctx else min(4096, n_train)
            self.n_threads = int(n_threads) if n_threads else default_threads()
            self.n_batch = int(n_batch)
            self.n_gpu_layers = int(n_gpu_layers)
            cp = llama_cpp.llama_context_default_params()
            self.n_parallel = max(1, int(n_parallel))
            cp.n_ctx = self.n_ctx * self.n_parallel  # one stream of n_ctx cells per sequence
            cp.n_batch = self.n_batch
            # physical batches: llama.cpp computes a token of a batch of more than ~32 tokens through other kernels
            # than one of a smaller batch, which rounds differently; larger batches are fed at fixed absolute
            # positions (llama_scheduler.py), so a prompt gives the same logits whether it was evaluated cold or
            # after a reused prefix (docs/reliability.md, §7)
            self.n_ubatch = max(1, min(int(o.n_ubatch), self.n_batch))
            cp.n_ubatch = self.n_ubatch
            cp.n_seq_max = self.n_parallel
            cp.kv_unified = False  # a unified cache makes every token attend over all sequences' cells
            cp.n_threads = self.n_threads
            cp.n_threads_batch = self.n_threads
            cp.no_perf = True
            self._ctx = llama_cpp.llama_init_from_model(self._model, cp)
            if not self._ctx:
                raise ModelError(
                    f"llama.cpp could not create a context of {self.n_ctx} x {self.n_parallel} tokens for "
                    f"{self.info.path!r}; lower --n-ctx or --parallel"
                )
            self._mem = llama_cpp.llama_get_memory(self._ctx)
            self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab_p))
            self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self._init_sequences()
        self.vocab = self._read_vocab()
        # llguidance's tokenizer over this vocabulary, built at its first grammar
        self.vocab.tokenizers["llguidance"] = lambda: llama_tokenizer(self._vocab_p, self.vocab)
        self.model_id = self.info.name
        self._sha256: str | None = None
        self._template_mode, self._template = self._pick_template(chat_template, o.template_timeout, o.template_memory_mb)
        self._fsm_cache: OrderedDict[str, Compiled] = OrderedDict()
        self.n_calls = 0
        self.jump_forward = o.jump_forward  # off only to measure what it saves
        self.reuse_prefix = o.reuse_prefix  # likewise

    # ------------------------------------------------------------------ model facts

    @property
    def model_sha256(self) -> str:
        """The GGUF file's sha256."""
        if self._sha256 is None:
            self._sha256 = sha256_of(self.info.path)
        return self._sha256

    def identity(self) -> ModelIdentity:
        """Model name, file sha256 and the options that change outputs (as `LlamaBackend.identity`)."""
        assert isinstance(self.options, LlamaOptions)
        return ModelIdentity(
            backend="llama",
            model_id=self.model_id,
            digest=self.info.sha256 or self.model_sha256,
            settings=self.options.settings(),
        )

    # ------------------------------------------------------------------ constraint

    def compile(self, fmt: OutputFormat) -> Compiled:
        """The format's constraint (`fmt.constraint()`) compiled for this vocabulary by the engine the constraint
        registry picks for it (the token automaton for a regex, compiled once per regex and cached on disk;
        llguidance for a JSON schema or a Lark grammar). The last `FSM_CACHE_SIZE` are kept in memory, with at
        most `LLG_CACHE_CHARS` of llguidance grammar text among them."""
        spec = fmt.constraint()
        engine = constraints.engine_for(spec)
        key = engine.key(spec)
        hit = self._fsm_cache.get(key)
        if hit is None:
            hit = engine.compile(spec, self.vocab)
            self._remember(key, hit)
        else:
            self._fsm_cache.move_to_end(key)
        return hit

    def _remember(self, key: str, compiled: Compiled) -> None:
        """Keep a new compiled constraint: a server sees many schemas, so the least recently used go first
        past `FSM_CACHE_SIZE`, and the least recently used llguidance grammars (never an automaton: a judge's
        is small and reused) while their text passes `LLG_CACHE_CHARS` (the newest always stays)."""
        cache = self._fsm_cache
        cache[key] = compiled
        while len(cache) > FSM_CACHE_SIZE:
            cache.popitem(last=False)
        grammars = [k for k in cache if k.startswith("llg\0")]
        chars = sum(map(len, grammars))
        for old in grammars[:-1]:
            if chars <= LLG_CACHE_CHARS:
                break
            chars -= len(old)
            del cache[old]

    # ------------------------------------------------------------------ generation

    def _job(self, messages: Sequence[Message], fmt: OutputFormat, opts: DecodeOptions) -> DecodeJob:
        """The request's decode job: its prompt tokens, compiled constraint and budget. A request its caller prepared
        (`GenerateOptions.prepared`: serve) is decoded as given: its tokens and budget, checked there; any other is
        tokenized and budgeted here (the format's budget clamped to the context; too long: `PromptTooLongError`)."""
        prepared = opts.prepared if isinstance(opts, GenerateOptions) else None
        if prepared is not None and prepared.tokens is not None:
            prompt = list(prepared.tokens)
        else:
            prompt = self.prompt_tokens(messages)
        tc = time.perf_counter()
        compiled = self.compile(fmt) if opts.constrained and fmt.constrained else None
        compile_ms = (time.perf_counter() - tc) * 1000
        think = None
        if opts.think_tokens and compiled is not None:  # reasoning: <think>\n ... \n</think>\n before the verdict
            think = (self.tokenize(THINK_OPEN), self.tokenize(THINK_CLOSE))
        budget = prepared.max_tokens if prepared is not None else self._budget(prompt, fmt, opts, compiled, think)
        cons = compiled.start(self.tokenize, self.vocab) if compiled is not None else None
        return DecodeJob(
            prompt,
            fmt,
            cons,
            self.vocab,
            opts,
            budget,
            opts.field_tokens or fmt.field_tokens,
            self.jump_forward,
            self.model_id,
            compile_ms,
            think,
        )

    def _budget(
        self,
        prompt: list[int],
        fmt: OutputFormat,
        opts: DecodeOptions,
        compiled: Compiled | None,
        think: tuple[list[int], list[int]] | None,
    ) -> int:
        """The output budget of a request nobody prepared (a judge run's): `max_tokens`, else the format's own,
        clamped to the context left for a client's format; `PromptTooLongError` / `ConstraintError` when it cannot fit."""
        budget = opts.max_tokens or fmt.max_tokens()
        extra = opts.think_tokens + len(think[0]) + len(think[1]) if think else 0
        if isinstance(compiled, LLGCompiled) and not opts.max_tokens:
            # a client's format: the budget is clamped to the context left, never past it (no instance cut off), and
            # never raised past the format's own max_tokens (a shortest output longer than that is refused below)
            budget = min(budget, max(compiled.shortest, self.n_ctx - len(prompt) - extra))
        if len(prompt) + budget + extra > self.n_ctx:
            raise PromptTooLongError(
                f"prompt is {len(prompt)} tokens + {budget} output tokens"
                + (f" + {extra} thinking tokens (think_tokens {opts.think_tokens} and the think markers)" if extra else "")
                + f" > context window {self.n_ctx}; "
                f"raise --n-ctx (this model was trained for {self._L.llama_model_n_ctx_train(self._model)})"
                + (", lower think_tokens" if extra else "")
                + " or shorten the input",
                n_prompt=len(prompt),
                n_ctx=self.n_ctx,
                budget=budget,
            )
        if compiled is not None and compiled.shortest > budget:
            raise ConstraintError(
                f"max_tokens: {budget} is too few for the shortest output the format allows ({compiled.shortest} tokens); raise it"
            )
        return budget

    def generate_many(
        self, requests: Sequence[tuple[Sequence[Message], OutputFormat]], options: DecodeOptions | None = None
    ) -> list[Generation]:
        """Generate for several requests side by side; raises the first request's error, if any."""
        return generate_queued(self, requests, options)

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation:
        """One request, decoded under `fmt` (the same path as queued requests)."""
        return self.generate_many([(messages, fmt)], options)[0]

    def close(self) -> None:
        """Free the llama.cpp context, batch and model, and stop the chat-template worker (the engine cannot be used after)."""
        L = self._L
        if getattr(self, "_template", None) is not None:
            self._template.close()
        with LLAMA_LOCK:  # not while another engine loads or decodes (llama_lock.py)
            if getattr(self, "_batch", None) is not None:
                L.llama_batch_free(self._batch)
                self._batch = None
            if getattr(self, "_ctx", None):
                L.llama_free(self._ctx)
                self._ctx = None
            if getattr(self, "_model", None):
                L.llama_model_free(self._model)
                self._model = None

    def __del__(self):  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:
            pass
