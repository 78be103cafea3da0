"""Chat's `response_format` is a typed union on `type` (text, json_object, json_schema, grammar) read with the body
(issue 44 part 4), and refuses exactly what the hand checks before it refused, with the same one-line 400s, where
they were answered: in the plan, after the model and the other parameters, and not when the request's tools decide
the answer. In process: the plan, and the app through Starlette's test client on a scripted engine."""

from __future__ import annotations

import pytest

from localjudge.serve.core import plan as protocol
from localjudge.serve.core.errors import APIError
from localjudge.serve.core.wire import GrammarResponse, JSONObjectResponse, JSONSchemaResponse, RefusedFormat, TextResponse

MSG = [{"role": "user", "content": "Is the sky blue?"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
UNSUPPORTED = "is not supported; use text, json_object, json_schema or grammar"


def _plan(rf, **extra):
    return protocol.plan(protocol.parse_request({"model": "m", "messages": MSG, "response_format": rf, **extra}), field_tokens=80)


@pytest.mark.parametrize(
    ("rf", "message"),
    [
        ({"type": "yaml"}, f"response_format.type: 'yaml' {UNSUPPORTED}"),
        ({}, f"response_format.type: None {UNSUPPORTED}"),
        ({"type": 5}, f"response_format.type: 5 {UNSUPPORTED}"),
        ({"type": "json_schema"}, "response_format.json_schema: must be an object with name and schema"),
        ({"type": "json_schema", "json_schema": "x"}, "response_format.json_schema: must be an object with name and schema"),
        (
            {"type": "json_schema", "json_schema": {"name": "n"}},
            "response_format.json_schema.schema: must be a JSON schema object",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "schema": [], "strict": "yes"}},
            "response_format.json_schema.schema: must be a JSON schema object",  # the schema is named first
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "schema": SCHEMA, "strict": 1}},
            "response_format.json_schema.strict: must be true or false",
        ),
        ({"type": "grammar"}, "response_format.grammar: must be a Lark grammar string with a 'start' rule"),
        ({"type": "grammar", "grammar": " \n"}, "response_format.grammar: must be a Lark grammar string with a 'start' rule"),
        ({"type": "grammar", "grammar": 5}, "response_format.grammar: must be a Lark grammar string with a 'start' rule"),
    ],
)
def test_a_response_format_of_the_wrong_shape_is_the_same_400_as_before(rf, message):
    with pytest.raises(APIError) as e:
        _plan(rf)
    assert (e.value.status, e.value.message, e.value.param, e.value.code) == (400, message, "response_format", None)


def test_a_response_format_that_is_not_an_object_is_refused_with_the_body():
    with pytest.raises(APIError) as e:
        protocol.parse_request({"model": "m", "messages": MSG, "response_format": "json"})
    assert (e.value.message, e.value.param) == ("response_format: Input should be a valid dictionary", "response_format")


def test_each_type_is_read_into_its_own_model_and_planned_as_before():
    cases = [
        ({"type": "text", "extra": 1}, TextResponse),
        ({"type": "json_object"}, JSONObjectResponse),
        ({"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA, "strict": True}}, JSONSchemaResponse),
        ({"type": "grammar", "grammar": 'start: "yes" | "no"'}, GrammarResponse),
    ]
    for rf, model in cases:
        req = protocol.parse_request({"model": "m", "messages": MSG, "response_format": rf})
        assert type(req.response_format) is model
    assert _plan(cases[0][0]).schema is None
    assert (_plan(cases[1][0]).schema, _plan(cases[1][0]).schema_name) == ({"type": "object"}, "json_object")
    assert (_plan(cases[2][0]).schema, _plan(cases[2][0]).schema_name) == (SCHEMA, "v")
    assert type(_plan(cases[3][0]).fmt).__name__ == "GrammarFormat"


def test_a_name_or_description_that_is_not_a_string_is_no_name_as_before():
    p = _plan({"type": "json_schema", "json_schema": {"name": 5, "description": ["d"], "schema": SCHEMA}})
    assert (p.schema, p.schema_name) == (SCHEMA, None)


def test_a_refused_response_format_waits_for_the_plan_and_is_ignored_when_a_tool_decides_the_answer():
    req = protocol.parse_request({"model": "m", "messages": MSG, "response_format": {"type": "yaml"}, "n": 2})
    assert isinstance(req.response_format, RefusedFormat)
    with pytest.raises(APIError) as e:  # the other parameters are still answered first
        protocol.plan(req, field_tokens=80)
    assert e.value.param == "n"
    named = {"type": "function", "function": {"name": "f"}}
    assert _plan({"type": "yaml"}, tools=TOOLS, tool_choice=named).tool_mode == "named"


def test_an_unknown_type_through_the_app_is_the_same_400_body():
    from starlette.testclient import TestClient

    from localjudge.engine import load_engine
    from localjudge.serve.app import ServeConfig, ServerState, create_app

    state = ServerState(load_engine("scripted:", response="x"), ServeConfig(allowed_hosts=("testserver",), precompile=False))
    with TestClient(create_app(state)) as client:
        body = {"model": state.model_name, "messages": MSG, "response_format": {"type": "yaml"}}
        r = client.post("/v1/chat/completions", json=body)
        assert r.status_code == 400
        assert r.json() == {
            "error": {
                "message": f"response_format.type: 'yaml' {UNSUPPORTED}",
                "type": "invalid_request_error",
                "param": "response_format",
                "code": None,
            }
        }
        r = client.post("/v1/chat/completions", json={**body, "model": "gpt-4o"})
        assert r.status_code == 404  # the model is answered first, as before


def test_the_document_describes_response_format_as_the_union_on_type():
    from localjudge.serve.openapi import document
    from localjudge.serve.routes import ENDPOINTS

    doc = document(ENDPOINTS, "m", "0")
    rf = doc["components"]["schemas"]["ChatRequest"]["properties"]["response_format"]
    union = rf["anyOf"][0]
    assert union["discriminator"]["propertyName"] == "type"
    assert set(union["discriminator"]["mapping"]) == {"text", "json_object", "json_schema", "grammar"}
    assert doc["components"]["schemas"]["JSONSchemaSpec"]["required"] == ["schema"]
