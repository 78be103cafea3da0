"""Issue 32: a schema with keywords constrained decoding cannot express is answered, and only validly.

`uniqueItems`, `not`, `if`/`then`, `dependencies` and an overlapping `oneOf` used to be a 400; serve now
constrains on the nearest schema llguidance compiles, checks the answer against the schema as sent (the
`jsonschema` package), repairs or resamples within a bounded number of tries, and answers 400 naming the
keyword when no try validates. Real server on a loopback port, the default model, one thread."""

from __future__ import annotations

import json

import jsonschema
import pytest
from serve_support import assert_openai_error, post, serve_inprocess

from localjudge.constraints import relax
from localjudge.formats import JSONSchemaFormat, SchemaError

MODEL = "smollm2-135m"

SCHEMAS = {
    "oneOf-overlap": {  # an object with both keys would match both branches
        "oneOf": [
            {"type": "object", "properties": {"url": {"type": "string", "maxLength": 30}}, "required": ["url"]},
            {"type": "object", "properties": {"path": {"type": "string", "maxLength": 30}}, "required": ["path"]},
        ]
    },
    "uniqueItems": {
        "type": "array",
        "items": {"enum": ["red", "green", "blue"]},
        "minItems": 2,
        "maxItems": 3,
        "uniqueItems": True,
    },
    "not": {"type": "object", "properties": {"n": {"type": "integer", "not": {"const": 0}}}, "required": ["n"]},
    "if-then": {
        "type": "object",
        "properties": {"kind": {"enum": ["circle", "square"]}, "radius": {"type": "integer", "minimum": 1}},
        "required": ["kind"],
        "if": {"properties": {"kind": {"const": "circle"}}},
        "then": {"required": ["radius"]},
    },
    "dependencies": {
        "type": "object",
        "properties": {"card": {"type": "string", "maxLength": 12}, "address": {"type": "string", "maxLength": 20}},
        "required": ["card"],
        "dependencies": {"card": ["address"]},
    },
    "if-then per kind": {  # the two `then`s together allow no value (kind circle and square): one pair is picked
        "type": "object",
        "properties": {"kind": {"enum": ["circle", "square"]}, "radius": {"type": "integer"}, "side": {"type": "integer"}},
        "allOf": [
            {
                "if": {"properties": {"kind": {"const": "circle"}}},
                "then": {"properties": {"kind": {"const": "circle"}}, "required": ["radius"]},
            },
            {
                "if": {"properties": {"kind": {"const": "square"}}},
                "then": {"properties": {"kind": {"const": "square"}}, "required": ["side", "kind"]},
            },
        ],
    },
    "$ref into then": {  # relaxing moves `then` into allOf: the reference must still resolve
        "type": "object",
        "properties": {"size": {"$ref": "#/then/$defs/size"}},
        "required": ["size"],
        "if": {"properties": {"size": {"const": 5}}},
        "then": {"$defs": {"size": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["size"]},
    },
    "contains": {"type": "array", "items": {"type": "integer"}, "maxItems": 4, "contains": {"type": "integer"}},
    "propertyNames": {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "propertyNames": {"maxLength": 40},
        "maxProperties": 2,
    },
}


@pytest.fixture(scope="module")
def server(_localjudge_home):
    """`localjudge serve --no-precompile --option n_threads=1`'s app, in this process (`serve_inprocess`)."""
    with serve_inprocess("--no-precompile", "--option", "n_threads=1") as app:
        yield app


def ask(url, schema: dict, stream: bool = False) -> tuple[int, dict | bytes]:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Answer with one JSON instance of this schema:\n" + json.dumps(schema)}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}},
        "max_tokens": 96,
        "temperature": 0,
        "stream": stream,
    }
    status, out, _ = post(url, body)
    return status, out


@pytest.mark.system
@pytest.mark.parametrize("family", list(SCHEMAS))
def test_a_schema_llguidance_refuses_is_answered_valid(server, family):
    schema = SCHEMAS[family]
    status, body = ask(server, schema)
    assert status == 200, body
    assert isinstance(body, dict)
    jsonschema.validate(json.loads(body["choices"][0]["message"]["content"]), schema)


@pytest.mark.system
def test_a_relaxed_schema_streams_its_valid_answer_whole(server):
    schema = SCHEMAS["uniqueItems"]
    status, raw = ask(server, schema, stream=True)
    assert status == 200
    assert isinstance(raw, bytes)
    events = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: {")]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))
    jsonschema.validate(json.loads(text), schema)


@pytest.mark.system
def test_a_schema_no_answer_can_satisfy_is_a_400_naming_the_keyword(server):
    schema = {"type": "array", "items": {"enum": ["only"]}, "minItems": 2, "maxItems": 3, "uniqueItems": True}
    status, body = ask(server, schema)
    assert_openai_error(status, body, 400, "uniqueItems", "no answer valid", "tries", param="response_format")


@pytest.mark.system
def test_a_streamed_request_no_answer_can_satisfy_is_a_plain_400_before_any_event(server):
    schema = {"type": "array", "items": {"enum": ["only"]}, "minItems": 2, "maxItems": 3, "uniqueItems": True}
    status, body = ask(server, schema, stream=True)
    assert_openai_error(status, body, 400, "uniqueItems", "no answer valid", param="response_format")


def test_relaxing_keeps_every_instance_of_the_original_and_records_what_changed():
    r = relax.relax(SCHEMAS["if-then"], {"if", "then"})
    assert r.keywords == ("if", "then")
    assert r.schema["allOf"] == [{"required": ["radius"]}]  # "then" implies "if then then"
    d = relax.relax(SCHEMAS["dependencies"], {"dependencies"})
    assert d.schema["required"] == ["card", "address"] and "dependencies" not in d.schema
    o = relax.relax(SCHEMAS["oneOf-overlap"], {"oneOf"}, strengthen=False)
    assert o.schema["anyOf"] == SCHEMAS["oneOf-overlap"]["oneOf"] and o.keywords == ("oneOf",)


def test_one_if_then_pair_of_an_allof_is_made_to_hold_when_all_their_thens_together_allow_no_value():
    schema = SCHEMAS["if-then per kind"]
    with pytest.raises(SchemaError, match="nsatisfiable"):  # every `then` joined: circle and square at once
        JSONSchemaFormat(relax.relax(schema, {"if", "then"}).schema, constraint="llguidance")
    r = relax.relax(schema, {"if", "then"}, pick=True)
    circle, square = schema["allOf"]
    assert r.keywords == ("if", "then")
    # the smallest `then` (circle's) holds with the property its `if` names present; square's pair is left to the check
    assert r.schema["allOf"] == [{"allOf": [{**circle["if"], "required": ["kind"]}, circle["then"]]}, {}]
    JSONSchemaFormat(r.schema, constraint="llguidance")
    jsonschema.validate({"kind": "circle", "radius": 2}, r.schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"radius": 2}, r.schema)  # without `kind` both `if`s hold vacuously: not an instance


@pytest.mark.parametrize("pick", [False, True])
@pytest.mark.parametrize("strengthen", [True, False])
def test_a_reference_into_a_relaxed_keyword_resolves_in_the_relaxed_schema(strengthen, pick):
    schema = SCHEMAS["$ref into then"]
    r = relax.relax(schema, {"if", "then"}, strengthen=strengthen, pick=pick)
    assert r.schema["properties"]["size"] == {"$ref": f"#/$defs/{relax.REHOMED}0"}
    assert r.schema["$defs"][f"{relax.REHOMED}0"] == schema["then"]["$defs"]["size"]
    JSONSchemaFormat(r.schema, constraint="llguidance")  # before: "Pointer '/then/$defs/size' does not exist"
    assert relax.relax({"properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}}, {"if"}).schema == {
        "properties": {"a": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {}},
    }  # a reference that no relaxed keyword holds is left as it is


def test_references_into_a_relaxed_keyword_copy_a_bounded_amount_in_all():
    # `then` nests 30 levels, each with 500 enum values; a reference to each level would copy that level and every
    # one under it: 232,500 values from a schema of 15,000
    level: dict = {"enum": list(range(500))}
    for _ in range(29):
        level = {"items": level, "enum": list(range(500))}
    refs = [{"$ref": "#/then" + "/items" * k} for k in range(30)]
    schema = {"if": {"type": "array"}, "then": level, "anyOf": refs}
    assert relax._rehome(schema) is schema  # over REHOME_NODES: left as it was (its relaxed variants fail to compile)
    small = {**schema, "anyOf": refs[20:]}  # 10 references: 27,500 values copied
    out = relax._rehome(small)
    assert out is not small and len([k for k in out["$defs"] if k.startswith(relax.REHOMED)]) == 10
    relax.relax(schema, {"if", "then"})  # relaxing still returns
