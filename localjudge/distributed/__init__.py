"""Running a batch somewhere else than this process: the executor seam and the Ray executor.

    from localjudge import evaluate
    from localjudge.distributed import RayExecutor
    evaluate("data.jsonl", ["correctness"], out="runs/x", executor=RayExecutor(address="auto", workers=4))

Nothing here imports Ray until a `RayExecutor` is opened.
"""

from __future__ import annotations

from .base import Executor, PendingCell
from .ray_executor import RayExecutor, WorkerLostError

__all__ = ["Executor", "PendingCell", "RayExecutor", "WorkerLostError"]
