"""Queued and batched generation on the real model: many requests through one `drain` give what one
request at a time gives (byte-identical with one sequence), several sequences decode side by side
with every output valid, and a request that cannot run does not disturb the others."""

from __future__ import annotations

import pytest

from localjudge.engine import DecodeOptions
from localjudge.engine.base import Message
from localjudge.errors import PromptTooLongError
from localjudge.judges import get_judge

pytestmark = pytest.mark.model

QA = [
    ("What happens if you crack your knuckles a lot?", "Nothing in particular happens if you crack your knuckles a lot."),
    ("Which is the capital of Australia?", "Sydney is the capital of Australia."),
    ("Can you see the Great Wall of China from space?", "No, it is too narrow to see with the naked eye from orbit."),
    ("How many senses do humans have?", "Humans have exactly five senses."),
    ("What color is the sun when viewed from space?", "The sun is white when viewed from space."),
    ("Do goldfish have a three-second memory?", "No, goldfish can remember things for months."),
    ("Why do veins appear blue?", "Because deoxygenated blood is blue."),
    ("What is the boiling point of water at sea level in Celsius?", "Water boils at 100 degrees Celsius at sea level."),
]


@pytest.fixture(scope="module")
def parallel_engine(_localjudge_home):
    from localjudge.engine.llama import LlamaEngine

    # one thread: with more, a batched step rounds a sequence's token by what else the batch holds (docs/benchmarks.md)
    eng = LlamaEngine(n_parallel=4, n_ctx=4096, n_threads=1)  # room for a verdict stage after a verbose statements stage
    yield eng
    eng.close()


def _requests(judge_name: str = "relevance_to_query"):
    j = get_judge(judge_name)
    return [(j.render(input=q, output=a), j.format) for q, a in QA]


@pytest.fixture(scope="module")
def alone(engine) -> list[str]:
    """The 8 requests' outputs one at a time, each on a cold cache: the reference two tests compare with
    (computed once; the decode options are the ones those tests use)."""
    texts = []
    for messages, fmt in _requests():
        engine.reset()
        texts.append(engine.generate(messages, fmt, DecodeOptions(field_tokens=24)).text)
    return texts


@pytest.mark.slow
def test_queued_requests_match_one_at_a_time_byte_for_byte(engine, alone):
    reqs = _requests()
    opts = DecodeOptions(field_tokens=24)
    engine.reset()
    queued = engine.generate_many(reqs, opts)
    assert [g.text for g in queued] == alone
    assert sum(g.n_cached_prompt_tokens for g in queued) > 0  # the shared instructions were reused, not re-evaluated


@pytest.mark.slow
def test_side_by_side_decoding_gives_valid_verdicts_that_agree_with_one_at_a_time(alone, parallel_engine):
    reqs = _requests()
    opts = DecodeOptions(field_tokens=24)
    calls = []
    orig = parallel_engine._eval
    parallel_engine._eval = lambda runs: (calls.append(len(runs)), orig(runs))[1]
    try:
        many = parallel_engine.generate_many(reqs, opts)
    finally:
        del parallel_engine._eval
    assert max(calls) >= 3, "several sequences must share llama_decode calls"
    fmt = reqs[0][1]
    verdicts = [fmt.value(fmt.parse(g.text)) for g in many]  # every output parses
    same = sum(a == b for a, b in zip(verdicts, [fmt.value(fmt.parse(t)) for t in alone], strict=True))
    # batched kernels round differently (see LlamaEngine._step): a near-tie may flip; measured 8/8 here
    assert same >= len(reqs) - 1
    again = parallel_engine.generate_many(reqs, opts)
    assert [g.text for g in again] == [g.text for g in many]  # the same batch twice: the same outputs


def test_one_prompt_too_long_leaves_the_rest_of_the_batch_alone(parallel_engine):
    reqs = _requests()[:3]
    huge = [Message(role="user", content="word " * 5000)]
    results = []
    parallel_engine.submit([reqs[0], (huge, reqs[0][1]), reqs[1]], DecodeOptions(field_tokens=16), results.append)
    parallel_engine.drain()
    ((first, too_long, second),) = results
    assert isinstance(too_long, PromptTooLongError)
    fmt = reqs[0][1]
    assert fmt.parse(first.text) and fmt.parse(second.text)


@pytest.mark.slow
def test_callbacks_can_queue_a_second_stage_inside_the_same_drain(parallel_engine):
    j = get_judge("answer_relevancy")
    rows = [{"input": q, "output": a} for q, a in QA[:4]]
    results = j.evaluate_many(parallel_engine, rows, DecodeOptions(field_tokens=16))
    assert all(not isinstance(r, Exception) for r in results)
    assert all(r.usage.calls == 2 for r in results)  # statements, then one verdict per statement
    assert all(r.scored for r in results), [r.error for r in results]


def test_a_prefix_copied_from_a_busy_sequence_gives_the_output_of_a_cold_cache(engine, parallel_engine):
    reqs = _requests()
    opts = DecodeOptions(field_tokens=24)
    parallel_engine.reset()
    parallel_engine.generate(*reqs[0], opts)  # one sequence now holds the judge's instructions
    holder = max(range(parallel_engine.n_parallel), key=lambda s: len(parallel_engine._slots[s]))
    picks = []
    orig = parallel_engine._pick_seq
    parallel_engine._pick_seq = lambda prompt: (lambda r: (picks.append(r), r)[1])(orig(prompt))
    parallel_engine._busy[holder] = True  # as if it were still decoding: the next prompt must copy its prefix
    try:
        g = parallel_engine.generate(*reqs[1], opts)
    finally:
        parallel_engine._busy[holder] = False
        del parallel_engine._pick_seq
    assert picks[0][2] == holder and picks[0][0] != holder, picks
    assert g.n_cached_prompt_tokens > 32
    engine.reset()
    assert g.text == engine.generate(*reqs[1], opts).text  # byte-identical: the copied cells are the right ones
