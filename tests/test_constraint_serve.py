"""Issue 23 through a real `localjudge serve`: a fully forced answer is answered (it hung before), a
`pattern` is honoured instead of refused, and the `grammar` response_format extension decodes a Lark
grammar (a bad one is a 400 naming llguidance's reason), and `think_tokens` returns the reasoning apart."""

from __future__ import annotations

import json
import re

import pytest
from serve_support import assert_openai_error, healthy, post

MSG = [{"role": "user", "content": "Give the release code of our product."}]


def ask(rf: dict, **kw) -> tuple[int, dict]:
    s, b, _ = post(pytest.judge_url, {"model": "smollm2-135m", "messages": MSG, "response_format": rf, **kw})  # type: ignore[attr-defined]
    return s, b


@pytest.fixture(autouse=True)
def _url(judge_server):
    pytest.judge_url = judge_server.url  # type: ignore[attr-defined]


def schema_rf(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}


def test_a_fully_forced_answer_is_answered_and_leaves_nothing_in_flight(judge_server):
    for schema, expect in (({"type": "object", "properties": {}, "additionalProperties": False}, {}), ({"const": "x"}, "x")):
        s, b = ask(schema_rf(schema))
        assert s == 200 and json.loads(b["choices"][0]["message"]["content"]) == expect
        assert b["choices"][0]["finish_reason"] == "stop"
    h = healthy(judge_server.url)
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
    s, b = ask(schema_rf(schema), think_tokens=8, stream=True)
    assert_openai_error(s, b, 400, "think_tokens", param="think_tokens")
