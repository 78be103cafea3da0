"""`RayExecutor`: the runner's pending cells judged by Ray actors, results committed by the driver.

    localjudge run data.jsonl -j correctness --engine ray [--ray-address auto|HOST:PORT|ray://HOST:PORT]
                                             [--workers N] [--option n_threads=K]
    evaluate(data, judges, executor=RayExecutor(address="auto", workers=4))     # or executor="ray"

The driver (this process) keeps everything a local run has: it reads the data, prepares every cell,
commits stored / cached / bad cells without the model, and writes every result to the run's store
the moment its batch comes back, so progress, resume, the cache and the exports are those of a local
run. Only the cells that need the model travel: in batches of one judge's rows (sized for the
engine's own batching), at most `in_flight` batches queued per worker, to Ray core actors
(`worker.JudgeWorker`), each holding one model loaded once and checked against the driver's digest.

Faults: a worker that dies mid-batch (killed, out of memory, its node lost) loses only that batch's
in-flight work, which nothing has committed; the batch goes to another worker (Ray restarts the dead
one), up to `max_attempts` times, after which its rows are stored as errors without a cache key (the
next run retries them). A driver killed mid-run takes its actors with it (they belong to its Ray
job); running the same command again resumes from the store. An address nobody answers on is an
`InputError` (exit 2) before the run writes anything.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..engine.backends import ModelRef
from ..engine.base import DecodeOptions, ModelIdentity
from ..engine.model_spec import ModelSpec
from ..errors import InputError, LocalJudgeError, ModelError
from ..store.results import JudgeResult
from .worker import JudgeWorker, pack_exception, unpack_exception

INSTALL_HINT = "--engine ray needs Ray, which is not installed: pip install 'localjudge[ray]'"
PROBE_TIMEOUT_S = 5.0  # an explicit address must accept a TCP connection within this (Ray itself retries for minutes)


class WorkerLostError(Exception):
    """A batch whose Ray worker died `max_attempts` times: its rows are stored as errors (retried next run)."""


def import_ray() -> Any:
    """The `ray` module, or an `InputError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return ray


def split_address(address: str) -> tuple[str, int] | None:
    """(host, port) of "HOST:PORT", "ray://HOST:PORT" or "[IPv6]:PORT"; None for "auto" / "local"."""
    if address in ("auto", "local"):
        return None
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rstrip("/").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InputError(f"--ray-address {address!r}: give auto, HOST:PORT (the head's GCS port) or ray://HOST:PORT (Ray Client)")
    return host.strip("[]"), int(port)


def probe(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Fail fast, with an `InputError`, when nothing accepts a connection at an explicit address."""
    hp = split_address(address)
    if hp is None:
        return
    try:
        socket.create_connection(hp, timeout=timeout_s).close()
    except OSError as e:
        why = "no answer" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise InputError(
            f"--ray-address {address}: cannot reach a Ray cluster at {hp[0]}:{hp[1]} ({why}); start one with "
            "`ray start --head` on that machine or fix the address"
        ) from None


@dataclass
class _Batch:
    key: str
    cells: list[Any]
    attempts: int = 0
    failed_on: set[int] = field(default_factory=set)


class RayExecutor:
    """Judge a run's pending cells on a Ray cluster; see the module docstring.

    `address`: None (RAY_ADDRESS, else a new local cluster), "auto" (the cluster on this machine),
    "HOST:PORT" or "ray://HOST:PORT". `workers`: actors (default: the cluster's CPUs // CPUs per
    worker); each takes `n_threads` CPUs (default 1; `--option n_threads=K`). `batch_size`: rows per
    batch (default max(4, 2 x n_parallel)). `init_options`: extra `ray.init` arguments. When Ray is
    already initialised in this process, that connection is used as it is (an explicit address must
    still answer)."""

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        *,
        batch_size: int | None = None,
        in_flight: int = 2,
        max_attempts: int = 3,
        start_timeout_s: float = 300.0,
        init_options: dict[str, Any] | None = None,
    ):
        if workers is not None and workers < 1:
            raise InputError(f"--workers {workers}: give at least 1")
        if batch_size is not None and batch_size < 1:
            raise InputError(f"batch_size {batch_size}: give at least 1")
        if address is not None:
            split_address(address)  # a malformed address fails here
        self.address, self.workers, self.batch_size = address, workers, batch_size
        self.in_flight, self.max_attempts, self.start_timeout_s = max(1, in_flight), max(1, max_attempts), start_timeout_s
        self.init_options = dict(init_options or {})
        # workers started, batches and cells sent (retries included), batches retried, worker deaths seen
        self.stats: dict[str, int] = {"workers": 0, "batches": 0, "cells": 0, "retried_batches": 0, "worker_failures": 0}
        self.nodes: list[dict[str, Any]] = []  # where each worker runs: {"node": ..., "pid": ...}
        self._actors: list[Any] = []
        self._keys: dict[int, str] = {}  # id(judge) -> its key in this run
        self._refs: dict[str, Any] = {}  # key -> object ref of the pickled judge
        self._model: tuple[ModelSpec, str, str] | None = None
        self._n_workers = 1  # sized by open()

    # ------------------------------------------------------------------------------- configuration

    def open(self, model: ModelRef, identity: ModelIdentity) -> None:
        """Join (or start) the cluster and size the workers; an unreachable address, no Ray, or more
        workers than the cluster has CPUs for: `InputError`, before anything is written."""
        if model.backend is None:
            raise InputError("--engine ray: workers load the model themselves; give a model spec, not a loaded engine")
        ray = import_ray()
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        if address:
            probe(address)  # Ray itself would retry an unreachable address for minutes
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # localjudge runs offline: no usage reports
            kw: dict[str, Any] = {"logging_level": logging.WARNING, **self.init_options}
            if address is None:
                kw.setdefault("include_dashboard", False)
            on_term = signal.getsignal(signal.SIGTERM)
            try:
                ray.init(address=self.address, **kw)
            except (ConnectionError, ValueError, RuntimeError) as e:
                where = (
                    f"--ray-address {address}: cannot join the Ray cluster there"
                    if address
                    else "cannot start a local Ray cluster"
                )
                hint = "check the address" if address else "see Ray's message"
                if address and address not in ("auto", "local") and not os.environ.get("RAY_AUTH_MODE"):
                    hint += (
                        "; a cluster with token authentication (Ray's default) needs RAY_AUTH_MODE=token here, with its "
                        "token in RAY_AUTH_TOKEN or ~/.ray/auth_token"
                    )
                raise InputError(f"{where} ({str(e).splitlines()[0]}); {hint}") from None
            finally:  # ray.init makes SIGTERM exit at once; the runner's own handling (stop, export, exit 143) stays
                if on_term is not None and threading.current_thread() is threading.main_thread():
                    signal.signal(signal.SIGTERM, on_term)
        res = model.backend.worker_resources(model.options)
        threads = res.cpus
        cpus = int(ray.cluster_resources().get("CPU", 0))
        workers = self.workers or max(1, cpus // threads)
        if workers * threads > cpus:
            raise InputError(
                f"--workers {workers} x {threads} thread(s) each needs {workers * threads} CPUs; the Ray cluster has {cpus}: "
                "lower --workers or --option n_threads"
            )
        self._threads, self._n_workers = threads, workers
        if self.batch_size is None:
            self.batch_size = max(4, 2 * res.parallel)
        self._model = (ModelSpec(spec=model.spec, options=res.options), identity.digest, identity.model_id)

    @property
    def n_workers(self) -> int:
        """How many actors judge for this executor: sized by `open` from the cluster's CPUs (1 before)."""
        return self._n_workers

    def _start(self) -> None:
        """Start the actors (the model loads on each one's first batch) and learn where they run."""
        ray = import_ray()
        assert self._model is not None, "open() first"
        cls = ray.remote(JudgeWorker).options(
            num_cpus=self._threads, max_restarts=-1, max_task_retries=0, scheduling_strategy="SPREAD"
        )
        self._actors = [cls.remote(*self._model) for _ in range(self._n_workers)]
        self.stats["workers"] = len(self._actors)
        try:
            self.nodes = ray.get([a.where.remote() for a in self._actors], timeout=self.start_timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise ModelError(
                f"{len(self._actors)} Ray workers did not start within {self.start_timeout_s:.0f} s (busy CPUs? see "
                "`ray status`); lower --workers or free the cluster, then run again to resume"
            ) from None
        except ray.exceptions.RayActorError as e:
            raise ModelError(
                f"Ray workers could not start ({str(e).splitlines()[0]}); check that every node has this localjudge "
                "installed and that RAY_AUTH_MODE here matches the cluster's, then run again to resume"
            ) from None

    def _key(self, judge: Any) -> str:
        """The judge's key in this run; the judge is pickled into the object store once."""
        key = self._keys.get(id(judge))
        if key is None:
            ray = import_ray()
            try:
                ref = ray.put(judge)
            except Exception as e:
                raise InputError(
                    f"judge {judge.name!r} cannot be sent to Ray workers ({type(e).__name__}: {e}); define its class in "
                    "a module the workers can import"
                ) from None
            key = f"{len(self._keys)}:{judge.name}"
            self._keys[id(judge)], self._refs[key] = key, ref
        return key

    # ------------------------------------------------------------------------------------ judging

    def _batches(self, cells: Iterator[Any]) -> Iterator[_Batch]:
        batch: _Batch | None = None
        for cell in cells:
            key = self._key(cell.judge)
            if batch is not None and (batch.key != key or len(batch.cells) >= (self.batch_size or 4)):
                yield batch
                batch = None
            if batch is None:
                batch = _Batch(key, [])
            batch.cells.append(cell)
        if batch is not None:
            yield batch

    def _pick(self, batch: _Batch, load: list[int]) -> int | None:
        """The least loaded worker with a free slot, not one this batch failed on while another exists."""
        free = [i for i in range(len(load)) if load[i] < self.in_flight]
        fresh = [i for i in free if i not in batch.failed_on]
        if fresh:
            return min(fresh, key=lambda i: load[i])
        if not free or any(i not in batch.failed_on for i in range(len(load))):
            return None  # wait for a slot (on a worker this batch has not failed on)
        return min(free, key=lambda i: load[i])

    def judge(self, cells: Iterator[Any], options: DecodeOptions, model_id: str) -> Iterator[tuple[Any, JudgeResult | Exception]]:
        """Send batches of pending cells to the workers; yield each (cell, result) as its batch returns."""
        ray = import_ray()
        source = self._batches(cells)
        queue: deque[_Batch] = deque()
        inflight: dict[Any, tuple[_Batch, int]] = {}
        load: list[int] = []
        more = True
        while True:
            while True:  # fill every free slot
                if not queue and more:
                    nxt = next(source, None)
                    more = nxt is not None
                    if nxt is not None:
                        queue.append(nxt)
                if not queue:
                    break
                if not self._actors:
                    self._start()
                    load = [0] * len(self._actors)
                i = self._pick(queue[0], load)
                if i is None:
                    break
                b = queue.popleft()
                ref = self._actors[i].judge.remote(b.key, [self._refs[b.key]], [c.values for c in b.cells], options, model_id)
                inflight[ref] = (b, i)
                load[i] += 1
                self.stats["batches"] += 1
                self.stats["cells"] += len(b.cells)
            if not inflight:
                return
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)  # wakes up for Ctrl-C / SIGTERM
            if not ready:
                continue
            b, i = inflight.pop(ready[0])
            load[i] -= 1
            try:
                out = ray.get(ready[0])
            except ray.exceptions.RayActorError as e:  # the worker died (killed, OOM, node lost): nothing was committed
                self.stats["worker_failures"] += 1
                b.attempts += 1
                b.failed_on.add(i)
                if b.attempts < self.max_attempts:
                    self.stats["retried_batches"] += 1
                    queue.appendleft(b)
                    continue
                lost = WorkerLostError(f"its Ray worker died {b.attempts} times ({str(e).splitlines()[0][:200]})")
                out = [pack_exception(lost)] * len(b.cells)
            except ray.exceptions.RayTaskError as e:  # the model cannot be used on a worker: stop the run
                cause = getattr(e, "cause", None)
                if isinstance(cause, LocalJudgeError):
                    raise cause from None
                raise ModelError(f"a Ray worker failed: {type(cause).__name__}: {cause}") from None
            for cell, r in zip(b.cells, out, strict=True):
                yield cell, r if isinstance(r, JudgeResult) else unpack_exception(r)

    def close(self) -> None:
        """Stop this run's workers (the Ray connection stays for the next run in this process)."""
        if not self._actors:
            return
        ray = import_ray()
        for a in self._actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # already gone
                pass
        self._actors = []
        self._keys, self._refs = {}, {}
