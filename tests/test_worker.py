"""EngineWorker: many threads share one engine through one worker thread; bounded queue, cancellation,
a clean close; on the real model the results equal one-at-a-time generation byte for byte."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from localjudge.engine import DecodeOptions, Message, ScriptedEngine
from localjudge.engine.base import GenerationCancelled
from localjudge.engine.worker import EngineWorker, WorkerBusy, WorkerClosed
from localjudge.formats import ScoreLines, YesNoJSON
from localjudge.judges import get_judge


def _msgs(q: str) -> list[Message]:
    return [Message(role="user", content=f"Is this answer correct? {q}")]


def test_many_threads_get_their_own_answers_from_one_scripted_engine():
    eng = ScriptedEngine(lambda m, f: json.dumps({"rationale": m[-1].content, "result": "yes"}))
    worker = EngineWorker(eng)
    try:
        with ThreadPoolExecutor(8) as pool:
            futs = list(pool.map(lambda i: worker.generate(_msgs(str(i)), YesNoJSON()), range(40)))
        texts = [json.loads(f.result(timeout=30).text)["rationale"] for f in futs]
        assert texts == [_msgs(str(i))[0].content for i in range(40)] and eng.calls == 40
    finally:
        worker.close()


def test_a_full_queue_refuses_at_once_and_the_worker_keeps_serving():
    gate = threading.Event()

    def slow(m, f):
        gate.wait(10)
        return "score: 3\njustification: ok"

    worker = EngineWorker(ScriptedEngine(slow), max_pending=2)
    try:
        a, b = worker.generate(_msgs("a"), ScoreLines()), worker.generate(_msgs("b"), ScoreLines())
        with pytest.raises(WorkerBusy, match="limit 2"):
            worker.generate(_msgs("c"), ScoreLines())
        gate.set()
        assert a.result(10).text.startswith("score: 3") and b.result(10).text.startswith("score: 3")
        assert worker.generate(_msgs("d"), ScoreLines()).result(10).text.startswith("score: 3")
    finally:
        worker.close()


def test_close_finishes_work_in_flight_then_refuses_new_work():
    eng = ScriptedEngine(lambda m, f: (time.sleep(0.05), "score: 2\njustification: x")[1])
    worker = EngineWorker(eng)
    futs = [worker.generate(_msgs(str(i)), ScoreLines()) for i in range(5)]
    worker.close(wait=True, timeout=30)
    assert all(f.result(0).text.startswith("score: 2") for f in futs)
    with pytest.raises(WorkerClosed):
        worker.generate(_msgs("late"), ScoreLines())


def test_a_request_cancelled_before_it_starts_is_dropped():
    gate = threading.Event()
    eng = ScriptedEngine(lambda m, f: (gate.wait(10), "score: 1\njustification: x")[1])
    worker = EngineWorker(eng)
    try:
        first = worker.generate(_msgs("first"), ScoreLines())
        cancel = threading.Event()
        cancel.set()
        second = worker.generate(_msgs("second"), ScoreLines(), cancel=cancel)
        gate.set()
        assert first.result(10).text.startswith("score: 1")
        with pytest.raises(GenerationCancelled):
            second.result(10)
        assert eng.calls == 1
    finally:
        worker.close()


@pytest.mark.system
@pytest.mark.slow
def test_real_model_concurrent_requests_equal_one_at_a_time(engine):
    judge = get_judge("relevance_to_query")
    rows = [
        ("What is the capital of France?", "Paris."),
        ("How many legs has a spider?", "Eight."),
        ("Who wrote Hamlet?", "Shakespeare."),
        ("What is 2+2?", "Five."),
    ]
    reqs = [judge.render(input=q, output=a) for q, a in rows]
    short = DecodeOptions(field_tokens=24)  # the rationale's length is not the point: equality is
    alone = [engine.generate(m, judge.output_formats[0], short).text for m in reqs]
    worker = EngineWorker(engine)
    try:
        with ThreadPoolExecutor(4) as pool:
            futs = list(pool.map(lambda m: worker.generate(m, judge.output_formats[0], short), reqs))
        assert [f.result(120).text for f in futs] == alone
        jf = worker.call(
            lambda eng, done: judge.submit_many(
                eng, [{"input": rows[0][0], "output": rows[0][1]}], short, lambda i, r: done(r), eng.model_id
            )
        )
        assert jf.result(120).raw_text == alone[0]
    finally:
        worker.close()


@pytest.mark.system
def test_real_model_cancel_mid_generation_stops_early_and_frees_the_engine(engine):
    fmt = ScoreLines(field_tokens=400)
    msgs = [Message(role="user", content="Rate this essay from 1 to 5 and justify at length: " + "words " * 50)]
    worker = EngineWorker(engine)
    try:
        cancel = threading.Event()
        fut = worker.generate(msgs, fmt, cancel=cancel)
        time.sleep(0.5)
        cancel.set()
        gen = fut.result(120)
        assert gen.stop_reason in ("cancelled", "final", "eos")  # it may have finished before the cancel landed
        if gen.stop_reason == "cancelled":
            assert gen.n_output_tokens < fmt.max_tokens()
        after = worker.generate(_msgs("2+2=4"), YesNoJSON()).result(120)
        assert after.stop_reason in ("final", "eos") and json.loads(after.text)["result"] in ("yes", "no")
    finally:
        worker.close()
