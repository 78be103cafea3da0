"""LlamaEngine: a GGUF model through llama.cpp's C API, with our own constrained decode loop.

Per call: render the chat template, tokenize, reuse the longest common token prefix already in the
KV cache (only the new suffix is evaluated), then loop: read the last logits in place (no copy),
keep only tokens the format's automaton allows within the token budget, pick greedily (or sample
with a seed), advance the automaton. Literals the format forces (JSON keys, `", "result": "`,
closing braces) are tokenized and fed in one batch (jump-forward); a forced tail that ends the
output is not evaluated at all.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ChatTemplateError, GPUUnavailableError, InputError, NotGGUFError, PromptTooLongError
from ..formats import OutputFormat
from ..models import ModelInfo, check_gguf, check_sha256, resolve_model, sha256_of
from .base import DecodeOptions, Generation, Message, TokenInfo
from .constraint import TokenFSM, TokenVocab, compile_regex

log = logging.getLogger("localjudge")


def default_threads() -> int:
    """Cores this process may use (llama.cpp's own default is half of them)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        n = os.cpu_count() or 1
    return max(1, min(n, 16))


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


class LlamaEngine:
    """A loaded GGUF model. Load once per process; call `generate` as often as you like."""

    def __init__(self, model: str | os.PathLike | None = None, *, n_ctx: int | None = None, n_threads: int | None = None,
                 n_batch: int = 512, n_gpu_layers: int = 0, chat_template: str | None = None, n_slots: int = 1,
                 jump_forward: bool = True, verbose: bool = False):
        import llama_cpp

        self._L = llama_cpp
        _quiet_llama_logs(llama_cpp, verbose)
        self.info: ModelInfo = resolve_model(model)
        check_gguf(self.info.path)
        if self.info.sha256:
            check_sha256(self.info, sha256_of(self.info.path))
        if n_gpu_layers and not llama_cpp.llama_supports_gpu_offload():
            raise GPUUnavailableError(
                f"--gpu-layers {n_gpu_layers} asked, but this llama-cpp-python build is CPU-only; reinstall it with "
                "CMAKE_ARGS=\"-DGGML_CUDA=on\" (or -DGGML_METAL=on) pip install --force-reinstall --no-cache-dir "
                "llama-cpp-python, or drop --gpu-layers")
        llama_cpp.llama_backend_init()
        _LLAMA_ERRORS.clear()
        mp = llama_cpp.llama_model_default_params()
        mp.n_gpu_layers = int(n_gpu_layers)
        self._model = llama_cpp.llama_model_load_from_file(self.info.path.encode(), mp)
        if not self._model:
            why = next((e for e in _LLAMA_ERRORS if "error loading model" in e), _LLAMA_ERRORS[0] if _LLAMA_ERRORS else "")
            raise NotGGUFError(f"llama.cpp could not load {self.info.path!r} ({why or 'no reason given'}): truncated, "
                               "corrupt or an unsupported architecture; re-copy the file or update llama-cpp-python")
        self._vocab_p = llama_cpp.llama_model_get_vocab(self._model)
        n_train = int(llama_cpp.llama_model_n_ctx_train(self._model))
        self.n_ctx = int(n_ctx) if n_ctx else min(4096, n_train)
        self.n_threads = int(n_threads) if n_threads else default_threads()
        self.n_batch = int(n_batch)
        self.n_gpu_layers = int(n_gpu_layers)
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = self.n_ctx
        cp.n_batch = self.n_batch
        cp.n_ubatch = self.n_batch
        self.n_slots = max(1, int(n_slots))
        cp.n_seq_max = self.n_slots
        if self.n_slots > 1:
            cp.kv_unified = True  # one cache shared by the slots, each may use the whole n_ctx
        cp.n_threads = self.n_threads
        cp.n_threads_batch = self.n_threads
        cp.no_perf = True
        self._ctx = llama_cpp.llama_init_from_model(self._model, cp)
        if not self._ctx:
            raise NotGGUFError(f"llama.cpp could not create a context of {self.n_ctx} tokens for {self.info.path!r}; "
                               "lower --n-ctx")
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab_p))
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        # prefix slots: one llama.cpp sequence each, holding the tokens of a recent prompt (+ output);
        # a new prompt goes to the slot sharing its longest prefix (so interleaved judges keep theirs)
        self._slots: list[list[int]] = [[] for _ in range(self.n_slots)]
        self._used: list[int] = [0] * self.n_slots  # last use, for LRU eviction
        self._seq = 0  # the slot the current call decodes in
        self._clock = 0
        self._kv: list[int] = self._slots[0]
        self.vocab = self._read_vocab()
        self.model_id = self.info.name
        self._sha256: str | None = None
        self._template_mode, self._template = self._pick_template(chat_template)
        self._fsm_cache: dict[str, TokenFSM] = {}
        self._forced_cache: dict[tuple[int, int], tuple[list[int], int] | None] = {}
        self.n_calls = 0
        self.jump_forward = jump_forward  # off only to measure what it saves

    # ------------------------------------------------------------------ model facts

    @property
    def model_sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = sha256_of(self.info.path)
        return self._sha256

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

    def _pick_template(self, chat_template: str | None) -> tuple[str, Any]:
        mode = chat_template or self.info.chat_template or "gguf"
        if mode == "raw":
            return "raw", None
        src = self._meta("tokenizer.chat_template") if mode == "gguf" else mode
        if not src:
            raise ChatTemplateError(
                f"model {self.info.name!r} has no chat template in its GGUF metadata (a base model?); pass "
                "--chat-template raw to send prompts as plain text, or --chat-template '<jinja template>'")
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(msg: str) -> None:
            raise ChatTemplateError(f"the model's chat template refused the messages: {msg}")

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: time.strftime(fmt)
        try:
            return "jinja", env.from_string(src)
        except Exception as e:
            raise ChatTemplateError(f"the chat template of {self.info.name!r} does not compile ({e}); "
                                    "pass --chat-template raw") from None

    # ------------------------------------------------------------------ text ↔ tokens

    def tokenize(self, text: str | bytes, add_special: bool = False, parse_special: bool = False) -> list[int]:
        data = text.encode("utf-8") if isinstance(text, str) else text
        n_max = len(data) + 16
        arr = (self._L.llama_token * n_max)()
        n = self._L.llama_tokenize(self._vocab_p, data, len(data), arr, n_max, add_special, parse_special)
        if n < 0:
            arr = (self._L.llama_token * (-n))()
            n = self._L.llama_tokenize(self._vocab_p, data, len(data), arr, -n, add_special, parse_special)
        return list(arr[:n])

    def render_prompt(self, messages: Sequence[Message]) -> str:
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        if self._template_mode == "raw":
            return "\n\n".join(m["content"] for m in msgs) + "\n\n"
        return self._template.render(messages=msgs, add_generation_prompt=True, bos_token=self._special_text("bos"),
                                     eos_token=self._special_text("eos"))

    def _special_text(self, which: str) -> str:
        tok = self._L.llama_vocab_bos(self._vocab_p) if which == "bos" else self._L.llama_vocab_eos(self._vocab_p)
        if tok < 0:
            return ""
        buf = ctypes.create_string_buffer(256)
        k = self._L.llama_token_to_piece(self._vocab_p, tok, buf, 256, 0, True)
        return buf.raw[: max(k, 0)].decode("utf-8", "replace")

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
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
            raise InputError("a message spells the model's control tokens (such as <|im_end|>) and the chat template "
                             "alters message text, so it cannot be kept as plain text; remove them from the input")
        return out + self.tokenize(rest, parse_special=True)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return len(self.prompt_tokens(messages))

    # ------------------------------------------------------------------ llama.cpp plumbing

    def _decode(self, tokens: Sequence[int], want_logits: bool = True) -> None:
        """Append `tokens` to sequence 0 (in n_batch chunks); logits only for the last one."""
        L, b = self._L, self._batch
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start:start + self.n_batch]
            pos0 = len(self._kv)
            b.n_tokens = len(chunk)
            last = start + len(chunk) == len(tokens)
            for i, t in enumerate(chunk):
                b.token[i] = t
                b.pos[i] = pos0 + i
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = self._seq
                b.logits[i] = bool(want_logits and last and i == len(chunk) - 1)
            rc = L.llama_decode(self._ctx, b)
            if rc != 0:
                raise RuntimeError(f"llama_decode failed with code {rc} (context of {self.n_ctx} tokens full?)")
            self._kv.extend(chunk)

    def _logits(self) -> np.ndarray:
        ptr = self._L.llama_get_logits_ith(self._ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    @staticmethod
    def _lcp(a: list[int], b: list[int]) -> int:
        n, i = min(len(a), len(b)), 0
        while i < n and a[i] == b[i]:
            i += 1
        return i

    def _prefill(self, prompt: list[int], budget: int = 0) -> int:
        """Put `prompt` in the slot sharing its longest prefix (evaluating only the rest); returns tokens reused."""
        self._clock += 1
        lcps = [self._lcp(kv, prompt) for kv in self._slots]
        seq = max(range(self.n_slots), key=lambda i: (lcps[i], -self._used[i]))  # ties: least recently used
        self._seq, self._kv = seq, self._slots[seq]
        self._used[seq] = self._clock
        common = min(lcps[seq], len(prompt) - 1)  # the last prompt token is evaluated again for its logits
        if common < len(self._kv):
            self._L.llama_memory_seq_rm(self._mem, seq, common, -1)
            del self._kv[common:]
        # the slots share n_ctx cells: evict least recently used slots until this call fits
        need = len(prompt) - common + budget
        for other in sorted(range(self.n_slots), key=lambda i: self._used[i]):
            if sum(len(k) for k in self._slots) + need <= self.n_ctx:
                break
            if other != seq and self._slots[other]:
                self._L.llama_memory_seq_rm(self._mem, other, 0, -1)
                self._slots[other].clear()
        self._decode(prompt[common:])
        return common

    def reset(self) -> None:
        """Forget the KV cache (the next call evaluates its whole prompt)."""
        self._L.llama_memory_clear(self._mem, True)
        for kv in self._slots:
            kv.clear()

    # ------------------------------------------------------------------ constraint

    def compile(self, fmt: OutputFormat) -> TokenFSM:
        rx = fmt.regex()
        fsm = self._fsm_cache.get(rx)
        if fsm is None:
            fsm = compile_regex(rx, self.vocab)
            self._fsm_cache[rx] = fsm
        return fsm

    def _forced(self, fsm: TokenFSM, state: int) -> tuple[list[int], int] | None:
        key = (id(fsm), state)
        if key in self._forced_cache:
            return self._forced_cache[key]
        lit = fsm.forced_bytes(state, self.vocab)
        res = None
        if lit:
            toks = self.tokenize(lit)
            end = fsm.walk(state, toks) if toks else None
            if end is not None and b"".join(self.vocab.pieces[t] for t in toks) == lit:
                res = (toks, end)
        self._forced_cache[key] = res
        return res

    # ------------------------------------------------------------------ generation

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation:
        opts = options or DecodeOptions()
        t0 = time.perf_counter()
        self.n_calls += 1
        prompt = self.prompt_tokens(messages)
        budget = opts.max_tokens or fmt.max_tokens()
        field_budget = opts.field_tokens or fmt.field_tokens
        if len(prompt) + budget > self.n_ctx:
            raise PromptTooLongError(
                f"prompt is {len(prompt)} tokens + {budget} output tokens > context window {self.n_ctx}; "
                f"raise --n-ctx (this model was trained for {self._L.llama_model_n_ctx_train(self._model)}) "
                "or shorten the input", n_prompt=len(prompt), n_ctx=self.n_ctx, budget=budget)
        tc = time.perf_counter()
        fsm = self.compile(fmt) if opts.constrained else None
        compile_ms = (time.perf_counter() - tc) * 1000
        tp = time.perf_counter()
        reused = self._prefill(prompt, budget)
        prompt_ms = (time.perf_counter() - tp) * 1000
        td = time.perf_counter()
        steps: list[tuple[str, dict[str, float]]] | None = [] if opts.probs else None
        out, stop, cut, n_forced = self._loop(fsm, budget, field_budget, opts, steps)
        decode_ms = (time.perf_counter() - td) * 1000
        text = b"".join(self.vocab.pieces[t.id] for t in out).decode("utf-8", "replace")
        return Generation(text=text, tokens=out, n_prompt_tokens=len(prompt), n_cached_prompt_tokens=reused,
                          n_output_tokens=len(out), n_forced_tokens=n_forced, stop_reason=stop, fields_cut=cut,
                          prompt_ms=prompt_ms, decode_ms=decode_ms, compile_ms=compile_ms,
                          total_ms=(time.perf_counter() - t0) * 1000, model_id=self.model_id, choice_steps=steps)

    def generate_many(self, requests: Sequence[tuple[Sequence[Message], OutputFormat]],
                      options: DecodeOptions | None = None) -> list[Generation]:
        return [self.generate(m, f, options) for m, f in requests]

    def _loop(self, fsm: TokenFSM | None, budget: int, field_budget: int, opts: DecodeOptions,
              steps: list[tuple[str, dict[str, float]]] | None = None):
        pieces = self.vocab.pieces
        eos_ids = self.vocab.eos_ids
        rng = np.random.default_rng(opts.seed) if opts.temperature > 0 else None
        out: list[TokenInfo] = []
        state = fsm.initial if fsm else 0
        run = 0  # consecutive model-chosen tokens that did not bring the output closer to its end
        cut = 0
        n_forced = 0
        all_ids = np.arange(self.n_vocab, dtype=np.int32) if fsm is None else None
        while True:
            remaining = budget - len(out)
            if fsm is not None:
                lo, hi = fsm.offsets[state], fsm.offsets[state + 1]
                if fsm.final[state] and lo == hi:
                    return out, "final", cut, n_forced
                jump = self._forced(fsm, state) if self.jump_forward and not fsm.final[state] else None
                if jump and len(jump[0]) + fsm.dist[jump[1]] <= remaining:
                    toks, end = jump
                    out.extend(TokenInfo(id=t, text=pieces[t].decode("utf-8", "replace"), logprob=None, forced=True) for t in toks)
                    n_forced += len(toks)
                    state, run = end, 0
                    if fsm.final[state] and fsm.offsets[state] == fsm.offsets[state + 1]:
                        return out, "final", cut, n_forced  # nothing left to choose: no need to evaluate the tail
                    self._decode(toks)
                    continue
                ids, nxt = fsm.allowed(state)
                d = fsm.dist[nxt]
                ok = d < remaining  # 1 + dist(next) <= remaining
                if run >= field_budget:
                    ok &= d < fsm.dist[state]
                if not ok.all():
                    ids, nxt = ids[ok], nxt[ok]
                    if run >= field_budget and fsm.dist[state] > 0:
                        cut += 1
                        run = 0
                allow_eos = bool(fsm.final[state])
            else:
                if remaining <= 0:
                    return out, "max_tokens", cut, n_forced
                ids, nxt, allow_eos = all_ids, None, True
            logits = self._logits()
            if steps is not None and fsm is not None and 2 <= len(ids) + allow_eos <= 64:
                steps.append(self._step_dist(out, logits, ids, eos_ids[0] if allow_eos else None))
            tok, pos = self._choose(logits, ids, eos_ids[0] if allow_eos else None, opts, rng)
            if tok is None:
                return out, "eos" if fsm is None or fsm.final[state] else "budget", cut, n_forced
            m = float(logits.max())
            lse = m + float(np.log(np.exp(logits - m, dtype=np.float64).sum()))
            out.append(TokenInfo(id=int(tok), text=pieces[tok].decode("utf-8", "replace"), logprob=float(logits[tok]) - lse))
            if fsm is not None:
                new = int(nxt[pos])
                run = run + 1 if fsm.dist[new] >= fsm.dist[state] else 0
                state = new
                if fsm.final[state] and fsm.offsets[state] == fsm.offsets[state + 1]:
                    return out, "final", cut, n_forced
            elif tok in eos_ids:
                out.pop()
                return out, "eos", cut, n_forced
            self._decode([int(tok)])

    def _step_dist(self, out: list[TokenInfo], logits: np.ndarray, ids: np.ndarray, eos: int | None):
        """(text so far, {piece: probability among the allowed tokens}) at one choice point."""
        cand = np.append(ids, eos) if eos is not None else ids
        z = logits[cand].astype(np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        before = b"".join(self.vocab.pieces[t.id] for t in out).decode("utf-8", "replace")
        dist: dict[str, float] = {}
        for t, q in zip(cand.tolist(), p.tolist(), strict=True):
            key = "<eos>" if t == eos else self.vocab.pieces[t].decode("utf-8", "replace")
            dist[key] = dist.get(key, 0.0) + q
        return before, dist

    @staticmethod
    def _choose(logits: np.ndarray, ids: np.ndarray, eos: int | None, opts: DecodeOptions, rng):
        """Greedy (temperature 0) or seeded sampling over the allowed ids (+ EOS where the output may end).
        Returns (token or None for EOS, its position in `ids`)."""
        cand = logits[ids] if len(ids) else np.empty(0, dtype=np.float32)
        if eos is not None:
            cand = np.append(cand, logits[eos])
        if len(cand) == 0:
            raise RuntimeError("constraint left no token to choose: this is a bug in the format's budget")
        if rng is None:
            pos = int(np.argmax(cand))
        else:
            z = cand.astype(np.float64) / opts.temperature
            if opts.top_k and opts.top_k < len(z):
                kth = np.partition(z, -opts.top_k)[-opts.top_k]
                z = np.where(z >= kth, z, -np.inf)
            p = np.exp(z - z.max())
            pos = int(rng.choice(len(z), p=p / p.sum()))
        if eos is not None and pos == len(ids):
            return None, pos
        return int(ids[pos]), pos

    def close(self) -> None:
        L = self._L
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


_ENGINES: dict[tuple, LlamaEngine] = {}


def load_engine(model: str | os.PathLike | None = None, **kwargs: Any) -> LlamaEngine:
    """Load a model once per process (same arguments → the same engine)."""
    key = (str(model) if model is not None else None, tuple(sorted(kwargs.items())))
    eng = _ENGINES.get(key)
    if eng is None:
        eng = LlamaEngine(model, **kwargs)
        _ENGINES[key] = eng
    return eng
