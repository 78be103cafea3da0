"""Issue 23 through `localjudge serve`'s app (`judge_app`: the app the CLI builds, in this process; the docs snippet,
a client given a URL, through the real `judge_server`): a fully forced answer is answered (it hung before), a
`pattern` is honoured instead of refused, and the `grammar` response_format extension decodes a Lark
grammar (a bad one is a 400 naming llguidance's reason), and `think_tokens` returns the reasoning apart."""

from __future__ import annotations

import ast
import json
import re

import pytest
from serve_support import assert_openai_error, healthy, post

pytestmark = pytest.mark.system

MSG = [{"role": "user", "content": "Give the release code of our product."}]


def ask(rf: dict, **kw) -> tuple[int, dict]:
    s, b, _ = post(pytest.judge_app, {"model": "smollm2-135m", "messages": MSG, "response_format": rf, **kw})  # type: ignore[attr-defined]
    return s, b


@pytest.fixture(autouse=True)
def _app(judge_app):
    pytest.judge_app = judge_app  # type: ignore[attr-defined]


def schema_rf(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}


def test_a_fully_forced_answer_is_answered_and_leaves_nothing_in_flight(judge_app):
    for schema, expect in (({"type": "object", "properties": {}, "additionalProperties": False}, {}), ({"const": "x"}, "x")):
        s, b = ask(schema_rf(schema))
        assert s == 200 and json.loads(b["choices"][0]["message"]["content"]) == expect
        assert b["choices"][0]["finish_reason"] == "stop"
    h = healthy(judge_app)
    assert h["in_flight"] == 0 and h["errors"] == 0


def test_a_pattern_is_honoured_instead_of_refused():
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}},
        "required": ["code"],
        "additionalProperties": False,
    }
    s, b = ask(schema_rf(schema))
    assert s == 200
    assert re.fullmatch(r"[A-Z]{3}-[0-9]{2}", json.loads(b["choices"][0]["message"]["content"])["code"])


def test_the_grammar_response_format_decodes_a_lark_grammar_and_refuses_a_bad_one():
    grammar = 'start: "SELECT " COLS " FROM " TABLE ";"\nCOLS: /[a-z_]+(, [a-z_]+){0,3}/\nTABLE: /[a-z_]{1,12}/\n'
    s, b = ask({"type": "grammar", "grammar": grammar}, max_tokens=40)
    assert s == 200
    assert re.fullmatch(r"SELECT [a-z_]+(, [a-z_]+){0,3} FROM [a-z_]{1,12};", b["choices"][0]["message"]["content"])
    s, b = ask({"type": "grammar", "grammar": "start: nowhere"})
    assert_openai_error(s, b, 400, "unknown name", param="response_format")


def test_think_tokens_return_the_reasoning_apart_from_a_valid_answer():
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}
    s, b = ask(schema_rf(schema), think_tokens=8)
    assert s == 200
    message = b["choices"][0]["message"]
    assert isinstance(json.loads(message["content"])["ok"], bool) and message["reasoning_content"]
    assert "<think>" not in message["content"] and "think>" not in message["reasoning_content"]


def test_streamed_reasoning_comes_as_reasoning_deltas_and_equals_the_whole_answer(judge_app):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=judge_app.url, api_key="unused", timeout=600, max_retries=0, http_client=judge_app.client)
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}
    n = 10
    kw = dict(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "Is the sky green? Think it through, then answer."}],
        response_format=schema_rf(schema),
        temperature=0.8,
        seed=7,
        extra_body={"think_tokens": n},
    )
    # twice: the second is decoded from the prefix cache, as the streamed one will be (a long prompt decoded
    # cold can differ from one served from the cache; that is the engine's, streamed or not)
    client.chat.completions.create(**kw, logprobs=True)
    whole = client.chat.completions.create(**kw, logprobs=True).choices[0]
    # the model's own think tokens (a forced marker token has logprob 0) before the closing marker: at most n
    toks, seen = whole.logprobs.content, ""
    close = next(i for i, t in enumerate(toks) if "</think>" in (seen := seen + t.token))
    chosen = [t for t in toks[:close] if t.logprob != 0.0]
    assert 1 <= len(chosen) <= n
    reasoning, content, finish = [], [], None
    for chunk in client.chat.completions.create(**kw, stream=True):
        for c in chunk.choices:
            reasoning.append((c.delta.model_extra or {}).get("reasoning_content") or "")
            content.append(c.delta.content or "")
            finish = c.finish_reason or finish
    assert "".join(reasoning) == whole.message.model_extra["reasoning_content"] and len([r for r in reasoning if r]) > 1
    assert "".join(content) == whole.message.content and finish == whole.finish_reason == "stop"
    assert "think>" not in "".join(content) and isinstance(json.loads("".join(content))["ok"], bool)


def test_the_serve_page_reasoning_snippet_streams_the_thinking_apart(judge_server, capsys):
    """docs/serve.md's reasoning snippet, verbatim but for the server's URL: its last line is the answer alone."""
    from docs_snippets import section_snippets

    (code,) = section_snippets("docs/serve.md", "Reasoning requests (`think_tokens`)")
    exec(compile(code.replace("http://127.0.0.1:8000/v1", judge_server.url), "docs/serve.md", "exec"), {})
    thinking, answer = capsys.readouterr().out.strip().splitlines()
    assert ast.literal_eval(thinking) and "think>" not in thinking + answer and isinstance(json.loads(answer)["ok"], bool)
