"""Requests on llama.cpp sequences: the queue, admission with KV prefix reuse, and the batched decode step.

`SequenceScheduler` is a part of `LlamaEngine` (engine/llama.py), which loads the model, creates the context
and batch, and turns each request into a `job.DecodeJob` (`_job`). Several requests run side by side
(`n_parallel` llama.cpp sequences, each with its own stream of n_ctx KV cells): every `llama_decode` carries
the next token of each decoding sequence plus a prompt chunk of one still prefilling, so one pass over the
weights serves many rows. An idle sequence keeps its last prompt (+ output) as a prefix cache: a new prompt
goes to the sequence sharing its longest prefix, or copies it from another.

Prefix reuse never changes an output. llama.cpp computes a physical batch (`n_ubatch` tokens) of more than
`SPLIT_FREE_UBATCH` tokens through other kernels than a smaller one, and they round differently, so a prompt must be
cut into the same physical batches whether it is evaluated cold or after a reused prefix. With `n_ubatch` above
that, every prompt is fed in physical batches that start at multiples of `n_ubatch` (absolute positions), and a
cached prefix is reused only up to the last such multiple that lies inside both the common prefix and the part of
the cache those batches computed (never a decoded token): a warm prompt then computes exactly the batches a cold
one does. With `n_ubatch` <= `SPLIT_FREE_UBATCH` any split gives the same rounding, and reuse goes up to the
prompt's last two tokens (never a one-token feed: with more than one thread a lone token rounds differently).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats import OutputFormat
from .base import DecodeOptions, Generation, GenerationCancelled, Message
from .job import DecodeJob, common_prefix
from .llama_lock import LLAMA_LOCK
from .llama_options import SPLIT_FREE_UBATCH

COPY_MIN = 32  # copy another sequence's cached prefix only when it saves more tokens than this


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


class SequenceScheduler:
    """Queued requests (`submit`) run to completion (`drain`) on `n_parallel` llama.cpp sequences."""

    _L: Any  # the llama_cpp module
    _ctx: Any  # llama_context pointer
    _mem: Any  # its llama_memory
    _batch: Any  # the llama_batch every decode fills
    n_ctx: int
    n_batch: int
    n_ubatch: int
    n_vocab: int
    n_parallel: int
    n_calls: int
    reuse_prefix: bool

    @property
    def aligned_batches(self) -> bool:
        """Whether prompts are fed in physical batches at fixed absolute positions (`n_ubatch` above
        `SPLIT_FREE_UBATCH`), so that reuse stops at a batch boundary."""
        return self.n_ubatch > SPLIT_FREE_UBATCH

    def _init_sequences(self) -> None:
        # one llama.cpp sequence per parallel job; an idle sequence keeps its last prompt (+ output) as a
        # prefix cache: a new prompt goes to the one sharing its longest prefix, or copies it from another
        self._slots: list[list[int]] = [[] for _ in range(self.n_parallel)]
        # per sequence: how many leading cached tokens a prompt feed computed (decoded tokens are never reused when
        # batches are aligned: a cold prompt would compute them in another batch)
        self._prefilled: list[int] = [0] * self.n_parallel
        self._used: list[int] = [0] * self.n_parallel  # last use, for LRU choice
        self._busy: list[bool] = [False] * self.n_parallel
        self._copied: set[int] = set()  # sequences whose stream copy llama.cpp applies at the next decode
        self._clock = 0
        self._queue: deque[_Queued] = deque()
        self._active: dict[int, _Running] = {}
        self._groups: list[_Group] = []
        self._draining = False

    def reset(self) -> None:
        """Forget the KV cache (the next call evaluates its whole prompt)."""
        self._L.llama_memory_clear(self._mem, True)
        for kv in self._slots:
            kv.clear()
        self._prefilled = [0] * self.n_parallel

    def _pick_seq(self, prompt: list[int]) -> tuple[int, int, int | None] | None:
        """(sequence, tokens reusable, sequence to copy them from or None) for a new prompt; None when
        an active job is about to put a longer shared prefix into its cache (wait for it, then copy)."""
        P = self.n_parallel
        free = [s for s in range(P) if not self._busy[s]]
        if not free:
            return None
        lcps = [self._reusable(s, prompt) if self.reuse_prefix else 0 for s in range(P)]
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

    def _reusable(self, seq: int, prompt: list[int]) -> int:
        """Tokens of `prompt` that sequence `seq`'s cache can give without changing its output: the common
        prefix, and with aligned batches only up to the last batch boundary inside the part a prompt feed
        computed, leaving at least one prompt token to evaluate."""
        lcp = common_prefix(self._slots[seq], prompt)
        if not self.aligned_batches:
            return lcp
        B = self.n_ubatch
        return min(lcp, self._prefilled[seq], len(prompt) - 1) // B * B

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
            # the last prompt tokens are evaluated again for their logits: two, so that no prompt is ever fed
            # as a one-token batch (with more than one thread llama.cpp rounds a lone token differently); with
            # aligned batches `lcp` is already a batch boundary before the last prompt token
            common = lcp if self.aligned_batches else max(0, min(lcp, len(q.job.prompt) - 2))
            if src is not None:  # whole-stream copy (llama.cpp copies across sequences only whole), then trim
                self._L.llama_memory_seq_cp(self._mem, src, seq, -1, -1)
                self._slots[seq][:] = self._slots[src]
                self._prefilled[seq] = self._prefilled[src]
                self._copied.add(seq)
            if common < len(self._slots[seq]):
                self._L.llama_memory_seq_rm(self._mem, seq, common, -1)
                del self._slots[seq][common:]
            self._prefilled[seq] = min(self._prefilled[seq], common)
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

    def _take(self, todo: int, room: int, pos0: int) -> int:
        """How many of `todo` tokens to feed now at position `pos0` (at most `room`). Aligned batches: all of
        them, or up to a multiple of `n_ubatch` so that the next feed starts at a batch boundary too. Small
        batches: never leave llama.cpp a one-token physical batch inside a longer feed, nor a one-token rest
        for the next call, so the same prompt is always computed by the same kernels whatever prefix was
        reused (a lone token rounds differently)."""
        k = min(todo, room)
        if self.aligned_batches:
            return k if k == todo else max(k - (pos0 + k) % self.n_ubatch, min(k, 1))
        while k > 2 and (k % self.n_ubatch == 1 or todo - k == 1):
            k -= 1
        return k

    def _eval(self, runs: list[_Running]) -> None:
        """One llama_decode: each run's next tokens (a prompt at most n_batch at a time); logits at the
        end of each run's feed, where its job then takes one step."""
        L, b = self._L, self._batch
        n = 0
        fed: list[tuple[_Running, list[int], int | None]] = []
        for run in runs:
            pos0 = len(self._slots[run.seq])
            take = run.todo[: self._take(len(run.todo), self.n_batch - n, pos0)]
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
        with LLAMA_LOCK:  # one llama.cpp call at a time in the process, whichever engine (llama_lock.py)
            rc = L.llama_decode(self._ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with code {rc} (context of {self.n_ctx} tokens full?)")
        self._copied.clear()
        for run, take, last in fed:
            self._slots[run.seq].extend(take)
            if run.prefilling:
                self._prefilled[run.seq] = len(self._slots[run.seq])
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

    def _job(self, messages: Sequence[Message], fmt: OutputFormat, opts: DecodeOptions) -> DecodeJob:
        raise NotImplementedError  # the engine's: prompt tokens, compiled constraint, budgets

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
