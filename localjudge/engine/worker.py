"""A thread-safe front for one loaded engine: many threads submit, one thread decodes.

An engine is not thread-safe (one llama.cpp context, one KV cache). Callers on any thread (a server's
request handlers, MLflow's scorer pool, a pytest session) hand work to an `EngineWorker` and get a
`concurrent.futures.Future`; one worker thread owns the engine, queues what arrived with
`engine.submit` and drains. Work that arrives while the engine drains joins that drain at its next
step (`drain(poll=...)`), so concurrent requests are decoded side by side (`n_parallel`) and share the
prefix cache, exactly as the rows of a batch run do.

    worker = EngineWorker(engine, max_pending=64)
    fut = worker.generate(messages, fmt, options)          # Future[Generation]
    fut = worker.call(lambda eng, done: judge.submit_many(eng, [row], opts, lambda i, r: done(r), eng.model_id))

A full queue refuses new work at once (`WorkerBusy`, e.g. HTTP 429); a request whose `cancel` event is
set is dropped before it starts or stopped at its next token (its sequence is freed). `close()` stops
accepting, finishes what is in flight and stops the thread.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from ..formats import OutputFormat
from .base import DecodeOptions, Engine, Generation, Message

Start = Callable[[Engine, Callable[[Any], None]], None]  # queue work on the engine; call done(result or exception) once


class WorkerBusy(RuntimeError):
    """The worker's queue is full; try again later."""


class WorkerClosed(RuntimeError):
    """The worker no longer accepts work (it is closing or closed)."""


class _Work:
    __slots__ = ("start", "future", "sequential")

    def __init__(self, start: Start, future: Future[Any], sequential: bool):
        self.start, self.future, self.sequential = start, future, sequential


class EngineWorker:
    """One thread that owns `engine`; `generate` and `call` may be used from any thread."""

    def __init__(self, engine: Engine, max_pending: int | None = None, name: str = "localjudge-engine"):
        self.engine = engine
        self.max_pending = max_pending
        self._inbox: deque[_Work] = deque()
        self._live: set[Future[Any]] = set()
        self._cond = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------------ public

    @property
    def pending(self) -> int:
        """Work accepted and not finished yet (queued or decoding)."""
        with self._cond:
            return len(self._live)

    def call(self, start: Start, sequential: bool = False) -> Future[Any]:
        """Run `start(engine, done)` on the worker thread; the future gets what `done` receives (an
        exception is set as the future's exception). `sequential=True` for work that calls
        `engine.generate` itself: it starts only between drains, never inside one."""
        fut: Future[Any] = Future()
        with self._cond:
            if self._closing:
                raise WorkerClosed("the engine worker is closing; no new work is accepted")
            if self.max_pending is not None and len(self._live) >= self.max_pending:
                raise WorkerBusy(f"{len(self._live)} requests are already queued (limit {self.max_pending})")
            self._live.add(fut)
            self._inbox.append(_Work(start, fut, sequential))
            self._cond.notify()
        fut.add_done_callback(self._forget)
        return fut

    def generate(
        self,
        messages: Sequence[Message],
        fmt: OutputFormat,
        options: DecodeOptions | None = None,
        cancel: threading.Event | None = None,
    ) -> Future[Generation]:
        """One request under `fmt`, decoded beside whatever else is in flight."""

        def start(engine: Engine, done: Callable[[Any], None]) -> None:
            engine.submit([(messages, fmt)], options, lambda gens: done(gens[0]), cancel=cancel)

        return self.call(start)

    def close(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting work; with `wait`, let what is in flight finish and the thread end."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if wait:
            self._thread.join(timeout)

    # ------------------------------------------------------------------------------ worker thread

    def _forget(self, fut: Future[Any]) -> None:
        with self._cond:
            self._live.discard(fut)

    def _take(self, sequential_ok: bool) -> list[_Work]:
        with self._cond:
            if sequential_ok:
                items = list(self._inbox)
                self._inbox.clear()
            else:
                items = [w for w in self._inbox if not w.sequential]
                keep = [w for w in self._inbox if w.sequential]
                self._inbox.clear()
                self._inbox.extend(keep)
        return items

    def _start(self, items: list[_Work]) -> None:
        for w in items:
            if w.future.done():  # cancelled by its caller before it started
                continue

            def done(result: Any, fut: Future[Any] = w.future) -> None:
                if fut.done():
                    return
                if isinstance(result, BaseException):
                    fut.set_exception(result)
                else:
                    fut.set_result(result)

            try:
                w.start(self.engine, done)
            except Exception as e:  # noqa: BLE001 - handed to the caller
                done(e)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._inbox and not self._closing:
                    self._cond.wait()
                if not self._inbox and self._closing:
                    return
            self._start(self._take(sequential_ok=True))
            try:
                self.engine.drain(poll=lambda: self._start(self._take(sequential_ok=False)))
            except Exception as e:  # the engine failed mid-drain: every unfinished request gets the error
                with self._cond:
                    live = list(self._live)
                for fut in live:
                    if not fut.done():
                        fut.set_exception(e)
