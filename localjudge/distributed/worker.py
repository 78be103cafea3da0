"""What runs inside one Ray worker (an actor): one model, loaded once and verified, judging batches.

`JudgeWorker` is a plain class; ray_executor.py turns it into an actor with `ray.remote`. The model
is loaded through the backend seam (`ModelSpec.ref().engine()`: the run's model, pickled) on the first batch, after the
worker checked that the model it resolves on its node has the digest the driver recorded; a missing
model or a different file is a `ModelError` naming the node. Judges arrive pickled once per run and
are kept; a batch is one judge's rows, submitted together and drained once through the local
runner's own step (`judges.batch.EngineBatch`). Each row's result goes back as a `JudgeResult` or as a packed exception.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from ..engine.base import DecodeOptions, Engine
from ..engine.model_spec import ModelSpec
from ..errors import ConstraintError, ModelError
from ..judges.batch import EngineBatch
from ..judges.protocol import JudgeProtocol
from ..store.results import JudgeResult


def node_name() -> str:
    """This process's host name and IP, as messages name a node ("host (10.0.0.5)")."""
    host = socket.gethostname()
    try:
        import ray

        ip = ray.util.get_node_ip_address()
    except Exception:  # not inside Ray
        return host
    return f"{host} ({ip})"


def pack_exception(e: BaseException) -> tuple[Any, ...]:
    """An exception as (class, args, attributes): exceptions whose __init__ takes other arguments
    than their message (ParseError) cannot be unpickled as they are; this form always can."""
    from ray import cloudpickle

    packed = (type(e), e.args, dict(getattr(e, "__dict__", {})))
    try:
        cloudpickle.dumps(packed)
    except Exception:
        return (Exception, (f"{type(e).__name__}: {e}",), {})
    return packed


def unpack_exception(packed: tuple[Any, ...]) -> Exception:
    """The exception `pack_exception` described, rebuilt without calling its __init__."""
    cls, args, attrs = packed
    e = cls.__new__(cls, *args)
    e.args = args
    e.__dict__.update(attrs)
    return e


class JudgeWorker:
    """One Ray worker: the run's `model` (its spec and backend options, as data), which must have digest `digest`."""

    def __init__(self, model: ModelSpec, digest: str, model_id: str):
        self.model, self.digest, self.model_id = model, digest, model_id
        self._engine: Engine | None = None
        self._judges: dict[str, JudgeProtocol] = {}

    def where(self) -> dict[str, Any]:
        """The node and process this worker runs in."""
        return {"node": node_name(), "pid": os.getpid()}

    def load(self) -> dict[str, Any]:
        """Load (and verify) the model now; returns `where()`."""
        self._load()
        return self.where()

    def _load(self) -> Engine:
        if self._engine is not None:
            return self._engine
        node = node_name()
        try:
            ref = self.model.ref()
            digest = ref.identity().digest  # resolves the model on this node, without loading it
        except ModelError as e:
            raise type(e)(f"Ray worker on node {node}: {e}") from None
        if digest != self.digest:
            raise ModelError(
                f"Ray worker on node {node}: model {self.model_id!r} there has digest {digest[:16]}…, the driver "
                f"recorded {self.digest[:16]}…; put the same model file on every node (a shared filesystem, or "
                "install it on each node) and run again"
            )
        try:
            self._engine = ref.engine()
        except ModelError as e:
            raise type(e)(f"Ray worker on node {node}: {e}") from None
        return self._engine

    def judge(
        self, key: str, boxed: Sequence[Any], rows: Sequence[Mapping[str, Any]], options: DecodeOptions, model_id: str
    ) -> list[JudgeResult | tuple[Any, ...]]:
        """Judge `rows` with the judge `key` (pickled in `boxed[0]`, an object ref fetched once per worker);
        each row's `JudgeResult`, or its exception packed with `pack_exception`."""
        engine = self._load()
        judge = self._judges.get(key)
        if judge is None:
            import ray

            judge = ray.get(boxed[0]) if isinstance(boxed[0], ray.ObjectRef) else boxed[0]
            self._judges[key] = judge
        results: list[JudgeResult | BaseException | None] = [None] * len(rows)

        def on_result(i: int, r: JudgeResult | Exception) -> None:
            results[i] = r

        # the local runner's step: submit, drain once; a failure mid-batch is every unfinished row's error
        batch = EngineBatch(engine, options, model_id, on_result)
        batch.submit(judge, rows)
        batch.drain(fatal=(ModelError, ConstraintError))
        out: list[JudgeResult | tuple[Any, ...]] = []
        for r in results:
            if r is None:  # a judge that never reported a row: an error for that row, never a silent gap
                r = RuntimeError(f"judge {judge.name!r} gave no result for a row")
            out.append(r if isinstance(r, JudgeResult) else pack_exception(r))
        return out
