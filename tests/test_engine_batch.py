"""The drain step the local runner and Ray workers share (judges/batch.py): an engine that breaks mid-batch
gives every unfinished row its error, once and in order; a fatal error propagates."""

from __future__ import annotations

import pytest
from runner_support import scripted_engine

from localjudge.engine.base import DecodeOptions
from localjudge.errors import ModelError
from localjudge.judges import get_judge
from localjudge.judges.batch import EngineBatch


def breaking_engine(after: int, error: Exception):
    """A scripted engine whose drain decodes `after` requests, then raises `error`."""
    eng = scripted_engine()
    plain = type(eng).drain

    def drain(poll=None):
        for _ in range(after):
            if eng._pending:
                head = eng._pending.popleft()
                keep = list(eng._pending)
                eng._pending.clear()
                eng._pending.append(head)
                plain(eng)
                eng._pending.extend(keep)
        raise error

    eng.drain = drain
    return eng


def rows(n: int) -> list[dict]:
    return [{"input": f"question {i}", "output": "yes"} for i in range(n)]


def test_a_drain_that_breaks_reports_every_unfinished_row_once_in_order():
    got: list[tuple[int, object]] = []
    batch = EngineBatch(
        breaking_engine(2, RuntimeError("GPU fell off")), DecodeOptions(), "scripted", lambda k, r: got.append((k, r))
    )
    batch.submit(get_judge("relevance_to_query"), rows(3))
    batch.submit(get_judge("relevance_to_query"), rows(2))
    batch.drain(fatal=(ModelError,))
    assert [k for k, _ in got] == [0, 1, 2, 3, 4] and batch.unreported() == []
    assert all("GPU fell off" not in str(r) for _, r in got[:2])  # decoded before the engine broke
    assert all(isinstance(r, RuntimeError) and "GPU fell off" in str(r) for _, r in got[2:])


def test_a_fatal_drain_error_propagates_and_leaves_the_rest_unreported():
    batch = EngineBatch(breaking_engine(1, ModelError("model file vanished")), DecodeOptions(), "scripted", lambda k, r: None)
    batch.submit(get_judge("relevance_to_query"), rows(3))
    with pytest.raises(ModelError, match="vanished"):
        batch.drain(fatal=(ModelError,))
    assert batch.unreported() == [1, 2]
