"""The wire bytes of representative `localjudge serve` answers, for tests/test_serve_wire_golden.py.

`answers()` serves the embedded default model (one thread, greedy) and a scripted model in-process and
returns each case's status, content type and body bytes, with the only varying parts (ids, `created`,
uptime) replaced by fixed text. It uses only names that existed before serve's responses became typed
models, so running it against the old code (`python tests/serve_golden_cases.py OUT_DIR` with that code on
PYTHONPATH) captured tests/golden/serve/.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

VARYING = [
    (re.compile(rb"chatcmpl-[0-9a-f]{32}"), b"chatcmpl-ID"),
    (re.compile(rb"call_[0-9a-f]{24}"), b"call_ID"),
    (re.compile(rb'"created": ?\d+'), b'"created":0'),
    (re.compile(rb'"uptime_s": ?[0-9.]+'), b'"uptime_s":0'),
]
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["yes", "no"]}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["verdict", "score"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"]},
    },
}


def _fixed(body: bytes) -> bytes:
    for pattern, repl in VARYING:
        body = pattern.sub(repl, body)
    return body


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def _cases(model: str) -> list[tuple[str, str, str, Any]]:
    """(name, method, path, body) of each request to the real model's server, in order."""
    chat = "/v1/chat/completions"
    return [
        ("models", "GET", "/v1/models", None),
        ("model", "GET", f"/v1/models/{model}", None),
        ("model_missing", "GET", "/v1/models/nope", None),
        ("no_endpoint", "GET", "/v1/nothing", None),
        ("wrong_method", "GET", chat, None),
        ("bad_n", "POST", chat, {"model": model, "messages": _user("Hi"), "n": 2}),
        ("bad_json", "POST", chat, b"{not json"),
        ("missing_messages", "POST", chat, {"model": model}),
        ("wrong_model", "POST", chat, {"model": "other", "messages": _user("Hi")}),
        (
            "text_logprobs",
            "POST",
            chat,
            {"model": model, "messages": _user("Say hi"), "max_tokens": 4, "logprobs": True, "top_logprobs": 2},
        ),
        ("text_stop", "POST", chat, {"model": model, "messages": _user("Count: 1, 2, 3"), "max_tokens": 8, "stop": [","]}),
        (
            "json_schema",
            "POST",
            chat,
            {
                "model": model,
                "messages": _user("Is the sky blue? Answer with a verdict and a score."),
                "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA}},
            },
        ),
        (
            "json_object",
            "POST",
            chat,
            {
                "model": model,
                "messages": _user("A JSON object please"),
                "max_tokens": 12,
                "response_format": {"type": "json_object"},
            },
        ),
        (
            "named_tool",
            "POST",
            chat,
            {
                "model": model,
                "messages": _user("Weather in Paris?"),
                "tools": [WEATHER],
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            },
        ),
        (
            "think",
            "POST",
            chat,
            {
                "model": model,
                "messages": _user("Is the sky blue?"),
                "think_tokens": 4,
                "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA}},
            },
        ),
        (
            "stream_text",
            "POST",
            chat,
            {
                "model": model,
                "messages": _user("Say hi"),
                "max_tokens": 4,
                "stream": True,
                "stream_options": {"include_usage": True},
                "logprobs": True,
            },
        ),
        (
            "stream_tool",
            "POST",
            chat,
            {
                "model": model,
                "messages": _user("Weather in Oslo?"),
                "stream": True,
                "tools": [WEATHER],
                "tool_choice": "required",
            },
        ),
        (
            "stream_think",
            "POST",
            chat,
            {
                "model": model,
                "messages": _user("Is the sky blue?"),
                "stream": True,
                "think_tokens": 3,
                "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA}},
            },
        ),
        ("health", "GET", "/health", None),
    ]


def _scripted_cases(model: str) -> list[tuple[str, str, str, Any]]:
    """Requests to a scripted model (no vocabulary, no streaming): tool calls parsed from text, whole answers."""
    chat = "/v1/chat/completions"
    return [
        ("scripted_auto_tool", "POST", chat, {"model": model, "messages": _user("Weather?"), "tools": [WEATHER]}),
        (
            "scripted_text",
            "POST",
            chat,
            {"model": model, "messages": _user("Weather?"), "tools": [WEATHER], "tool_choice": "none"},
        ),
        ("scripted_stream", "POST", chat, {"model": model, "messages": _user("Hi"), "stream": True, "tools": [WEATHER]}),
        ("scripted_models", "GET", "/models", None),
    ]


def _serve(engine: Any, cases: list[tuple[str, str, str, Any]]) -> dict[str, dict[str, Any]]:
    from starlette.testclient import TestClient

    from localjudge.serve.app import ServeConfig, ServerState, create_app

    config = ServeConfig(allowed_hosts=("testserver",), precompile=False, compile_seconds=60)
    state = ServerState(engine, config)
    out: dict[str, dict[str, Any]] = {}
    with TestClient(create_app(state), raise_server_exceptions=False) as client:
        for name, method, path, body in cases:
            kw: dict[str, Any] = {}
            if isinstance(body, bytes):
                kw = {"content": body, "headers": {"content-type": "application/json"}}
            elif body is not None:
                kw = {"json": body}
            r = client.request(method, path, **kw)
            out[name] = {"status": r.status_code, "type": r.headers.get("content-type"), "body": _fixed(r.content)}
    return out


def answers() -> dict[str, dict[str, Any]]:
    """Every case's status, content type and body bytes (varying parts fixed)."""
    from localjudge.engine import backends, load_engine

    # a fresh engine: the process's cached one may hold earlier tests' prompts in its KV cache, and
    # `cached_tokens` in the answers must be what a fresh server reports (as when the goldens were captured)
    saved = dict(backends._ENGINES)
    backends._ENGINES.clear()
    # the shipped Q4_1 file, not this CPU's converted layout (engine/layout.py): the goldens hold the server's bytes
    # around the model's tokens, and the shipped file's constrained tokens are the same on every CPU family tried
    # (the converted file's type, and so its tokens, depend on the CPU's features)
    layout_was = os.environ.get("LOCALJUDGE_LAYOUT")
    os.environ["LOCALJUDGE_LAYOUT"] = "shipped"
    try:
        real = load_engine(None, n_threads=1)
        out = _serve(real, _cases(real.model_id))
        real.close()
    finally:
        backends._ENGINES.clear()
        backends._ENGINES.update(saved)
        if layout_was is None:
            os.environ.pop("LOCALJUDGE_LAYOUT", None)
        else:
            os.environ["LOCALJUDGE_LAYOUT"] = layout_was
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Oslo"}})
    scripted = load_engine("scripted:", response=f"Let me check. {call}")
    out.update(_serve(scripted, _scripted_cases(scripted.model_id)))
    return out


def file_name(name: str, content_type: str | None) -> str:
    """The golden file of a case: NAME.sse for a stream, NAME.json otherwise."""
    return f"{name}.sse" if (content_type or "").startswith("text/event-stream") else f"{name}.json"


if __name__ == "__main__":  # capture: python tests/serve_golden_cases.py OUT_DIR
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    index = {}
    for name, a in answers().items():
        (target / file_name(name, a["type"])).write_bytes(a["body"])
        index[name] = {"status": a["status"], "content_type": a["type"]}
    (target / "index.json").write_text(json.dumps(index, indent=1) + "\n")
