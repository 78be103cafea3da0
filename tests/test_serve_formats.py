"""What the server and the `server:` backend build on: every JSON format's `json_schema()` describes
exactly what its regex allows (compiled back through `JSONSchemaFormat` it is the same regex), the
schema compiler's counted arrays and decimal steps, and the free-text format."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localjudge.engine import Message
from localjudge.formats import (
    Choice,
    FourLine,
    JSONSchemaFormat,
    PairwiseJSON,
    PlainText,
    ResultJSON,
    SchemaError,
    ScoreJSON,
    ScoreLines,
    Statements,
    VerdictList,
    YesNoJSON,
    make_format,
)
from localjudge.formats.json_schema import validate

JSON_FORMATS = [
    YesNoJSON(),
    YesNoJSON(rationale=False),
    ScoreJSON(),
    ScoreJSON(0, 1, 1),
    ScoreJSON(0, 10, 2, explanation=False),
    ScoreJSON(-2, 2),
    PairwiseJSON(),
    Statements(),
    Statements(max_items=3),
    VerdictList(1),
    VerdictList(4, unsure_value=0.3),
    Choice(["A", "BB", "c d"], rationale=True),
    Choice(["Yes", "No"], values={"Yes": 1, "No": 0}, rationale=True),
    ResultJSON(),
    ResultJSON("int", 1, 10),
    ResultJSON("float", 0, 1, 2),
]
IDS = [f.describe()[:60] for f in JSON_FORMATS]


@pytest.mark.parametrize("fmt", JSON_FORMATS, ids=IDS)
def test_each_json_formats_schema_compiles_back_to_exactly_its_regex(fmt):
    schema = fmt.json_schema()
    assert schema is not None and schema["additionalProperties"] is False
    assert JSONSchemaFormat(schema, field_tokens=fmt.field_tokens).regex() == fmt.regex()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
@pytest.mark.parametrize("fmt", JSON_FORMATS, ids=IDS)
def test_every_text_the_regex_allows_validates_against_the_schema_and_parses(fmt, data):
    text = data.draw(st.from_regex(fmt.regex(), fullmatch=True))
    schema = fmt.json_schema()
    value = JSONSchemaFormat(schema).parse(text).value
    assert validate(value, schema, schema) is None
    fmt.parse(text)  # and the format's own parser reads it


@pytest.mark.parametrize("fmt", [ScoreLines(), FourLine(), Choice(["A", "B"]), PlainText()], ids=lambda f: f.kind)
def test_formats_that_are_not_json_have_no_schema(fmt):
    assert fmt.json_schema() is None


def test_max_items_is_a_counted_repetition_and_min_max_items_exact():
    fmt = JSONSchemaFormat({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}, "maxItems": 2})
    ok = ["[]", "[0]", "[1, 0]"]
    assert all(re.fullmatch(fmt.regex(), t) for t in ok) and not re.fullmatch(fmt.regex(), "[1, 0, 1]")
    exact = JSONSchemaFormat({"type": "array", "items": {"const": "x"}, "minItems": 2, "maxItems": 2})
    assert re.fullmatch(exact.regex(), '["x", "x"]') and not re.fullmatch(exact.regex(), '["x", "x", "x"]')
    with pytest.raises(SchemaError, match="maxItems 1 must be an integer >= minItems"):
        JSONSchemaFormat({"type": "array", "minItems": 2, "maxItems": 1})


def test_multiple_of_is_honoured_as_decimals_on_a_bounded_number_and_refused_otherwise():
    fmt = JSONSchemaFormat({"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.1})
    assert re.fullmatch(fmt.regex(), "0.5") and not re.fullmatch(fmt.regex(), "0.55")
    assert "not a multiple of 0.1" in (validate(0.55, fmt.schema, fmt.schema) or "")
    for bad, why in (
        ({"type": "number", "multipleOf": 0.1}, "with minimum and maximum"),
        ({"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.25}, "only as 1, 0.1"),
        ({"type": "integer", "multipleOf": 5}, "multipleOf on an integer"),
        ({"type": "string", "multipleOf": 2}, "multipleOf on a string"),
    ):
        with pytest.raises(SchemaError, match=why):
            JSONSchemaFormat(bad)


def test_an_object_with_no_properties_and_nothing_else_allowed_is_the_empty_object():
    fmt = JSONSchemaFormat({"type": "object", "properties": {}, "additionalProperties": False})
    assert re.fullmatch(fmt.regex(), "{}") and not re.fullmatch(fmt.regex(), '{"a": 1}')


@pytest.mark.system
def test_plain_text_is_registered_unconstrained_and_bounded_by_its_budget(engine):
    fmt = make_format("text", max_tokens=12)
    assert isinstance(fmt, PlainText) and not fmt.constrained and fmt.max_tokens() == 12
    gen = engine.generate([Message(role="user", content="Write a long poem about the sea.")], fmt)
    assert gen.stop_reason in ("max_tokens", "eos") and gen.n_output_tokens <= 12
    assert fmt.value(fmt.parse(gen.text)) == gen.text
