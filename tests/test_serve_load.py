"""`localjudge serve` under load: concurrent structured requests all answered and valid, a full queue
answering 429 while the server stays healthy, SIGTERM finishing what is in flight before exiting 0,
and a schema whose automaton would cost too much answered under llguidance."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from serve_support import assert_openai_error, healthy, post, start_server

from localjudge.formats import JSONSchemaFormat
from localjudge.formats.json_schema import validate

pytestmark = pytest.mark.system

SCHEMA = {
    "type": "object",
    "properties": {"rationale": {"type": "string"}, "result": {"enum": ["yes", "no"]}},
    "required": ["rationale", "result"],
    "additionalProperties": False,
}
RF = {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": SCHEMA, "strict": True}}


def ask(i: int) -> dict:
    return {
        "model": "smollm2-135m",
        "messages": [{"role": "user", "content": f"Is {i} an even number? Judge it."}],
        "response_format": RF,
    }


@pytest.mark.slow
def test_32_concurrent_json_schema_requests_all_answered_and_valid(judge_server):
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(lambda i: post(judge_server.url, ask(i)), range(32)))
    assert [s for s, _, _ in answers] == [200] * 32
    ids = set()
    for _, body, _ in answers:
        value = json.loads(body["choices"][0]["message"]["content"])
        assert validate(value, SCHEMA, SCHEMA) is None and body["choices"][0]["finish_reason"] == "stop"
        ids.add(body["id"])
    assert len(ids) == 32  # none lost, none answered twice


@pytest.mark.slow
def test_a_full_queue_answers_429_with_retry_after_and_the_server_stays_healthy(keyed_server):
    key = {"Authorization": "Bearer s3cret-key"}
    long = {"model": "smollm2-135m", "messages": [{"role": "user", "content": "Tell a story."}], "max_tokens": 60}
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda _: post(keyed_server.url, long, key), range(12)))
    codes = sorted(s for s, _, _ in answers)
    assert codes.count(200) >= 4 and codes.count(429) >= 1 and set(codes) <= {200, 429}
    for s, body, headers in answers:
        if s == 429:
            assert_openai_error(s, body, 429, "busy", code="rate_limit_exceeded")
            assert headers.get("retry-after") == "1"
    h = healthy(keyed_server.url, key)  # with --api-key, /health shows counters only to the key
    assert h["refused_busy"] == codes.count(429) and h["in_flight"] == 0 and h["errors"] == 0
    s, body, _ = post(keyed_server.url, {**long, "max_tokens": 2}, key)
    assert s == 200


@pytest.mark.slow
def test_sigterm_finishes_requests_in_flight_then_exits_0(_localjudge_home):
    server = start_server("--no-precompile")
    body = {"model": "smollm2-135m", "messages": [{"role": "user", "content": "Tell a long story."}], "max_tokens": 40}
    results: list = []
    t = threading.Thread(target=lambda: results.append(post(server.url, body)))
    t.start()
    deadline = time.monotonic() + 120
    while healthy(server.url)["in_flight"] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    code = server.stop()
    t.join(120)
    assert code == 0
    status, answer, _ = results[0]
    assert status == 200 and answer["usage"]["completion_tokens"] == 40 and answer["choices"][0]["finish_reason"] == "length"


@pytest.mark.slow
def test_a_schema_the_automaton_could_not_build_is_answered_validly_under_llguidance(judge_server):
    # under every static limit, but 14 free-form objects in a row made an automaton far too costly to build
    # (refused at the 20 s compile limit before issue 23); llguidance compiles it in milliseconds
    schema = {"type": "object", "properties": {f"k{i}": {"type": "object"} for i in range(14)}}
    JSONSchemaFormat(schema)  # passes the static checks
    rf = {"type": "json_schema", "json_schema": {"name": "Huge", "schema": schema}}
    body = {"model": "smollm2-135m", "messages": [{"role": "user", "content": "hi"}], "response_format": rf, "max_tokens": 120}
    s, b, _ = post(judge_server.url, body)
    assert s == 200 and b["choices"][0]["finish_reason"] == "stop"
    assert validate(json.loads(b["choices"][0]["message"]["content"]), schema, schema) is None
    assert healthy(judge_server.url)["errors"] == 0
    s, _, _ = post(judge_server.url, {**ask(1), "max_tokens": 40})
    assert s == 200


@pytest.mark.slow
def test_the_compile_sandbox_refuses_an_automaton_over_its_memory_limit(engine, tmp_path, monkeypatch):
    from localjudge.constraints.sandbox import CompileLimits, CompileRefused, compile_in_child, save_vocab

    monkeypatch.setenv("LOCALJUDGE_HOME", str(tmp_path))  # an empty automaton cache

    vocab_path = save_vocab(engine.vocab, tmp_path)
    big = JSONSchemaFormat({"type": "object"}).regex()  # ~550 MB to build
    small = JSONSchemaFormat(SCHEMA).regex()
    limits = CompileLimits(seconds=300, memory_bytes=400 << 20)
    with pytest.raises(CompileRefused, match="400 MB of memory"):
        asyncio.run(compile_in_child(big, vocab_path, engine.vocab.hash, limits))
    asyncio.run(compile_in_child(small, vocab_path, engine.vocab.hash, limits))  # a normal schema fits
