"""`tools` on serve's Ollama `/api/chat` (issue 32), on the app `localjudge serve` builds, in this process
(tests/serve_support.py `serve_inprocess`), with the real `ollama` client and LiteLLM's `ollama_chat/` (their httpx
clients on the app's TestClient transport: the same requests and answers a socket would carry): a call comes back as `message.tool_calls` with its arguments an
object (streamed: in a line of its own, then the done line); tool results in the history are read; bad tools
are a one-line 400 naming the field, as on the OpenAI route."""

from __future__ import annotations

import json

import jsonschema
import pytest
from serve_support import post, serve_inprocess

pytestmark = pytest.mark.system  # every request here sends a tool's JSON schema: the compile guard's child process

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER},
}
# with a format as well, the answer is constrained to a call of the tool or content valid for the format
# (the OpenAI route's tools + json_schema); this format is one the model does not reach for, so it calls
UNLIKELY = {"type": "object", "properties": {"zzz": {"const": 1}}, "required": ["zzz"], "additionalProperties": False}
ASK = "What is the weather in Paris? Call the function get_weather."


@pytest.fixture(scope="module")
def ollama_app(_localjudge_home):
    """The server's app in this process, addressed from its root (Ollama's /api/ routes): one thread, the default
    model."""
    with serve_inprocess("--option", "n_threads=1", "--compile-timeout", "20", "--field-tokens", "24") as app:
        yield app.host


def _client(app):
    import ollama

    return ollama.Client(host=app.url, transport=app.transport)


def _chat(app, **kw):
    return _client(app).chat(model=app.model, messages=[{"role": "user", "content": ASK}], tools=[TOOL], format=UNLIKELY, **kw)


def test_the_ollama_client_gets_a_tool_call_with_object_arguments(ollama_app):
    r = _chat(ollama_app, stream=False)
    assert r.done and r.message.content == ""
    (call,) = r.message.tool_calls
    assert call.function.name == "get_weather"
    assert isinstance(call.function.arguments, dict)
    jsonschema.validate(call.function.arguments, WEATHER)


def test_a_streamed_tool_call_comes_in_one_line_then_the_done_line(ollama_app):
    parts = list(_chat(ollama_app, stream=True))
    assert parts[-1].done and not any(p.done for p in parts[:-1])
    with_calls = [p for p in parts if p.message.tool_calls]
    assert len(with_calls) == 1 and with_calls[0] is parts[-2]
    (call,) = with_calls[0].message.tool_calls
    assert call.function.name == "get_weather"
    jsonschema.validate(call.function.arguments, WEATHER)
    assert "".join(p.message.content or "" for p in parts) == ""  # a call, not text
    whole = _chat(ollama_app, stream=False)
    assert whole.message.tool_calls[0].function.arguments == call.function.arguments  # greedy: the same call


def test_the_raw_body_has_arguments_as_an_object_not_a_string(ollama_app):
    body = {"model": ollama_app.model, "messages": [{"role": "user", "content": ASK}], "stream": False}
    s, out, _ = post(ollama_app, {**body, "tools": [TOOL], "format": UNLIKELY}, path="/api/chat")
    assert s == 200, out
    fn = out["message"]["tool_calls"][0]["function"]
    assert fn["name"] == "get_weather" and isinstance(fn["arguments"], dict)


def test_tool_results_in_the_history_are_read_and_answered(ollama_app):
    history = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": "Sunny, 21 C", "tool_name": "get_weather"},
    ]
    r = _client(ollama_app).chat(
        model=ollama_app.model, messages=history, tools=[TOOL], stream=False, options={"num_predict": 24}
    )
    assert r.done and r.prompt_eval_count > 0
    assert r.message.content or r.message.tool_calls


def test_litellm_ollama_chat_with_tools_gets_the_call(ollama_app):
    import httpx
    import litellm
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    r = litellm.completion(
        model=f"ollama_chat/{ollama_app.model}",
        api_base=ollama_app.url,
        client=HTTPHandler(client=httpx.Client(transport=ollama_app.transport)),
        messages=[{"role": "user", "content": ASK}],
        tools=[TOOL],
        response_format={"type": "json_schema", "json_schema": {"name": "unlikely", "schema": UNLIKELY}},
        max_tokens=80,
    )
    (call,) = r.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)


def _tool(params):
    return {"type": "function", "function": {"name": "f", "parameters": params}}


BAD = [
    ({"tools": [_tool({"type": "frobnicate"})]}, "tools[0].function.parameters", "/api/chat"),
    # compiled (with a format, auto tools are part of the constraint): llguidance cannot do a backreference
    ({"tools": [_tool({"type": "string", "pattern": "(a)\\1"})], "format": UNLIKELY}, "tools", "/api/chat"),
    ({"tools": [_tool(WEATHER)] * 2}, "given twice", "/api/chat"),
    ({"tools": [TOOL] * 129}, "tools", "/api/chat"),
    ({"tools": [{"type": "function", "function": {"name": "no spaces allowed"}}]}, "tools[0].function.name", "/api/chat"),
    ({"tools": [TOOL], "prompt": "hi"}, "tools", "/api/generate"),
]


@pytest.mark.parametrize(("extra", "names", "path"), BAD, ids=[f"{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_tools_are_a_one_line_400_naming_the_field(ollama_app, extra, names, path):
    body = {"model": ollama_app.model, "messages": [{"role": "user", "content": "hi"}], "stream": False, **extra}
    s, out, _ = post(ollama_app, body, path=path)
    assert s == 400, out
    assert list(out) == ["error"] and "\n" not in out["error"]
    assert names in out["error"]


def test_the_openapi_document_gives_ollama_chat_its_tools_and_tool_calls(ollama_app):
    from serve_support import get

    s, doc = get(ollama_app, "/openapi.json")
    assert s == 200
    schemas = doc["components"]["schemas"]
    assert "tools" in schemas["OllamaChatRequest"]["properties"]
    assert "tool_calls" in schemas["OllamaMessageOut"]["properties"]
    assert "arguments" in schemas["OllamaFunctionOut"]["properties"]
