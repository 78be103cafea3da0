"""`localjudge serve` under bad input: every bad request is an OpenAI-shaped 4xx naming what is wrong,
a client that goes away cancels its generation, a wrong or missing key is a 401, and the server keeps
serving throughout (never a 500 for bad input).

What needs no process runs on serve's app in this process (`judge_app`, `keyed_app`: the app the CLI builds with
the same flags, the default model loaded here): `model` tier, or `system` where a client schema is sent (the app's
compile guard reads it in a child process, serve/core/compile_guard.py). A client hanging up its socket and a port
already taken are shown by a real server (`judge_server`)."""

from __future__ import annotations

import json
import random
import socket
import subprocess
import time
import urllib.parse

import pytest
from click.testing import CliRunner
from serve_support import CLI, assert_openai_error, get, healthy, post

from localjudge.cli import main

MSG = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]


@pytest.mark.model
def test_malformed_json_is_a_400(judge_app):
    s, b, _ = post(judge_app, b'{"model": "smollm2-135m", "messages": [')
    assert_openai_error(s, b, 400, "not valid JSON")


@pytest.mark.model
def test_unknown_model_is_a_404_naming_the_served_one(judge_app):
    s, b, _ = post(judge_app, {"model": "gpt-4o", "messages": MSG})
    assert_openai_error(s, b, 404, "'gpt-4o' does not exist", "smollm2-135m", param="model", code="model_not_found")


@pytest.mark.system
@pytest.mark.parametrize(
    ("schema", "feature"),
    [
        # pattern, patternProperties and recursive $ref are honoured since llguidance compiles client schemas (issue 23)
        # uniqueItems, not, if/then, dependencies: answered when an answer validates (issue 32), else a 400 naming them
        ({"type": "array", "items": {"const": "x"}, "minItems": 2, "uniqueItems": True}, "uniqueItems"),
        ({"type": "string", "not": {"type": "string"}}, "`not`"),
        # a format llguidance does not constrain is an annotation now (JSON Schema's default), not a 400
        ({"oneOf": [{"type": "object"}, {"type": "object", "properties": {"a": {"type": "string"}}}]}, "use anyOf"),
        ({"enum": list(range(5000))}, "enum"),
    ],
)
def test_a_schema_feature_that_cannot_be_honoured_is_a_400_naming_it(judge_app, schema, feature):
    rf = {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}
    s, b, _ = post(judge_app, {"model": "smollm2-135m", "messages": MSG, "response_format": rf})
    assert_openai_error(s, b, 400, feature, param="response_format")


@pytest.mark.model
def test_a_prompt_longer_than_the_context_is_context_length_exceeded(judge_app):
    long = [{"role": "user", "content": "word " * 6000}]
    s, b, _ = post(judge_app, {"model": "smollm2-135m", "messages": long})
    assert_openai_error(s, b, 400, "context is 4096 tokens", param="messages", code="context_length_exceeded")
    s, b, _ = post(judge_app, {"model": "smollm2-135m", "messages": MSG, "max_tokens": 5000})
    assert_openai_error(s, b, 400, "max_tokens asks for 5000", code="context_length_exceeded")
    huge = [{"role": "user", "content": "x" * 400_000}]  # refused before tokenizing
    s, b, _ = post(judge_app, {"model": "smollm2-135m", "messages": huge})
    assert_openai_error(s, b, 400, "characters", code="context_length_exceeded")


@pytest.mark.model
def test_a_body_over_the_limit_is_a_413(judge_app):
    s, b, _ = post(judge_app, b'{"model": "' + b"x" * (5 << 20) + b'"}')
    assert_openai_error(s, b, 413, "limit", code="request_too_large")


@pytest.mark.model
@pytest.mark.parametrize(
    ("body", "words", "param"),
    [
        ({"model": "smollm2-135m", "messages": []}, ["messages"], "messages"),
        ({"model": "smollm2-135m", "messages": MSG, "n": 2}, ["only n=1"], "n"),
        ({"model": "smollm2-135m", "messages": MSG, "temperature": 9}, ["temperature"], "temperature"),
        ({"model": "smollm2-135m", "messages": [{"role": "robot", "content": "hi"}]}, ["messages[0].role"], "messages[0].role"),
        (
            {"model": "smollm2-135m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            ["image_url", "text-only"],
            "messages[0].content",
        ),
        ({"model": "smollm2-135m", "messages": MSG, "response_format": {"type": "yaml"}}, ["'yaml'"], "response_format"),
        ({"model": "smollm2-135m", "messages": MSG, "tool_choice": "required"}, ["without tools"], "tool_choice"),
        ({"model": "smollm2-135m", "messages": MSG, "top_logprobs": 3}, ["needs logprobs"], "top_logprobs"),
        ({"model": "smollm2-135m", "messages": MSG, "presence_penalty": 1.0}, ["not supported"], "presence_penalty"),
        ({"model": "smollm2-135m", "messages": MSG, "stop": [""]}, ["must not be empty"], "stop"),
        pytest.param(
            {
                "model": "smollm2-135m",
                "messages": MSG,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "Y", "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}},
                },
                "max_tokens": 1,
            },
            ["too few"],
            "max_tokens",
            marks=pytest.mark.system,  # a client schema: the compile guard's child process
        ),
    ],
)
def test_each_bad_parameter_is_a_400_naming_it(judge_app, body, words, param):
    s, b, _ = post(judge_app, body)
    assert_openai_error(s, b, 400, *words, param=param)


def _junk(rng: random.Random, depth: int = 0):
    options = [
        lambda: None,
        lambda: rng.choice([True, False]),
        lambda: rng.randint(-(10**20), 10**20),
        lambda: rng.uniform(-1e9, 1e9),
        lambda: "".join(chr(rng.randrange(0, 0x2FFF)) for _ in range(rng.randrange(0, 12))),
        lambda: "smollm2-135m",
        lambda: [_junk(rng, depth + 1) for _ in range(rng.randrange(0, 4))],
        lambda: {k: _junk(rng, depth + 1) for k in rng.sample(KEYS, rng.randrange(0, 4))},
        lambda: {"role": rng.choice(["user", "system", "tool", "x"]), "content": _junk(rng, depth + 1)},
    ]
    return options[rng.randrange(9 if depth < 3 else 6)]()


KEYS = ["model", "messages", "max_tokens", "temperature", "top_p", "seed", "stop", "n", "stream", "logprobs", "top_logprobs",
        "response_format", "tools", "tool_choice", "type", "json_schema", "schema", "function", "name", "content", "role"]  # fmt: skip


@pytest.mark.system
@pytest.mark.slow
def test_fuzzed_bodies_never_get_a_500_and_the_server_keeps_serving(judge_app):
    """200 malformed or odd bodies (seeded): every answer is a 4xx OpenAI error (or a 200 when the body
    happened to be valid), never a 5xx."""
    rng = random.Random(14)
    raw_bodies: list[bytes] = [b"", b"null", b"[]", b"{}", b"\xff\xfe", b'{"model": NaN}', b"[" * 100_000, b'{"a":' * 5000]
    for _ in range(190):
        body = {k: _junk(rng) for k in rng.sample(KEYS[:14], rng.randrange(0, 8))}
        if rng.random() < 0.6:
            body["model"] = "smollm2-135m"
        if rng.random() < 0.5:
            body["messages"] = [{"role": "user", "content": "Say yes."}] if rng.random() < 0.5 else _junk(rng)
        # keep the valid ones short: 2 tokens, or more than the context holds (a 400)
        body["max_tokens"] = 2 if rng.random() < 0.9 else rng.randint(5000, 10**20)
        raw_bodies.append(json.dumps(body).encode())
    statuses = []
    for raw in raw_bodies:
        s, b, _ = post(judge_app, raw, timeout=120)
        statuses.append(s)
        assert s < 500, (raw[:300], b)
        if s != 200:
            assert set(b["error"]) == {"message", "type", "param", "code"}
    assert statuses.count(200) >= 1 and sum(400 <= s < 500 for s in statuses) > 150
    assert healthy(judge_app)["errors"] == 0


@pytest.mark.model
def test_unknown_paths_and_methods_are_openai_shaped(judge_app):
    s, b, _ = post(judge_app, {}, path="/completions")
    assert_openai_error(s, b, 404, "no such endpoint")
    s, b = get(judge_app, "/v1/chat/completions")
    assert_openai_error(s, b, 405, "method not allowed")


@pytest.mark.system
def test_a_client_that_disconnects_mid_generation_cancels_it(judge_server):
    before = healthy(judge_server.url)["cancelled"]
    u = urllib.parse.urlparse(judge_server.url)
    body = json.dumps(
        {"model": "smollm2-135m", "messages": [{"role": "user", "content": "Write a long essay."}], "max_tokens": 3000}
    )
    sock = socket.create_connection((u.hostname, u.port))
    sock.sendall(
        f"POST {u.path}/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    deadline = time.monotonic() + 300
    while healthy(judge_server.url)["in_flight"] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # let it decode a little
    sock.close()
    while time.monotonic() < deadline:
        h = healthy(judge_server.url)
        if h["cancelled"] > before and h["in_flight"] == 0:
            break
        time.sleep(0.2)
    assert h["cancelled"] == before + 1 and h["in_flight"] == 0
    s, b, _ = post(judge_server.url, {"model": "smollm2-135m", "messages": MSG, "max_tokens": 3})
    # and it keeps serving (the model answers this one with "No." and stops: 2 tokens)
    assert s == 200 and 1 <= b["usage"]["completion_tokens"] <= 3 and b["choices"][0]["finish_reason"] in ("stop", "length")


@pytest.mark.model
def test_a_wrong_or_missing_key_is_a_401(keyed_app):
    url = keyed_app
    for headers, words in (({}, "missing API key"), ({"Authorization": "Bearer nope"}, "incorrect API key")):
        s, b, _ = post(url, {"model": "smollm2-135m", "messages": MSG}, headers)
        assert_openai_error(s, b, 401, words, code="invalid_api_key")
        assert get(url, "/v1/models", headers)[0] == 401
    s, b, _ = post(url, {"model": "smollm2-135m", "messages": MSG, "max_tokens": 2}, {"Authorization": "Bearer s3cret-key"})
    assert s == 200 and b["choices"][0]["message"]["content"]


def test_binding_beyond_loopback_without_a_key_is_refused_before_loading(monkeypatch):
    monkeypatch.delenv("LOCALJUDGE_API_KEY", raising=False)
    res = CliRunner().invoke(main, ["serve", "--host", "0.0.0.0", "--port", "0"])
    assert res.exit_code == 2 and "--api-key" in res.output and "\n" not in res.output.strip()


@pytest.mark.system
def test_a_port_in_use_is_a_one_line_error(judge_server):
    port = urllib.parse.urlparse(judge_server.url).port
    r = subprocess.run(
        [CLI, "serve", "--port", str(port), "--model", "scripted:", "--option", "response=x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "cannot listen on 127.0.0.1" in r.stderr
