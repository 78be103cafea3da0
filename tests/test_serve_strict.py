"""One rule per field across `localjudge serve`'s routes, on its app in this process (tests/serve_support.py
`serve_inprocess`: the app the CLI builds, default model, one thread):
`stream` is a JSON boolean on every route, Ollama's `keep_alive` is bounded, a refused field is named as the client
spelled it (`input[0]`, not pydantic's `input.str`), `/api/show` without a model is a 400 naming `model`, and
tool-call arguments nested past `MAX_ARGUMENT_DEPTH` are refused at once instead of costing a long prefill."""

from __future__ import annotations

import time

import pytest
from serve_support import assert_openai_error, post, serve_inprocess

from localjudge.serve.ollama.wire import MAX_ARGUMENT_DEPTH, MAX_KEEP_ALIVE

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def strict_server(_localjudge_home):
    """`localjudge serve --option n_threads=1 --no-precompile`'s app, in this process."""
    with serve_inprocess("--option", "n_threads=1", "--no-precompile") as app:
        yield app


def _ollama_error(status: int, out: object, *words: str) -> None:
    assert status == 400, out
    assert isinstance(out, dict) and list(out) == ["error"] and "\n" not in out["error"], out
    assert all(w in out["error"] for w in words), out


def _nested(levels: int) -> dict:
    """An object `levels` objects deep: {"a": {"a": ... {} ...}}."""
    out: dict = {}
    for _ in range(levels - 1):
        out = {"a": out}
    return out


def _chat_with_call(model: str, arguments: dict) -> dict:
    return {
        "model": model,
        "stream": False,
        "options": {"num_predict": 1},
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": arguments}}]},
            {"role": "tool", "content": "ok", "tool_name": "f"},
        ],
    }


def test_stream_must_be_a_json_boolean_on_every_route(strict_server):
    """`/v1/responses` took "yes" and `/v1/chat/completions` took 1 while the Ollama routes refused "false"."""
    s = strict_server
    chat = {"model": s.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    for value in ("yes", "false", 1, 0):
        assert_openai_error(*post(s, {**chat, "stream": value})[:2], 400, "stream", param="stream")
        got = post(s, {"model": s.model, "input": "hi", "max_output_tokens": 1, "stream": value}, path="/responses")
        assert_openai_error(*got[:2], 400, "stream", param="stream")
        for path, body in (("/api/chat", {"messages": chat["messages"]}), ("/api/generate", {"prompt": "hi"})):
            _ollama_error(*post(s.host, {"model": s.model, **body, "stream": value}, path=path)[:2], "stream")
    assert post(s, {**chat, "stream": False})[0] == 200


def test_keep_alive_longer_than_its_bound_is_a_400_naming_it(strict_server):
    s = strict_server
    for path, body in (("/api/chat", {"messages": [{"role": "user", "content": "hi"}]}), ("/api/generate", {"prompt": "hi"})):
        long = {"model": s.model, **body, "stream": False, "keep_alive": "5m" * 500_000}  # 1 MB
        _ollama_error(*post(s.host, long, path=path)[:2], "keep_alive", str(MAX_KEEP_ALIVE))
    fine = {"model": s.model, "prompt": "hi", "stream": False, "keep_alive": "5m", "options": {"num_predict": 1}}
    assert post(s.host, fine, path="/api/generate")[0] == 200


def test_a_refused_field_is_named_as_the_client_spelled_it_not_by_a_union_branch(strict_server):
    s = strict_server
    got = post(s, {"model": s.model, "input": [1]}, path="/responses")
    assert_openai_error(*got[:2], 400, "input[0]:", param="input[0]")
    assert ".str" not in got[1]["error"]["message"]
    chat = {"model": s.model, "messages": [{"role": "user", "content": [1]}]}
    assert_openai_error(*post(s, chat)[:2], 400, "messages[0].content[0]:", param="messages[0].content[0]")


def test_show_without_a_model_is_a_400_naming_model(strict_server):
    s = strict_server
    for body in ({}, {"model": ""}, {"name": None}):
        status, out, _ = post(s.host, body, path="/api/show")
        _ollama_error(status, out, "model")
        assert "None" not in out["error"]
    assert post(s.host, {"name": s.model}, path="/api/show")[0] == 200


def test_tool_call_arguments_nested_past_the_bound_are_refused_at_once(strict_server):
    """500 levels were ~1,800 prompt tokens: 19.5 s of prefill for an 8-token answer. Now a 400 before any prefill;
    arguments at the bound are still read."""
    s = strict_server
    t = time.monotonic()
    status, out, _ = post(s.host, _chat_with_call(s.model, _nested(490)), path="/api/chat")
    took = time.monotonic() - t
    _ollama_error(status, out, "messages[1].tool_calls[0].function.arguments", f"deeper than {MAX_ARGUMENT_DEPTH}")
    assert took < 2, took
    _ollama_error(*post(s.host, _chat_with_call(s.model, _nested(MAX_ARGUMENT_DEPTH + 1)), path="/api/chat")[:2], "arguments")
    assert post(s.host, _chat_with_call(s.model, _nested(MAX_ARGUMENT_DEPTH)), path="/api/chat")[0] == 200
