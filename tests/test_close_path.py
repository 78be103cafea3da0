"""The llguidance close path past greedy closing (issue 23's coverage goal): pattern needles and formats a
greedy walk loops on, objects that closing them made unsatisfiable under allOf/anyOf/oneOf, llguidance's
own size bounds, and the bound on the search. Each schema here was declined before its fix; answers come
from the real default model and are checked with the `jsonschema` package."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from localjudge.constraints.llg_search import search, witness
from localjudge.engine import Message
from localjudge.engine.base import DecodeOptions
from localjudge.errors import ConstraintError
from localjudge.formats import JSONSchemaFormat, SchemaError

ASK = [Message(role="user", content="Describe a network interface of a device as JSON.")]

NEEDLES = {  # greedy closing writes `}}}}...` into `kind` and `0000...` into `ref`: neither ever closes
    "type": "object",
    "properties": {
        "kind": {"type": "string", "pattern": "wifi"},
        "ref": {"type": "string", "pattern": "^Z\\d{6}$"},
        "born": {"type": "string", "format": "date"},
    },
    "required": ["kind", "ref", "born"],
}


def llg(schema: dict) -> JSONSchemaFormat:
    return JSONSchemaFormat(schema, constraint="llguidance")


def answer(engine, schema: dict, **opts) -> object:
    gen = engine.generate(ASK, llg(schema), DecodeOptions(**opts))
    value = json.loads(gen.text)
    jsonschema.validate(value, schema)
    return value


@pytest.mark.system
def test_pattern_needles_and_formats_that_greedy_closing_loops_on_are_completed_and_answered(engine):
    compiled = engine.compile(llg(NEEDLES))
    m = compiled.start(None, engine.vocab).m  # the start path is a real completion of a fresh matcher
    assert m.consume_tokens(compiled.path) and m.is_accepting() and compiled.shortest == len(compiled.path)
    text = b"".join(engine.vocab.pieces[t] for t in compiled.path).decode()
    jsonschema.validate(json.loads(text), NEEDLES)
    value = answer(engine, NEEDLES)
    assert isinstance(value, dict) and "wifi" in value["kind"]


@pytest.mark.system
@pytest.mark.parametrize(
    "schema",
    [
        {  # two closed definitions merged by allOf allowed no value
            "type": "object",
            "properties": {"value": {"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]}},
            "required": ["value"],
            "$defs": {
                "A": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                "B": {"type": "object", "properties": {"y": {"type": "number"}}, "required": ["y"]},
            },
        },
        {  # anyOf branches naming some properties, merged with a parent that requires others
            "type": "object",
            "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "integer"}},
            "required": ["kind", "n"],
            "anyOf": [
                {"properties": {"kind": {"const": "a"}, "extra": {"type": "string"}}},
                {"properties": {"kind": {"const": "b"}}},
            ],
        },
        {  # the same with oneOf (a JSON Patch operation)
            "type": "object",
            "required": ["op", "path"],
            "properties": {"path": {"type": "string"}},
            "oneOf": [
                {"properties": {"op": {"enum": ["add"]}, "value": {"type": "integer"}}, "required": ["value"]},
                {"properties": {"op": {"enum": ["remove"]}}},
            ],
        },
    ],
    ids=["allOf-refs", "anyOf-beside-required", "oneOf-beside-required"],
)
def test_objects_merged_by_a_combiner_are_not_closed_into_an_unsatisfiable_schema(engine, schema):
    answer(engine, schema, max_tokens=96)  # merged objects stay open: the model may add keys up to the budget


def test_llguidance_bounds_one_object_and_one_enum_where_the_automaton_bounds_the_totals():
    deep: dict = {"type": "integer"}
    for _ in range(20):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
    wide = {
        "type": "object",
        "properties": {
            f"o{j}": {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(150)}} for j in range(2)
        },
    }
    enums = {"type": "object", "properties": {f"e{j}": {"enum": [f"v{i}" for i in range(600)]} for j in range(3)}}
    for schema, why in ((deep, "nesting deeper than 12"), (wide, "more than 256 properties"), (enums, "more than 1000 enum")):
        assert llg(schema).llg_grammar()
        with pytest.raises(SchemaError, match=why):
            JSONSchemaFormat(schema, constraint="automaton")
    with pytest.raises(SchemaError, match="more than 256 properties in one object"):
        llg({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(257)}})
    for _ in range(15):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
    with pytest.raises(SchemaError, match="nesting deeper than 32"):
        llg(deep)


@pytest.mark.system
def test_a_schema_the_bounded_search_cannot_complete_is_declined_in_one_line(engine):
    lexer_gives_up = {  # llguidance's lexer allows no byte inside this string: no completion exists for it
        "type": "object",
        "properties": {"q": {"type": "string", "minLength": 1, "maxLength": 5000, "pattern": "^$|(^(?:\\S+\\s+){0,99}\\S+$)"}},
        "required": ["q"],
    }
    with pytest.raises(ConstraintError, match="no completion") as e:
        engine.compile(llg(lexer_gives_up))
    assert "\n" not in str(e.value)
    compiled = engine.compile(llg(NEEDLES))
    fresh = compiled.start(None, engine.vocab).m
    assert search(compiled.lv, fresh, 600, 0) is None  # no budget, no search
    assert search(compiled.lv, fresh, 600, 20_000, compiled.literals) is not None
    assert search(compiled.lv, fresh, 10, 20_000, compiled.literals) is None  # nothing fits 10 tokens


@pytest.mark.parametrize(
    "pattern",
    [
        "^Z\\d{6}$",
        "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}",
        "^iglu:[a-z]+/[a-z_]+/jsonschema/[0-9]+-[0-9]+-[0-9]+$",
        "^(a|bb)c?$",
        "[^\\s@]+@[^\\s@]+",
    ],
)
def test_the_search_tries_a_string_each_pattern_matches(pattern):
    w = witness(pattern)
    assert w is not None and re.search(pattern, w)


IGLU = {  # llguidance forces the pattern's `iglu` prefix itself: the witness `iglu:a/a/a/0-0-0` must resume after it
    "type": "object",
    "properties": {
        "data": {},
        "schema": {"type": "string", "pattern": "^iglu:[a-zA-Z0-9-_.]+/[a-zA-Z0-9-_]+/[a-zA-Z0-9-_]+/[0-9]+-[0-9]+-[0-9]+$"},
    },
    "required": ["data", "schema"],
    "additionalProperties": False,
}
IGLU_PAIR = {
    "type": "object",
    "properties": {"command": IGLU, "envelope": IGLU},
    "required": ["command", "envelope"],
    "additionalProperties": False,
}


@pytest.mark.system
def test_a_pattern_witness_whose_prefix_the_grammar_forced_is_written_from_where_the_prefix_ends(engine):
    # before: the search could only start the witness at the string's first byte, wrote `iglu:` + separators a byte
    # at a time, took `iglu:0/0/` for the state of `iglu:00/0` and spent its whole work bound (declined)
    compiled = engine.compile(llg(IGLU_PAIR))
    text = b"".join(engine.vocab.pieces[t] for t in compiled.path).decode()
    jsonschema.validate(json.loads(text), IGLU_PAIR)
    assert text.count('"iglu:a/a/a/0-0-0"') == 2
    answer(engine, IGLU_PAIR, max_tokens=96)


@pytest.mark.system
def test_compile_walks_greedy_closing_once(engine, monkeypatch):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}  # a short greedy path
    from localjudge.constraints.llg import LLGCompiled, LLGEngine

    walks: list[int] = []
    real = LLGCompiled.greedy

    def counted(self, *a, **k):
        walks.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(LLGCompiled, "greedy", counted)
    grammar = llg(schema).constraint().grammar
    c = LLGEngine().vocab(engine.vocab).compile(grammar)
    assert c.path and len(walks) == 1  # start_path's walk is handed on, not repeated by close_path (was 2)
