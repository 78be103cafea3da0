"""The json_schema format: client schemas constrained by construction (token-bounded strings, enforced
integer ranges, every property written), refused features named, parsing validated against the schema."""

from __future__ import annotations

import json
import re
import time
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from localjudge.constraints.automaton import compile_regex
from localjudge.engine import Message
from localjudge.errors import ParseError
from localjudge.formats import JSONSchemaFormat, SchemaError, make_format


class Verdict(BaseModel):
    verdict: Literal["yes", "no", "idk"]
    reason: str | None = None


class Verdicts(BaseModel):  # the shape DeepEval's faithfulness and answer relevancy metrics ask for
    verdicts: list[Verdict]


class Statement(BaseModel):
    statement: str
    reason: str
    verdict: int


class NLIOutput(BaseModel):  # the shape RAGAS's faithfulness asks for
    statements: list[Statement]


class Rating(BaseModel):
    rationale: str
    score: int


RATING = {
    **Rating.model_json_schema(),
    "properties": {"rationale": {"type": "string"}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
}


def full(fmt: JSONSchemaFormat, text: str) -> bool:
    return re.fullmatch(fmt.regex(), text) is not None


def test_strings_are_unbounded_in_the_regex_and_budgeted_in_tokens():
    fmt = JSONSchemaFormat({"type": "object", "properties": {"a": {"type": "string", "maxLength": 1000}}})
    assert "{0,1000}" not in fmt.regex() and "1000" not in fmt.regex()
    assert fmt.n_free_fields() == 1 and fmt.max_tokens() == fmt.field_tokens + 32 + len(fmt.regex()) // 2
    assert JSONSchemaFormat({"type": "string"}, max_tokens=50).max_tokens() == 50


def test_integer_ranges_are_enforced_and_every_property_is_written_in_order():
    fmt = JSONSchemaFormat(RATING)
    assert full(fmt, '{"rationale": "ok", "score": 5}') and full(fmt, '{"rationale": "", "score": 1}')
    assert not full(fmt, '{"rationale": "ok", "score": 6}') and not full(fmt, '{"score": 3, "rationale": "ok"}')
    assert not full(fmt, '{"rationale": "ok"}')


@pytest.mark.parametrize(
    ("schema", "feature"),
    [
        ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "'patternProperties'"),
        ({"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"}, "$ref cycle"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "'pattern'"),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "'uniqueItems'"),
        ({"type": "object", "properties": {"x": {"if": {"type": "string"}}}}, "at $.x: 'if'"),
        ({"type": "integer", "minimum": 5}, "one side only"),
        ({"type": "number", "exclusiveMaximum": 1}, "exclusiveMaximum"),
        ({"$ref": "https://example.com/schema.json"}, "not a local reference"),
        ({"enum": list(range(5000))}, "more than 1000 enum"),
        ({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(300)}}, "more than 256 properties"),
    ],
)
def test_features_that_cannot_be_honoured_are_refused_naming_them(schema, feature):
    with pytest.raises(SchemaError, match=re.escape(feature)) as e:
        JSONSchemaFormat(schema)
    assert "\n" not in str(e.value) and str(e.value).startswith("response schema")


def test_pathological_schemas_are_refused_before_compiling_within_bounded_time():
    deep: dict = {"type": "string"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}}
    huge_enum = {"type": "object", "properties": {f"k{i}": {"enum": [f"v{j}" * 10 for j in range(60)]} for i in range(20)}}
    t0 = time.perf_counter()
    for schema, why in ((deep, "nesting deeper"), (huge_enum, "enum")):
        with pytest.raises(SchemaError, match=why):
            JSONSchemaFormat(schema)
    with pytest.raises(SchemaError, match="bytes, more than"):
        JSONSchemaFormat({"type": "object", "description": "x" * 70_000})
    assert time.perf_counter() - t0 < 5  # refused by static checks: no automaton was built


def test_parse_validates_against_the_schema_and_names_the_first_violation():
    fmt = JSONSchemaFormat(Verdicts.model_json_schema())
    assert fmt.value(fmt.parse('```json\n{"verdicts": [{"verdict": "idk", "reason": null}]}\n```')) == {
        "verdicts": [{"verdict": "idk", "reason": None}]
    }
    with pytest.raises(ParseError, match=r"at \$\.verdicts\[1\]\.verdict: expected one of"):
        fmt.parse('{"verdicts": [{"verdict": "yes"}, {"verdict": "maybe"}]}')
    with pytest.raises(ParseError, match="required property 'verdicts' is missing"):
        fmt.parse('{"statements": []}')
    with pytest.raises(ParseError, match="no JSON value found"):
        fmt.parse("I think yes.")
    assert (
        JSONSchemaFormat(RATING).parse('noise {"rationale": "x", "score": 9} then {"rationale": "y", "score": 2}').value["score"]
        == 2
    )


def test_the_format_is_in_the_one_registry_and_its_spec_holds_the_schema():
    fmt = make_format("json_schema", schema=json.dumps(RATING), field_tokens=32)
    assert fmt.spec() == {"kind": "json_schema", "schema": RATING, "field_tokens": 32, "constraint": "llguidance"}
    assert fmt.describe() == "json_schema(Rating, field_tokens=32)"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_text_the_constraint_allows_validates(data):
    for model in (Verdicts, NLIOutput):
        fmt = JSONSchemaFormat(model.model_json_schema())
        text = data.draw(st.from_regex(fmt.regex(), fullmatch=True))
        model.model_validate(fmt.parse(text).value)


@pytest.mark.system
@pytest.mark.parametrize("model", [Verdicts, NLIOutput, Rating])
def test_real_model_output_under_a_framework_schema_validates(engine, model):
    schema = RATING if model is Rating else model.model_json_schema()
    fmt = JSONSchemaFormat(schema, field_tokens=24)
    compile_regex(fmt.regex(), engine.vocab)
    gen = engine.generate([Message(role="user", content="Is the sky blue? Answer in JSON.")], fmt)
    assert gen.stop_reason == "final" and gen.n_output_tokens <= fmt.max_tokens()
    model.model_validate(fmt.parse(gen.text).value)
