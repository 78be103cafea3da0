"""One request's decoding state: the format's constraint, token budgets, sampling, jump-forward.

A `DecodeJob` never touches llama.cpp: the engine feeds it the logits of the sequence's last
position (`step`) and it answers with the tokens to evaluate next (the chosen token, followed by
any literal the format then forces), or None when the output is complete. So one job decodes
alone or side by side with others in one llama.cpp batch, with the same result.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from ..constraints.base import Constraint, TokenVocab
from ..formats import OutputFormat
from .base import DecodeOptions, GenerateOptions, Generation, TokenInfo


class DecodeJob:
    """The per-request half of generation; `LlamaEngine` owns the KV cache and the batch."""

    def __init__(
        self,
        prompt: list[int],
        fmt: OutputFormat,
        constraint: Constraint | None,
        vocab: TokenVocab,
        opts: DecodeOptions,
        budget: int,
        field_budget: int,
        jump_forward: bool,
        model_id: str,
        compile_ms: float = 0.0,
        think: tuple[list[int], list[int]] | None = None,
    ):
        self.prompt, self.fmt, self.cons, self.vocab, self.opts = prompt, fmt, constraint, vocab, opts
        self.budget, self.field_budget, self.jump_forward, self.model_id = budget, field_budget, jump_forward, model_id
        self.rng = np.random.default_rng(opts.seed) if opts.temperature > 0 else None
        self.out: list[TokenInfo] = []
        self.run = 0  # consecutive model-chosen tokens that did not bring the output closer to its end
        self.cut = 0
        self.n_forced = 0
        self.stop: str | None = None
        self.steps: list[tuple[str, dict[str, float]]] | None = [] if opts.probs else None
        self.reused = 0
        self.compile_ms = compile_ms
        self.t_start = self.t_first = self.t_end = 0.0
        self.cancel: threading.Event | None = None  # set by the caller: stop at the next step
        # API-call extras (GenerateOptions); with plain DecodeOptions none of them is active
        ext = opts if isinstance(opts, GenerateOptions) else None
        self.top_p = ext.top_p if ext is not None else 1.0
        self.n_top = ext.top_logprobs if ext is not None else 0
        self.stops = [x.encode("utf-8") for x in ext.stop if x] if ext is not None and constraint is None else []
        self.on_tokens = ext.on_tokens if ext is not None else None
        self.text_end: int | None = None  # byte offset where a stop sequence begins (the text ends there)
        self._sent = 0  # tokens already handed to on_tokens
        self._bytes = bytearray()  # the output so far, only kept when stop sequences are watched
        # reasoning: free text between the think markers, at most think_tokens, force-closed, then the verdict
        self.think_left = opts.think_tokens if think is not None and constraint is not None else 0
        self.think_open, self.think_close = think or ([], [])
        self.thinking = self.think_left > 0
        self.think_bytes = bytearray()
        self.base = 0  # output tokens before the verdict (the think block): the budgets count from here

    # ------------------------------------------------------------------ the loop, one step at a time

    def start(self) -> list[int]:
        """Tokens the format forces before the model chooses anything (evaluated with the prompt)."""
        if self.thinking:  # the opening think marker first; the verdict's constraint starts after the block
            self._force(self.think_open)
            self._emit()
            return list(self.think_open)
        if self.cons is not None and self.cons.terminal():  # nothing to choose at all (a fully forced empty answer)
            self._finish("final")
            return []
        feed = self._jump()
        self._emit()
        return feed

    def step(self, logits: np.ndarray) -> list[int] | None:
        """Choose the next token from the last position's logits; return what to evaluate next
        (None: the output is complete, nothing more to evaluate)."""
        if not self.t_first:
            self.t_first = time.perf_counter()
        if self.thinking:
            return self._think_step(logits)
        cons, pieces, eos_ids = self.cons, self.vocab.pieces, self.vocab.eos_ids
        remaining = self.budget - (len(self.out) - self.base)
        if cons is not None:
            closing = self.run >= self.field_budget
            ids, allow_eos, cut = cons.choices(remaining, closing)
            if cut and cons.distance() > 0:
                self.cut += 1
                self.run = 0
        else:
            if remaining <= 0:
                return self._finish("max_tokens")
            ids, allow_eos = np.arange(len(logits)), True  # intp: indexes the logits fastest
        eos = eos_ids[0] if allow_eos else None
        if self.steps is not None and cons is not None and 2 <= len(ids) + allow_eos <= 64:
            self.steps.append(self._step_dist(logits, ids, eos))
        tok, _pos = choose(logits, ids, eos, self.opts, self.rng, self.top_p)
        if tok is None:
            return self._finish("eos" if cons is None or cons.can_end() else "budget")
        forced = False
        if cons is not None:
            settled = cons.settle(tok, remaining)
            if settled < 0:  # the output is complete as it stands and no token fits the budget left: end here
                return self._finish("budget")
            forced, tok = settled != tok, settled
        m = float(logits.max())
        lse = m + float(np.log(np.exp(logits - m, dtype=np.float64).sum()))
        self.out.append(
            TokenInfo(id=tok, text=pieces[tok].decode("utf-8", "replace"), logprob=float(logits[tok]) - lse, forced=forced)
        )
        self._top(logits, lse)
        if cons is None:
            if tok in eos_ids:
                self.out.pop()
                return self._finish("eos")
            if self.stops and self._hit_stop(pieces[tok]):
                return self._finish("stop")
            self._emit()
            return [tok]
        self.run = 0 if cons.advance(tok) else self.run + 1
        if cons.terminal():
            self._emit()
            return self._finish("final")
        feed = [tok] + self._jump()
        self._emit()
        return None if self.done else feed

    def _top(self, logits: np.ndarray, lse: float) -> None:
        """The last token's `n_top` most likely alternatives (top_logprobs), when asked for."""
        if self.n_top:
            top = np.argpartition(logits, -self.n_top)[-self.n_top :]
            top = top[np.argsort(-logits[top], kind="stable")]
            self.out[-1].top = [(int(t), float(logits[t]) - lse) for t in top]

    def _think_step(self, logits: np.ndarray) -> list[int] | None:
        """One free token of the think block (EOS excluded); the block ends when the model writes the closing
        marker or `think_tokens` are spent (then the marker is forced), and the verdict's constraint takes over."""
        pieces = self.vocab.pieces
        ids = self._think_ids(len(logits))
        tok, _ = choose(logits, ids, None, self.opts, self.rng, self.top_p)
        assert tok is not None
        m = float(logits.max())
        lse = m + float(np.log(np.exp(logits - m, dtype=np.float64).sum()))
        self.out.append(TokenInfo(id=tok, text=pieces[tok].decode("utf-8", "replace"), logprob=float(logits[tok]) - lse))
        self._top(logits, lse)
        self.think_left -= 1
        self.think_bytes += pieces[tok]
        feed = [tok]
        closer = b"".join(pieces[t] for t in self.think_close).strip()
        if closer and self.think_bytes.rstrip().endswith(closer):
            pass  # the model closed the block itself
        elif self.think_left <= 0:
            self._force(self.think_close)
            feed += self.think_close
        else:
            self._emit()
            return feed
        self.thinking, self.base, self.run = False, len(self.out), 0
        assert self.cons is not None
        if self.cons.terminal():  # a verdict with nothing to choose
            self._emit()
            return self._finish("final")
        feed += self._jump()
        self._emit()
        return None if self.done else feed

    def _think_ids(self, n: int) -> np.ndarray:
        ids = np.ones(n, dtype=bool)
        ids[[t for t in self.vocab.eos_ids if t < n]] = False
        return np.flatnonzero(ids)

    def _force(self, toks: list[int]) -> None:
        pieces = self.vocab.pieces
        self.out.extend(TokenInfo(id=t, text=pieces[t].decode("utf-8", "replace"), logprob=None, forced=True) for t in toks)
        self.n_forced += len(toks)

    def _hit_stop(self, piece: bytes) -> bool:
        """Add `piece` to the text; True when a stop sequence now occurs (the text will end where it begins)."""
        before = len(self._bytes)
        self._bytes += piece
        longest = max(map(len, self.stops))
        window = max(0, before - longest + 1)
        hits = [i for i in (self._bytes.find(x, window) for x in self.stops) if i >= 0]
        if hits:
            self.text_end = min(hits)
        return bool(hits)

    def _emit(self) -> None:
        """Hand the tokens decoded since the last call to `on_tokens` (streaming)."""
        if self.on_tokens is not None and len(self.out) > self._sent:
            new, self._sent = self.out[self._sent :], len(self.out)
            self.on_tokens(new)

    def _jump(self) -> list[int]:
        """Feed the literal the format forces from here, if it fits the budget (jump-forward)."""
        cons = self.cons
        if cons is None or not self.jump_forward or cons.can_end():
            return []
        toks = cons.jump(self.budget - (len(self.out) - self.base))
        if not toks:
            return []
        pieces = self.vocab.pieces
        self.out.extend(TokenInfo(id=t, text=pieces[t].decode("utf-8", "replace"), logprob=None, forced=True) for t in toks)
        self.n_forced += len(toks)
        self.run = 0
        if cons.terminal():
            self._finish("final")  # nothing left to choose: the forced tail need not be evaluated
            return []
        return list(toks)

    def _finish(self, reason: str) -> list[int] | None:
        """Mark the output complete (`reason` is the stop reason); nothing more to evaluate."""
        self.stop = reason
        self.t_end = time.perf_counter()
        return None

    @property
    def cancelled(self) -> bool:
        """Whether the caller asked to stop this request."""
        return self.cancel is not None and self.cancel.is_set()

    def stop_now(self, reason: str) -> None:
        """End the output here (e.g. "cancelled"): the generation keeps what was decoded so far."""
        if not self.done:
            self._finish(reason)

    @property
    def done(self) -> bool:
        """Whether the output is complete (a stop reason is set)."""
        return self.stop is not None

    # ------------------------------------------------------------------ results

    def _step_dist(self, logits: np.ndarray, ids: np.ndarray, eos: int | None) -> tuple[str, dict[str, float]]:
        """(text so far, {piece: probability among the allowed tokens}) at one choice point."""
        cand = np.append(ids, eos) if eos is not None else ids
        z = logits[cand].astype(np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        before = b"".join(self.vocab.pieces[t.id] for t in self.out).decode("utf-8", "replace")
        dist: dict[str, float] = {}
        for t, q in zip(cand.tolist(), p.tolist(), strict=True):
            key = "<eos>" if t == eos else self.vocab.pieces[t].decode("utf-8", "replace")
            dist[key] = dist.get(key, 0.0) + q
        return before, dist

    def generation(self) -> Generation:
        """The output as a `Generation`: text, tokens, token counts, stop reason (`budget` if none was set),
        fields cut, and timings in ms."""
        raw = b"".join(self.vocab.pieces[t.id] for t in self.out)
        text = (raw if self.text_end is None else raw[: self.text_end]).decode("utf-8", "replace")
        first = self.t_first or self.t_end
        return Generation(
            text=text,
            tokens=self.out,
            n_prompt_tokens=len(self.prompt),
            n_cached_prompt_tokens=self.reused,
            n_output_tokens=len(self.out),
            n_forced_tokens=self.n_forced,
            n_reasoning_tokens=len(self.out) if self.thinking else self.base,  # base: 0 unless a think block ended
            stop_reason=self.stop or "budget",
            fields_cut=self.cut,
            prompt_ms=(first - self.t_start) * 1000,
            decode_ms=(self.t_end - first) * 1000,
            compile_ms=self.compile_ms,
            total_ms=(self.t_end - self.t_start) * 1000 + self.compile_ms,
            model_id=self.model_id,
            choice_steps=self.steps,
        )


def choose(
    logits: np.ndarray, ids: np.ndarray, eos: int | None, opts: DecodeOptions, rng, top_p: float = 1.0
) -> tuple[int | None, int]:
    """Greedy (temperature 0) or seeded sampling over the allowed ids (+ EOS where the output may end), with
    `top_k` and nucleus `top_p` when sampling. Returns (token or None for EOS, its position in `ids`)."""
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
        p /= p.sum()
        if top_p < 1.0:  # keep the most likely tokens whose mass reaches top_p
            order = np.argsort(-p, kind="stable")
            keep = order[: int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1]
            q = np.zeros_like(p)
            q[keep] = p[keep]
            p = q / q.sum()
        pos = int(rng.choice(len(z), p=p))
    if eos is not None and pos == len(ids):
        return None, pos
    return int(ids[pos]), pos


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token sequences."""
    n, i = min(len(a), len(b)), 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
