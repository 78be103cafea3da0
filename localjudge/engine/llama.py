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
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from ..errors import (
    ChatTemplateError,
    ConstraintError,
    GPUUnavailableError,
    InputError,
    ModelError,
    NotGGUFError,
    PromptTooLongError,
)
from ..formats import OutputFormat
from ..models import ModelInfo, check_gguf, check_sha256, resolve_model, sha256_of
from .backends import Backend, BackendOptions
from .base import DecodeOptions, Generation, GenerationCancelled, Message, ModelIdentity, generate_queued
from .capabilities import ALL
from .constraint import TokenFSM, TokenVocab, compile_regex
from .job import DecodeJob, common_prefix
from .llg import LLGCompiled, LLGVocab
from .template import ChatTemplate
from .threads import default_threads

log = logging.getLogger("localjudge")


COPY_MIN = 32  # copy another sequence's cached prefix only when it saves more tokens than this
THINK_OPEN, THINK_CLOSE = b"<think>\n", b"\n</think>\n"  # the think markers (DeepSeek-R1, Qwen3)
FSM_CACHE_SIZE = 64  # compiled automata kept in memory (least recently used dropped; the disk cache keeps them all)


class _Group:
    """Requests submitted together; their callback runs once all are done."""

    def __init__(self, n: int, callback: Callable[[list[Generation | Exception]], None]):
        self.results: list[Any] = [None] * n
        self.left = n
        self.callback = callback

    def put(self, i: int, result: Generation | Exception) -> None:
        self.results[i] = result
        self.left -= 1

    @property
    def complete(self) -> bool:
        return self.left == 0


@dataclass
class _Queued:
    job: DecodeJob
    group: _Group
    index: int


@dataclass
class _Running:
    job: DecodeJob
    seq: int
    todo: list[int]  # tokens to evaluate next (prompt suffix, or the chosen token + a forced literal)
    prefilling: bool
    group: _Group
    index: int
    order: int  # admission order: prompts are evaluated first come, first served


_LOG_CB = None
_LLAMA_ERRORS: list[str] = []  # llama.cpp's last error lines, quoted in our own one-line errors


def _quiet_llama_logs(llama_cpp, verbose: bool) -> None:
    """llama.cpp logs model loading to stderr; keep only errors unless verbose (process-wide)."""
    global _LOG_CB
    if verbose or _LOG_CB is not None:
        return

    @llama_cpp.llama_log_callback
    def _cb(level, text, user_data):  # pragma: no cover - called from C
        if level == 4:  # GGML_LOG_LEVEL_ERROR (NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5)
            _LLAMA_ERRORS.append(text.decode("utf-8", "replace").strip())
            del _LLAMA_ERRORS[:-5]

    _LOG_CB = _cb
    llama_cpp.llama_log_set(_LOG_CB, ctypes.c_void_p(0))


class LlamaOptions(BackendOptions):
    """Options of `llama:` models (`--option key=value`; --n-ctx, --threads, --gpu-layers, --n-batch,
    --chat-template and run's --parallel are aliases)."""

    n_ctx: int | None = Field(None, ge=16, description="context window in tokens per sequence (default: min(4096, the model's))")
    n_threads: int | None = Field(
        None, ge=1, description="CPU threads (default: the physical cores this process may use, minus one)"
    )
    n_batch: int = Field(512, ge=1, description="tokens per llama.cpp batch")
    n_gpu_layers: int = Field(0, ge=-1, description="layers offloaded to the GPU (-1: all)")
    n_parallel: int = Field(1, ge=1, le=64, description="requests decoded side by side (1: byte-identical to one at a time)")
    chat_template: str | None = Field(None, description="'gguf' (from the model), 'raw' (plain text) or a Jinja template")
    jump_forward: bool = Field(True, description="feed literals the format forces without sampling them")
    reuse_prefix: bool = Field(True, description="reuse the KV cache of a shared prompt prefix")
    verbose: bool = Field(False, description="show llama.cpp's own logs")
    template_timeout: float = Field(10.0, gt=0, description="seconds one chat-template render may take (untrusted templates)")
    template_memory_mb: int = Field(1024, ge=16, description="memory a chat-template render may use, in MB")

    def settings(self) -> dict[str, Any]:
        """The options that change outputs, as the cache key has always recorded them: n_ctx and
        chat_template when given, n_parallel when > 1 (batched kernels round differently)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("n_ctx", "chat_template") if getattr(self, k) is not None}
        if self.n_parallel > 1:
            out["n_parallel"] = self.n_parallel
        return out


class LlamaBackend(Backend):
    """`llama:NAME_OR_PATH` (or no scheme): a GGUF model in this process."""

    scheme = "llama"
    Options = LlamaOptions
    summary = "a GGUF model in this process (llama.cpp); a registry name, a .gguf path, or nothing for the default"
    capabilities = ALL

    def identity(self, target: str | None, options: BackendOptions) -> ModelIdentity:
        """Registry name (or file name), the file's sha256 (the registry's pin, else computed), settings."""
        assert isinstance(options, LlamaOptions)
        info = resolve_model(target)
        return ModelIdentity(
            backend="llama", model_id=info.name, digest=info.sha256 or sha256_of(info.path), settings=options.settings()
        )

    def load(self, target: str | None, options: BackendOptions) -> LlamaEngine:
        """A `LlamaEngine` for the model."""
        assert isinstance(options, LlamaOptions)
        return LlamaEngine(target, options=options)


class LlamaEngine:
    """A loaded GGUF model. Load once per process; call `generate` as often as you like.

    `LlamaEngine(model, n_ctx=..., n_threads=...)`: keyword options as in `LlamaOptions`."""

    capabilities = ALL  # vocab, compile, token probabilities, streaming (engine/capabilities.py)

    def __init__(self, model: str | os.PathLike | None = None, *, options: LlamaOptions | None = None, **kwargs: Any):
        import llama_cpp

        self.options = options if options is not None else LlamaBackend().options(kwargs)
        assert isinstance(self.options, LlamaOptions)
        o = self.options
        n_ctx, n_threads, n_batch, n_gpu_layers, n_parallel = o.n_ctx, o.n_threads, o.n_batch, o.n_gpu_layers, o.n_parallel
        chat_template, verbose = o.chat_template, o.verbose

        self._L = llama_cpp
        _quiet_llama_logs(llama_cpp, verbose)
        self.info: ModelInfo = resolve_model(model)
        check_gguf(self.info.path)
        if self.info.sha256:
            check_sha256(self.info, sha256_of(self.info.path))
        if n_gpu_layers and not llama_cpp.llama_supports_gpu_offload():
            raise GPUUnavailableError(
                f"--gpu-layers {n_gpu_layers} asked, but this llama-cpp-python build is CPU-only; reinstall it with "
                'CMAKE_ARGS="-DGGML_CUDA=on" (or -DGGML_METAL=on) pip install --force-reinstall --no-cache-dir '
                "llama-cpp-python, or drop --gpu-layers"
            )
        llama_cpp.llama_backend_init()
        _LLAMA_ERRORS.clear()
        mp = llama_cpp.llama_model_default_params()
        mp.n_gpu_layers = int(n_gpu_layers)
        self._model = llama_cpp.llama_model_load_from_file(self.info.path.encode(), mp)
        if not self._model:
            why = next((e for e in _LLAMA_ERRORS if "error loading model" in e), _LLAMA_ERRORS[0] if _LLAMA_ERRORS else "")
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
        cp.n_ubatch = self.n_batch
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
        # one llama.cpp sequence per parallel job; an idle sequence keeps its last prompt (+ output) as a
        # prefix cache: a new prompt goes to the one sharing its longest prefix, or copies it from another
        self._slots: list[list[int]] = [[] for _ in range(self.n_parallel)]
        self._used: list[int] = [0] * self.n_parallel  # last use, for LRU choice
        self._busy: list[bool] = [False] * self.n_parallel
        self._copied: set[int] = set()  # sequences whose stream copy llama.cpp applies at the next decode
        self._clock = 0
        self._queue: deque[_Queued] = deque()
        self._active: dict[int, _Running] = {}
        self._groups: list[_Group] = []
        self._draining = False
        self.vocab = self._read_vocab()
        self.model_id = self.info.name
        self._sha256: str | None = None
        self._template_mode, self._template = self._pick_template(chat_template, o.template_timeout, o.template_memory_mb)
        self._fsm_cache: OrderedDict[str, TokenFSM | LLGCompiled] = OrderedDict()
        self._llg: LLGVocab | None = None  # llguidance's tokenizer over this vocabulary, built at first use
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

    def _read_vocab(self) -> TokenVocab:
        L = self._L
        buf = ctypes.create_string_buffer(512)
        pieces: list[bytes] = []
        eos: list[int] = []
        for i in range(self.n_vocab):
            if L.llama_vocab_is_eog(self._vocab_p, i):
                eos.append(i)
            if L.llama_vocab_is_control(self._vocab_p, i):
                pieces.append(b"")
                continue
            k = L.llama_token_to_piece(self._vocab_p, i, buf, 512, 0, False)
            pieces.append(buf.raw[:k] if k > 0 else b"")
        main_eos = int(L.llama_vocab_eos(self._vocab_p))
        eos = sorted(set(eos) | ({main_eos} if main_eos >= 0 else set()), key=lambda t: (t != main_eos, t))
        return TokenVocab(pieces=pieces, eos_ids=eos)

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = self._L.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            self._L.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def _pick_template(self, chat_template: str | None, timeout_s: float, memory_mb: int) -> tuple[str, Any]:
        mode = chat_template or self.info.chat_template or "gguf"
        if mode == "raw":
            return "raw", None
        src = self._meta("tokenizer.chat_template") if mode == "gguf" else mode
        if not src:
            raise ChatTemplateError(
                f"model {self.info.name!r} has no chat template in its GGUF metadata (a base model?); pass "
                "--chat-template raw to send prompts as plain text, or --chat-template '<jinja template>'"
            )
        # compiled and rendered in a child process under time and memory limits (engine/template.py)
        return "jinja", ChatTemplate(src, self.info.name, time_limit_s=timeout_s, memory_mb=memory_mb)

    # ------------------------------------------------------------------ text ↔ tokens

    def tokenize(self, text: str | bytes, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """Text → the model's token ids (special tokens parsed only with `parse_special`)."""
        data = text.encode("utf-8") if isinstance(text, str) else text
        n_max = len(data) + 16
        arr = (self._L.llama_token * n_max)()
        n = self._L.llama_tokenize(self._vocab_p, data, len(data), arr, n_max, add_special, parse_special)
        if n < 0:
            arr = (self._L.llama_token * (-n))()
            n = self._L.llama_tokenize(self._vocab_p, data, len(data), arr, -n, add_special, parse_special)
        return list(arr[:n])

    def render_prompt(self, messages: Sequence[Message]) -> str:
        """The chat template applied to the messages, with the generation prompt (raw: plain text blocks)."""
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        if self._template_mode == "raw":
            return "\n\n".join(m["content"] for m in msgs) + "\n\n"
        return self._template.render(
            messages=msgs, add_generation_prompt=True, bos_token=self._special_text("bos"), eos_token=self._special_text("eos")
        )

    def _special_text(self, which: str) -> str:
        tok = self._L.llama_vocab_bos(self._vocab_p) if which == "bos" else self._L.llama_vocab_eos(self._vocab_p)
        if tok < 0:
            return ""
        buf = ctypes.create_string_buffer(256)
        k = self._L.llama_token_to_piece(self._vocab_p, tok, buf, 256, 0, True)
        return buf.raw[: max(k, 0)].decode("utf-8", "replace")

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The prompt's token ids: BOS where the model wants one, control tokens only from the template."""
        text = self.render_prompt(messages)
        bos = self._special_text("bos")
        add_bos = bool(self._L.llama_vocab_get_add_bos(self._vocab_p)) and not (bos and text.startswith(bos))
        toks = self._tokenize_prompt(text, messages)
        bos_id = self._L.llama_vocab_bos(self._vocab_p)
        return ([bos_id] if add_bos and bos_id >= 0 else []) + toks

    def _tokenize_prompt(self, text: str, messages: Sequence[Message]) -> list[int]:
        """Control tokens (<|im_end|>, <end_of_turn>) come only from the template's own markup: a message
        that spells one (a judged text) gets it as plain text, so it cannot end its turn or forge one.
        Prompts whose messages spell none are tokenized as one string, as before."""
        spelled = [self.tokenize(m.content, parse_special=True) != self.tokenize(m.content) for m in messages]
        if not any(spelled):
            return self.tokenize(text, parse_special=True)
        marks = [f"\ue000{i}\ue001" if sp else m.content for i, (m, sp) in enumerate(zip(messages, spelled, strict=True))]
        masked = self.render_prompt([Message(role=m.role, content=k) for m, k in zip(messages, marks, strict=True)])
        out: list[int] = []
        rebuilt, rest = "", masked  # private-use sentinels mark where each spelling message's text goes
        for i, m in enumerate(messages):
            if spelled[i]:
                head, found, rest = rest.partition(marks[i])
                if not found or marks[i] in rest:
                    break
                out += self.tokenize(head, parse_special=True) + self.tokenize(m.content)
                rebuilt += head + m.content
        if rebuilt + rest != text:
            raise InputError(
                "a message spells the model's control tokens (such as <|im_end|>) and the chat template "
                "alters message text, so it cannot be kept as plain text; remove them from the input"
            )
        return out + self.tokenize(rest, parse_special=True)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Prompt tokens these messages take with the model's chat template."""
        return len(self.prompt_tokens(messages))

    # ------------------------------------------------------------------ llama.cpp plumbing

    def reset(self) -> None:
        """Forget the KV cache (the next call evaluates its whole prompt)."""
        self._L.llama_memory_clear(self._mem, True)
        for kv in self._slots:
            kv.clear()

    def _pick_seq(self, prompt: list[int]) -> tuple[int, int, int | None] | None:
        """(sequence, tokens reusable, sequence to copy them from or None) for a new prompt; None when
        an active job is about to put a longer shared prefix into its cache (wait for it, then copy)."""
        P = self.n_parallel
        free = [s for s in range(P) if not self._busy[s]]
        if not free:
            return None
        lcps = [common_prefix(kv, prompt) if self.reuse_prefix else 0 for kv in self._slots]
        seq = max(free, key=lambda s: (lcps[s], -self._used[s]))  # ties: least recently used
        if P == 1:
            return seq, lcps[seq], None
        src = max((s for s in range(P) if s not in self._copied), key=lambda s: lcps[s], default=seq)
        coming = max(
            (common_prefix(r.job.prompt, prompt) for r in self._active.values() if r.prefilling and self.reuse_prefix), default=0
        )
        if coming > max(lcps) + COPY_MIN:
            return None
        if src != seq and lcps[src] > lcps[seq] + COPY_MIN:
            return seq, lcps[src], src
        return seq, lcps[seq], None

    def _admit(self) -> None:
        """Start queued jobs on free sequences, each reusing the longest cached prefix it can."""
        waiting: list[_Queued] = []
        while self._queue:
            q = self._queue.popleft()
            if q.job.cancelled:
                q.group.put(q.index, GenerationCancelled("the request was cancelled before it started"))
                continue
            pick = self._pick_seq(q.job.prompt)
            if pick is None:
                waiting.append(q)
                if not any(not b for b in self._busy):
                    break
                continue
            seq, lcp, src = pick
            common = min(lcp, len(q.job.prompt) - 1)  # the last prompt token is evaluated again for its logits
            if src is not None:  # whole-stream copy (llama.cpp copies across sequences only whole), then trim
                self._L.llama_memory_seq_cp(self._mem, src, seq, -1, -1)
                self._slots[seq][:] = self._slots[src]
                self._copied.add(seq)
            if common < len(self._slots[seq]):
                self._L.llama_memory_seq_rm(self._mem, seq, common, -1)
                del self._slots[seq][common:]
            self._clock += 1
            self._busy[seq], self._used[seq] = True, self._clock
            job = q.job
            job.t_start, job.reused = time.perf_counter(), common
            feed = q.job.prompt[common:] + job.start()
            run = _Running(job=job, seq=seq, todo=feed, prefilling=True, group=q.group, index=q.index, order=self._clock)
            if job.done:
                self._finish(run)
            else:
                self._active[seq] = run
        self._queue.extendleft(reversed(waiting))

    def _step(self) -> None:
        """Evaluate what the active sequences need next, then let each job choose its next token(s):
        one llama_decode with the next feed of every decoding sequence (the batched decode step),
        then one prompt chunk of the sequence admitted first among those still prefilling."""
        for run in [r for r in self._active.values() if r.job.cancelled]:  # free a cancelled request's sequence
            run.job.stop_now("cancelled")
            del self._active[run.seq]
            self._finish(run)
        decoding = sorted((r for r in self._active.values() if not r.prefilling), key=lambda r: r.seq)
        per = max(1, self.n_batch // 16)  # a forced literal is rarely > 16 tokens (a longer one is fed in parts)
        for i in range(0, len(decoding), per):
            self._eval(decoding[i : i + per])
        prefilling = [r for r in self._active.values() if r.prefilling]
        if prefilling:
            self._eval([min(prefilling, key=lambda r: r.order)])

    def _eval(self, runs: list[_Running]) -> None:
        """One llama_decode: each run's next tokens (a prompt at most n_batch at a time); logits at the
        end of each run's feed, where its job then takes one step."""
        L, b = self._L, self._batch
        n = 0
        fed: list[tuple[_Running, list[int], int | None]] = []
        for run in runs:
            take = run.todo[: self.n_batch - n]
            pos0 = len(self._slots[run.seq])
            whole = len(take) == len(run.todo)
            for i, t in enumerate(take):
                b.token[n + i] = t
                b.pos[n + i] = pos0 + i
                b.n_seq_id[n + i] = 1
                b.seq_id[n + i][0] = run.seq
                b.logits[n + i] = whole and i == len(take) - 1
            n += len(take)
            fed.append((run, take, n - 1 if whole else None))
        b.n_tokens = n
        rc = L.llama_decode(self._ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with code {rc} (context of {self.n_ctx} tokens full?)")
        self._copied.clear()
        for run, take, last in fed:
            self._slots[run.seq].extend(take)
            run.todo = run.todo[len(take) :]
            if last is None:
                continue
            run.prefilling = False
            logits = np.ctypeslib.as_array(L.llama_get_logits_ith(self._ctx, last), shape=(self.n_vocab,))
            feed = run.job.step(logits)
            if feed is None:
                del self._active[run.seq]
                self._finish(run)
            else:
                run.todo = feed

    def _finish(self, run: _Running) -> None:
        self._busy[run.seq] = False
        self._clock += 1
        self._used[run.seq] = self._clock
        run.group.put(run.index, run.job.generation())

    # ------------------------------------------------------------------ constraint

    def compile(self, fmt: OutputFormat) -> TokenFSM | LLGCompiled:
        """The format's compiled constraint for this vocabulary: llguidance's for a format that gives a grammar
        (`fmt.llg_grammar()`: client JSON schemas, Lark grammars), else the token automaton (compiled once per
        regex, cached on disk). The last `FSM_CACHE_SIZE` of each are kept in memory."""
        grammar = getattr(fmt, "llg_grammar", lambda: None)()
        if grammar is not None:
            key = "llg\0" + grammar
            hit = self._fsm_cache.get(key)
            if hit is None:
                if self._llg is None:
                    self._llg = LLGVocab.from_llama(self._L, self._vocab_p, self.vocab)
                hit = self._llg.compile(grammar)
                self._fsm_cache[key] = hit
                while len(self._fsm_cache) > FSM_CACHE_SIZE:
                    self._fsm_cache.popitem(last=False)
            else:
                self._fsm_cache.move_to_end(key)
            return hit
        rx = fmt.regex()
        fsm = self._fsm_cache.get(rx)
        if fsm is None:
            fsm = compile_regex(rx, self.vocab)
            self._fsm_cache[rx] = fsm
            while len(self._fsm_cache) > FSM_CACHE_SIZE:  # a server sees many schemas: bounded, least recently used out
                self._fsm_cache.popitem(last=False)
        else:
            self._fsm_cache.move_to_end(rx)
        assert isinstance(fsm, TokenFSM)
        return fsm

    # ------------------------------------------------------------------ generation

    def _job(self, messages: Sequence[Message], fmt: OutputFormat, opts: DecodeOptions) -> DecodeJob:
        prompt = self.prompt_tokens(messages)
        tc = time.perf_counter()
        compiled = self.compile(fmt) if opts.constrained and fmt.constrained else None
        compile_ms = (time.perf_counter() - tc) * 1000
        budget = opts.max_tokens or fmt.max_tokens()
        think = None
        if opts.think_tokens and compiled is not None:  # reasoning: <think>\n ... \n</think>\n before the verdict
            think = (self.tokenize(THINK_OPEN), self.tokenize(THINK_CLOSE))
        extra = opts.think_tokens + len(think[0]) + len(think[1]) if think else 0
        if isinstance(compiled, LLGCompiled) and not opts.max_tokens:
            # a client's format: the budget is clamped to the context left, never past it (no instance cut off)
            budget = max(compiled.shortest, min(budget, self.n_ctx - len(prompt) - extra))
        if len(prompt) + budget + extra > self.n_ctx:
            raise PromptTooLongError(
                f"prompt is {len(prompt)} tokens + {budget} output tokens > context window {self.n_ctx}; "
                f"raise --n-ctx (this model was trained for {self._L.llama_model_n_ctx_train(self._model)}) "
                "or shorten the input",
                n_prompt=len(prompt),
                n_ctx=self.n_ctx,
                budget=budget,
            )
        if compiled is not None and compiled.shortest > budget:
            raise ConstraintError(
                f"max_tokens: {budget} is too few for the shortest output the format allows ({compiled.shortest} tokens); raise it"
            )
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

    def submit(
        self,
        requests: Sequence[tuple[Sequence[Message], OutputFormat]],
        options: DecodeOptions | None,
        callback: Callable[[list[Generation | Exception]], None],
        cancel: threading.Event | None = None,
    ) -> None:
        """Queue requests; `callback(results)` runs inside `drain` once all of them are done (a request
        that cannot start, such as a prompt too long, gets its exception in its place). Setting `cancel`
        drops the requests not started (`GenerationCancelled`) and stops the others at their next token."""
        opts = options or DecodeOptions()
        group = _Group(len(requests), callback)
        for i, (messages, fmt) in enumerate(requests):
            self.n_calls += 1
            try:
                job = self._job(messages, fmt, opts)
            except Exception as e:  # a prompt too long, a message the template cannot keep as text, ...
                group.put(i, e)
                continue
            job.cancel = cancel
            self._queue.append(_Queued(job, group, i))
        self._groups.append(group)

    def drain(self, poll: Callable[[], None] | None = None) -> None:
        """Run every queued request to completion, up to `n_parallel` side by side in one llama.cpp
        batch; callbacks may queue more (a judge's second stage) and those run too. `poll()` runs before
        every step and may submit more (requests from other threads join the drain: `EngineWorker`)."""
        if self._draining:
            raise RuntimeError("LlamaEngine.drain is not re-entrant: callbacks may submit, not generate")
        self._draining = True
        try:
            while True:
                if poll is not None:
                    poll()
                ready = [g for g in self._groups if g.complete]
                if ready:
                    self._groups = [g for g in self._groups if not g.complete]
                    for g in ready:
                        g.callback(g.results)
                    continue
                self._admit()
                if any(g.complete for g in self._groups):  # a request complete at admission (a fully forced answer)
                    continue
                if not self._active:
                    if self._queue:
                        raise RuntimeError("queued requests but no sequence could take them (a bug)")
                    break
                self._step()
        except BaseException:
            # abandon unfinished work; the KV cache keeps only what each sequence really holds
            self._queue.clear()
            self._groups.clear()
            for run in self._active.values():
                self._busy[run.seq] = False
            self._active.clear()
            raise
        finally:
            self._draining = False

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
