"""`localjudge serve` against a hostile client, on loopback, bounded in count and time: schema
amplification, wrong-typed schemas, lone surrogates, slow and vanishing clients, SIGTERM with a stalled
client, the compile queue, foreign Host / Origin / Content-Type. Never a 500, never a hang, never more than a fixed
memory budget. schemathesis fuzzing from the server's own OpenAPI document, with these limits, runs on the app in
process (test_serve_schemathesis.py)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse
from pathlib import Path

import pytest
from serve_support import HOSTILE_LIMITS, assert_openai_error, get, healthy, post, start_server

pytestmark = pytest.mark.system

MODEL = "smollm2-135m"
MSG = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]
HEAVY = {"type": "string", "minLength": 64}  # a 56-character regex whose automaton takes minutes to build
TINY = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def amplification_schema(levels: int = 4, width: int = 26) -> dict:
    """The issue's 2 KB schema: `levels` of $defs, each an anyOf of `width` $refs to the level below."""
    defs: dict = {"L0": {}}  # any JSON value: the issue's 1.4-billion-character expansion
    for i in range(1, levels + 1):
        defs[f"L{i}"] = {"anyOf": [{"$ref": f"#/$defs/L{i - 1}"} for _ in range(width)]}
    return {"$defs": defs, "$ref": f"#/$defs/L{levels}"}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A server with small limits, in its own home (its 10 KB automaton cache evicts nobody else's), whose
    client schemas go to the automaton path (the compile queue, the disk cache and the expansion bounds are
    that path's; the llguidance default is tested against `judge_server`)."""
    home = tmp_path_factory.mktemp("hostile_home")
    server = start_server(*HOSTILE_LIMITS, "--cache-max-mb", "0.01", env={"LOCALJUDGE_HOME": str(home)})
    server.home = home  # type: ignore[attr-defined]
    yield server
    server.stop()


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _schema_body(schema: dict, **extra) -> dict:
    rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    return {"model": MODEL, "messages": MSG, "response_format": rf, "max_tokens": 8, **extra}


def _raw(url: str, data: bytes, read: bool = True, timeout: float = 30) -> bytes:
    u = urllib.parse.urlparse(url)
    with socket.create_connection((u.hostname, u.port), timeout=timeout) as s:
        s.sendall(data)
        if not read:
            return b""
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


# -------------------------------------------------------------------------------------- schemas


def test_the_amplification_schema_is_refused_without_the_server_growing(hostile):
    """4 levels of 26 $refs would expand to a 1.4-billion-character regex: on the automaton path it is
    refused while expanding, the server's peak RSS barely moves, and the same schema inside a tool is
    refused the same way."""
    before = _peak_rss_mb(hostile.proc.pid)
    for stream in (False, True):
        s, b, _ = post(hostile.url, _schema_body(amplification_schema(), stream=stream), timeout=120)
        assert_openai_error(s, b, 400, "$ref", param="response_format")
    tools = [{"type": "function", "function": {"name": "f", "parameters": amplification_schema()}}]
    s, b, _ = post(hostile.url, {"model": MODEL, "messages": MSG, "tools": tools, "tool_choice": "required"}, timeout=120)
    assert_openai_error(s, b, 400, "$ref", param="tools")
    assert _peak_rss_mb(hostile.proc.pid) - before < 100
    assert healthy(hostile.url)["errors"] == 0


def _content(body) -> str:
    """The answer's text, from a JSON body or an SSE stream's deltas."""
    if isinstance(body, dict):
        return body["choices"][0]["message"]["content"]
    text = body.decode() if isinstance(body, bytes) else body
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert chunks and all("error" not in c for c in chunks), text[-500:]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))


def test_the_amplification_schema_is_answered_validly_by_llguidance_without_the_server_growing(judge_server):
    """The default engine for client schemas keeps each $ref one grammar rule (nothing is expanded): the same
    schema is answered, streamed or not and inside a tool (whose $defs are hoisted into the call schema), every
    answer valid against it, with the server's peak RSS barely moving and no server error."""
    import jsonschema

    before, errors = _peak_rss_mb(judge_server.proc.pid), healthy(judge_server.url)["errors"]
    for stream in (False, True):
        s, b, _ = post(judge_server.url, _schema_body(amplification_schema(), stream=stream), timeout=120)
        assert s == 200, b
        jsonschema.validate(json.loads(_content(b)), amplification_schema())
    tools = [{"type": "function", "function": {"name": "f", "parameters": amplification_schema()}}]
    body = {"model": MODEL, "messages": MSG, "tools": tools, "tool_choice": "required", "max_tokens": 48}
    s, b, _ = post(judge_server.url, body, timeout=120)
    assert s == 200, b
    msg = b["choices"][0]["message"]  # arguments that are not an object (L0 allows any value) stay content
    args = (
        json.loads(msg["tool_calls"][0]["function"]["arguments"])
        if msg.get("tool_calls")
        else json.loads(msg["content"])["arguments"]
    )
    jsonschema.validate(args, amplification_schema())
    assert _peak_rss_mb(judge_server.proc.pid) - before < 100
    assert healthy(judge_server.url)["errors"] == errors


WRONG_TYPES = [
    ({"type": "array", "items": {"type": "string"}, "minItems": "x"}, "minItems"),
    ({"type": "number", "minimum": "a"}, "minimum"),
    ({"type": "integer", "exclusiveMinimum": "a"}, "exclusiveMinimum"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": 5}, "required"),
    ({"type": "string", "format": ["x"]}, "format"),
    ({"$ref": 5}, "$ref"),
    ({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "refers back to itself"),
    ({"type": "string", "enum": 5}, "enum"),
]


def test_wrong_typed_schemas_are_400s_naming_the_parameter_in_every_tool_choice_mode(hostile):
    """Each wrong-typed keyword (and a $ref loop) in response_format, and in a tool's parameters with
    tool_choice named, required, auto and none, streamed or not: a 400 naming the parameter and keyword."""
    for schema, word in WRONG_TYPES:
        for stream in (False, True):
            s, b, _ = post(hostile.url, _schema_body(schema, stream=stream))
            assert_openai_error(s, b, 400, word, param="response_format")
            for choice in ({"type": "function", "function": {"name": "f"}}, "required", "auto", "none"):
                tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
                body = {"model": MODEL, "messages": MSG, "tools": tools, "tool_choice": choice, "max_tokens": 4}
                s, b, _ = post(hostile.url, {**body, "stream": stream})
                assert_openai_error(s, b, 400, word, param="tools[0].function.parameters")
    assert healthy(hostile.url)["errors"] == 0


def test_lone_surrogates_anywhere_are_400s_naming_where(hostile):
    """A lone surrogate in message content, a content part, stop, a schema const or a tool description."""
    bad = "\ud800"
    part = [{"type": "text", "text": "a" + bad}]
    tool = [{"type": "function", "function": {"name": "f", "description": bad, "parameters": TINY}}]
    cases = [
        ({"messages": [{"role": "user", "content": "x" + bad}]}, "messages"),
        ({"messages": [{"role": "user", "content": part}]}, "messages"),
        ({"stop": ["a", bad]}, "stop"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"const": bad}}}}, "response_format"),
        ({"tools": tool, "tool_choice": "auto"}, "tools"),
    ]
    for extra, param in cases:
        for stream in (False, True):
            body = {"model": MODEL, "messages": MSG, "max_tokens": 4, "stream": stream, **extra}
            s, b, _ = post(hostile.url, json.dumps(body, ensure_ascii=True))
            assert_openai_error(s, b, 400, "surrogate", param=param)
    assert healthy(hostile.url)["errors"] == 0


# -------------------------------------------------------------------------------------- clients


def test_slow_clients_are_cut_and_a_connection_past_the_limit_is_a_503(hostile):
    """8 connections trickling unfinished headers: the 9th is answered 503 at once; all 8 are closed after
    the 2 s header deadline (logged once, not 8 times); a body that does not finish in 3 s is a 408."""
    u = urllib.parse.urlparse(hostile.url)
    stalled = []
    for _ in range(8):
        s = socket.create_connection((u.hostname, u.port), timeout=30)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        stalled.append(s)
    time.sleep(0.3)
    answer = _raw(hostile.url, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 503") and b"too_many_connections" in answer
    for s in stalled:  # each is closed by the server (recv gives b"" long before the 30 s socket timeout)
        assert s.recv(100) == b""
        s.close()
    assert healthy(hostile.url)["status"] == "ok"
    cut = [line for line in hostile.log if "no complete request headers" in line]
    assert len(cut) == 1, hostile.log[-20:]
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    answer = _raw(hostile.url, head + b"Content-Length: 100\r\n\r\n{")
    assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer
    assert healthy(hostile.url)["errors"] == 0


def test_a_keep_alive_connection_trickling_its_next_request_is_cut(hostile):
    """One whole request, then the next one's headers a byte at a time: closed at the header deadline."""
    u = urllib.parse.urlparse(hostile.url)
    with socket.create_connection((u.hostname, u.port), timeout=30) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
        got = b"x"
        try:
            for byte in b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                s.sendall(bytes([byte]))
                time.sleep(0.5)
        except OSError:  # closed under us: what we want
            got = b""
        if got:
            got = s.recv(100)
        assert got == b""


def test_a_client_leaving_mid_upload_is_a_normal_event(hostile):
    """Headers and half a body, then the client goes: no traceback in the log, not counted as an error."""
    before = healthy(hostile.url)["cancelled"]
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    _raw(hostile.url, head + b'Content-Length: 1000\r\n\r\n{"model": "', read=False)
    deadline = time.monotonic() + 30
    while healthy(hostile.url)["cancelled"] == before and time.monotonic() < deadline:
        time.sleep(0.1)
    h = healthy(hostile.url)
    assert h["cancelled"] == before + 1 and h["errors"] == 0
    assert not any("Traceback" in line for line in hostile.log)


def _until_waiting(url: str, n: int, within: float = 30.0) -> None:
    """Poll /health until `n` requests wait on an automaton build."""
    deadline = time.monotonic() + within
    while healthy(url)["compiles_waiting"] != n:
        assert time.monotonic() < deadline, f"never {n} compiles waiting: {healthy(url)}"
        time.sleep(0.05)


def test_a_heavy_compile_does_not_starve_a_small_one_and_waiting_compiles_count_as_pending(hostile):
    """Two requests wait on a heavy schema's build; a tiny schema is built beside it and answered while
    both still wait; with a third heavy one waiting (3 pending, --max-pending 3) a 4th request is a 429;
    the heavy builds end as 400s at --compile-timeout."""
    done: list[tuple[str, int]] = []

    def send(name: str, body: dict) -> None:
        s, _, _ = post(hostile.url, body, timeout=120)
        done.append((name, s))

    heavy = [threading.Thread(target=send, args=("heavy", _schema_body(HEAVY))) for _ in range(3)]
    for t in heavy[:2]:
        t.start()
    _until_waiting(hostile.url, 2)
    send("tiny", _schema_body(TINY, max_tokens=12))
    assert done == [("tiny", 200)] and healthy(hostile.url)["compiles_waiting"] == 2  # answered while both wait
    heavy[2].start()
    _until_waiting(hostile.url, 3)
    s, b, headers = post(hostile.url, {"model": MODEL, "messages": MSG, "max_tokens": 2})
    assert_openai_error(s, b, 429, "compiling", code="rate_limit_exceeded")
    for t in heavy:
        t.join(120)
    assert sorted(done[1:]) == [("heavy", 400)] * 3


def test_the_automaton_cache_is_capped_least_recently_used_out(hostile):
    """--cache-max-mb 0.01: an automaton not used for an hour is deleted when a new one is built."""
    fsm = Path(hostile.home) / "fsm"
    files = set(fsm.rglob("*.npz"))
    other = {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}}
    s, _, _ = post(hostile.url, _schema_body(other, max_tokens=12), timeout=120)
    assert s == 200
    (old,) = set(fsm.rglob("*.npz")) - files
    hour_ago = time.time() - 3600
    import os

    os.utime(old, (hour_ago, hour_ago))
    enum = {"type": "object", "properties": {"a": {"enum": [f"value number {i} here" for i in range(300)]}}}
    s, _, _ = post(hostile.url, _schema_body(enum, max_tokens=12), timeout=120)
    assert s == 200
    assert not old.exists() and len(list(fsm.rglob("*.npz"))) >= 1


# -------------------------------------------------------------------------------------- browsers


def test_foreign_host_origin_and_content_type_are_refused(hostile):
    """DNS rebinding (a foreign Host), a page's text/plain or form POST, a foreign Origin: refused before
    any route, and no CORS header is ever sent without --cors-origin."""
    ok = {"model": MODEL, "messages": MSG, "max_tokens": 2}
    s, b, _ = post(hostile.url, ok, {"Host": "evil.example:80"})
    assert_openai_error(s, b, 400, "--allowed-host", code="host_not_allowed")
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        s, b, h = post(hostile.url, json.dumps(ok), {"Content-Type": ctype})
        assert_openai_error(s, b, 415, "application/json", code="unsupported_media_type")
    s, b, h = post(hostile.url, ok, {"Origin": "https://evil.example"})
    assert_openai_error(s, b, 403, "--cors-origin", code="origin_not_allowed")
    assert not any(k.lower().startswith("access-control") for k in h)
    s, b = get(hostile.url, "/health", {"Host": "attacker.example"})
    assert s == 400


def test_cors_only_for_the_given_origin(_localjudge_home):
    server = start_server(
        "--no-precompile", "--option", "n_threads=1", "--cors-origin", "https://app.example", "--allowed-host", "judge.lan"
    )
    try:
        s, b, h = post(server.url, {"model": MODEL, "messages": MSG, "max_tokens": 1}, {"Origin": "https://app.example"})
        assert s == 200 and h.get("access-control-allow-origin") == "https://app.example"
        s, b, h = post(server.url, {"model": MODEL, "messages": MSG, "max_tokens": 1}, {"Origin": "https://other.example"})
        assert s == 403
        assert get(server.url, "/health", {"Host": "judge.lan:8000"})[0] == 200
        preflight = b"OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\n"
        answer = _raw(server.url, preflight + b"Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 204") and b"access-control-allow-methods: GET, POST, OPTIONS" in answer
    finally:
        server.stop()


def test_with_a_key_health_reveals_only_liveness(keyed_server):
    s, b = get(keyed_server.url, "/health")
    assert s == 200 and b == {"status": "ok"}
    s, b = get(keyed_server.url, "/health", {"Authorization": "Bearer s3cret-key"})
    assert s == 200 and "errors" in b and "model" in b


# -------------------------------------------------------------------------------------- shutdown


def test_sigterm_with_a_stalled_client_finishes_the_generation_then_exits(_localjudge_home):
    """One client stalled mid-body, one generating: SIGTERM lets the generation finish (200), answers the
    stalled body 503, and the process exits 0 (bounded by --shutdown-timeout, far below the 60 s wait)."""
    server = start_server("--no-precompile", "--option", "n_threads=1", "--shutdown-timeout", "20", "--body-timeout", "600")
    try:
        u = urllib.parse.urlparse(server.url)
        stalled = socket.create_connection((u.hostname, u.port), timeout=60)
        head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        stalled.sendall((head + 'Content-Length: 500\r\n\r\n{"model": ').encode())
        results: list = []
        body = {"model": MODEL, "messages": [{"role": "user", "content": "Tell a story."}], "max_tokens": 12}
        t = threading.Thread(target=lambda: results.append(post(server.url, body)))
        t.start()
        deadline = time.monotonic() + 60
        while healthy(server.url)["in_flight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        server.proc.send_signal(15)
        assert server.proc.wait(60) == 0
        t.join(10)
        assert results and results[0][0] == 200 and results[0][1]["usage"]["completion_tokens"] >= 1
        assert stalled.recv(1000).startswith(b"HTTP/1.1 503")
    finally:
        server.stop()
