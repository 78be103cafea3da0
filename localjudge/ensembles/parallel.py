"""Panel members side by side on a Ray cluster: each member gets its own share of the workers and its own driver
thread; their results go to one run of one store (SQLite WAL: concurrent writers wait for each other).

The cluster's workers (as `--workers`, or CPUs / n_threads) are split between the members that run at once: with
W workers and M members, min(M, W) members run together with W // min(M, W) workers each, the rest as those finish.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, StorageError
from ..store.db import Store

if TYPE_CHECKING:
    from ..engine.model_spec import ModelSpec
    from ..run.types import RunResult


def new_run_id(out: Any) -> str:
    """The run all members write to: the run directory's run, or a new run of the shared store."""
    from ..paths import shared_store

    if out is None:
        with Store(shared_store()) as st:
            return st.new_run()
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise InputError(f"--out {str(p)!r} is a file; give a directory for the run")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StorageError(f"cannot create the run directory {str(p)!r} ({e.strerror or e}); choose a writable --out") from None
    with Store(p / "results.sqlite") as st:
        return st.run_for_dir()


def run_members_on_ray(
    executor: Any,
    n_members: int,
    first: ModelSpec,
    run_member: Callable[[int, Any], RunResult],
) -> tuple[list[RunResult], dict[str, int]]:
    """`run_member(i, executor_i)` for each of the `n_members` members, min(M, W) at a time, each with its share of
    the workers (the cluster is sized with the `first` member's model); returns the results in member order and
    {"side_by_side": members at once, "workers_each": their workers}."""
    from ..distributed.ray_executor import RayExecutor

    if not isinstance(executor, (str, RayExecutor)) or (isinstance(executor, str) and executor != "ray"):
        raise InputError("a panel runs its members side by side on --engine ray only; use 'local' or 'ray'")
    address = None if isinstance(executor, str) else executor.address
    workers = None if isinstance(executor, str) else executor.workers
    probe = RayExecutor(address=address, workers=workers)
    ref = first.ref()
    probe.open(ref, ref.identity())  # joins (or starts) the cluster here, in the main thread, and sizes the workers
    total = probe.n_workers
    probe.close()
    together = max(1, min(n_members, total))
    share = max(1, total // together)
    with ThreadPoolExecutor(max_workers=together, thread_name_prefix="panel-member") as pool:
        futures = [pool.submit(run_member, i, RayExecutor(address=address, workers=share)) for i in range(n_members)]
        return [f.result() for f in futures], {"side_by_side": together, "workers_each": share}
