"""The close path from the start read off the schema itself (constraints/llg_minimal.py): an object with many
optional properties was closed by writing them all (greedy closing writes the key that sorts first), and a
request whose max_tokens the required properties alone fit was refused. Real default model, real server."""

from __future__ import annotations

import json

import jsonschema
import pytest
from serve_support import post, serve_inprocess

from localjudge.constraints import llg_minimal
from localjudge.formats import JSONSchemaFormat

# forty optional properties before the two required ones: greedy closing writes every one of them (it prefers
# the bytes of `llg_search.FIRST_ORDER`, `a` among them, to `l` and `w`)
OPTIONAL = {f"a{i:02d}_{'x' * 12}": {"type": "string"} for i in range(40)}
MANY_OPTIONAL = {
    "type": "object",
    "properties": {**OPTIONAL, "label": {"type": "string", "minLength": 2}, "width": {"type": "integer", "minimum": 3}},
    "required": ["label", "width"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        (MANY_OPTIONAL, '{"label": "aa", "width": 3}'),
        ({"enum": ["alpha", "b", "gamma"]}, '"b"'),
        ({"anyOf": [{"type": "array", "minItems": 2, "items": {"type": "boolean"}}, {"type": "null"}]}, "null"),
        ({"type": "string", "pattern": "^Z\\d{3}$"}, '"Z000"'),
        ({"type": "string", "format": "date"}, '"2000-01-01"'),
        ({"type": "number", "exclusiveMinimum": 0, "maximum": 10}, "1"),
        ({"type": "integer", "minimum": 5, "multipleOf": 5}, "5"),
        (
            {"$defs": {"p": {"type": "object", "properties": {"x": {"const": 1}}, "required": ["x"]}}, "$ref": "#/$defs/p"},
            '{"x": 1}',
        ),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "minItems": 2,
            },
            '["", 0]',
        ),
        ({"type": "object", "properties": {"b": {"type": "null"}, "a": {"type": "null"}}, "minProperties": 1}, '{"b": null}'),
    ],
)
def test_a_short_instance_is_read_off_the_schema(schema, text):
    assert llg_minimal.instance(schema) == text
    jsonschema.validate(json.loads(text), schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"type": "string"}, {"minLength": 2}]},  # combined meaning is not built here
        {"type": "string", "not": {"const": ""}},
        {"type": "object", "required": ["unnamed"]},  # where llguidance puts a key `properties` does not name
        {"$ref": "#/nowhere"},
        {"type": "string", "minLength": 5, "maxLength": 3},
        {"type": "integer", "minimum": 0.2, "maximum": 0.8},
    ],
)
def test_what_the_reading_does_not_build_is_left_to_the_other_close_paths(schema):
    assert llg_minimal.instance(schema) is None


def test_a_schema_whose_instance_nests_exponentially_is_given_up_after_a_bounded_amount_of_work():
    # each level requires two properties of the level below: 2**14 values within the depth bound, built by no one
    defs = {
        f"l{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/l{i + 1}"}, "b": {"$ref": f"#/$defs/l{i + 1}"}},
            "required": ["a", "b"],
        }
        for i in range(14)
    }
    defs["l14"] = {"type": "integer"}
    schema = {"$defs": defs, "$ref": "#/$defs/l0"}
    assert llg_minimal.instance(schema) is None
    builder = llg_minimal._Builder(schema)
    with pytest.raises(llg_minimal._GiveUp):
        builder.value(schema, 0)
    assert builder.visited == llg_minimal.MAX_NODES + 1  # stopped by its work bound, not by the depth bound


@pytest.mark.system
def test_an_object_of_many_optional_properties_starts_with_its_required_ones_only(engine):
    compiled = engine.compile(JSONSchemaFormat(MANY_OPTIONAL, constraint="llguidance"))
    text = b"".join(engine.vocab.pieces[t] for t in compiled.path).decode()
    assert text == '{"label": "aa", "width": 3}'  # before: all forty optional keys, 536 tokens
    assert compiled.shortest == len(compiled.path) < 20
    m = compiled.start(None, engine.vocab).m
    assert m.consume_tokens(compiled.path) and m.is_accepting()


@pytest.mark.system
def test_a_judge_format_keeps_its_greedy_close_path(engine):
    # short greedy paths (every built-in format's) are kept as they were: only long or failing ones are replaced
    schema = {"type": "object", "properties": {"result": {"enum": ["yes", "no"]}}, "required": ["result"]}
    compiled = engine.compile(JSONSchemaFormat(schema, constraint="llguidance"))
    greedy = compiled.greedy(compiled.start(None, engine.vocab).m, type(compiled.initial)())
    assert compiled.path == greedy


@pytest.fixture(scope="module")
def server(_localjudge_home):
    """`localjudge serve --no-precompile --option n_threads=1`'s app, in this process (`serve_inprocess`)."""
    with serve_inprocess("--no-precompile", "--option", "n_threads=1") as app:
        yield app


@pytest.mark.system  # no server, no socket: the app's compile guard reads the client schema in a child process
def test_a_request_whose_max_tokens_the_required_properties_fit_is_answered(server):
    body = {
        "model": "smollm2-135m",
        "messages": [{"role": "user", "content": "Name a thing and its size as JSON."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "thing", "schema": MANY_OPTIONAL}},
        "max_tokens": 48,  # before: a 400, "too few for the shortest answer the schema allows (536 tokens)"
        "temperature": 0,
    }
    status, out, _ = post(server, body)
    assert status == 200, out
    jsonschema.validate(json.loads(out["choices"][0]["message"]["content"]), MANY_OPTIONAL)
