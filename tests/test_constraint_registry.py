"""Constraints as data: a format declares a typed constraint value, the registry picks the one engine that compiles
it, old module paths still import (with a DeprecationWarning), and one JSON-pointer resolver serves both the
llguidance bounds and serve's schema checks."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from localjudge import constraints
from localjudge.constraints import JSONSchema, Lark, Regex, pointer
from localjudge.errors import ConstraintError, InputError
from localjudge.formats import make_format
from localjudge.serve.core.errors import APIError
from localjudge.serve.core.validate import check_schema

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def test_each_format_declares_a_typed_constraint_value():
    assert isinstance(make_format("yes_no_json").constraint(), Regex)
    assert make_format("yes_no_json").constraint().pattern == make_format("yes_no_json").regex()
    assert isinstance(make_format("json_schema", schema=SCHEMA).constraint(), JSONSchema)  # a client's: llguidance
    assert isinstance(make_format("json_schema", schema=SCHEMA, constraint="automaton").constraint(), Regex)
    grammar = make_format("grammar", grammar='start: "a" | "b"')
    assert isinstance(grammar.constraint(), Lark) and grammar.constraint().source == 'start: "a" | "b"'


def test_constraint_values_are_hashable_and_equal_by_what_compiles():
    assert hash(Regex("a|b")) == hash(Regex("a|b")) and Regex("a|b") != Regex("a")
    one, two = (
        make_format("json_schema", schema=SCHEMA).constraint(),
        make_format("json_schema", schema=dict(SCHEMA)).constraint(),
    )
    assert one == two and len({one, two}) == 1


def test_a_grammar_format_has_no_regex_and_says_its_constraint_is_a_grammar():
    with pytest.raises(ConstraintError, match="constraint is a lark, not a regex"):
        make_format("grammar", grammar='start: "a"').regex()


def test_the_registry_picks_the_automaton_for_a_regex_and_llguidance_for_schemas_and_grammars():
    assert constraints.names()[:2] == ["automaton", "llguidance"]
    assert constraints.engine_for(Regex("a")).name == "automaton"
    assert constraints.engine_for(make_format("json_schema", schema=SCHEMA).constraint()).name == "llguidance"
    assert constraints.engine_for(make_format("grammar", grammar='start: "a"').constraint()).name == "llguidance"
    assert constraints.engine_for(Regex("a")).sandboxed and not constraints.get("llguidance").sandboxed


def test_an_engine_asked_for_a_value_it_does_not_compile_or_an_unknown_engine_is_refused():
    with pytest.raises(ConstraintError, match="'automaton' does not compile Lark"):
        constraints.engine_for(Lark('start: "a"'), "automaton")
    with pytest.raises(InputError, match="unknown constraint engine 'nope'; known: automaton, llguidance"):
        constraints.get("nope")


def test_stored_json_schema_specs_keep_their_keys():
    assert make_format("json_schema", schema=SCHEMA).spec()["constraint"] == "llguidance"
    assert "constraint" not in make_format("json_schema", schema=SCHEMA, constraint="automaton").spec()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("localjudge.engine.constraint", "localjudge.constraints.automaton"),
        ("localjudge.engine.llg", "localjudge.constraints.llg"),
        ("localjudge.engine.llg_search", "localjudge.constraints.llg_search"),
        ("localjudge.formats.llg_bounds", "localjudge.constraints.llg_bounds"),
        ("localjudge.serve.sandbox", "localjudge.constraints.sandbox"),
    ],
)
def test_old_module_paths_import_the_moved_module_with_a_deprecation_warning(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        mod = importlib.import_module(old)
    assert mod is importlib.import_module(new)


def test_the_old_automaton_path_still_gives_the_vocabulary_and_compiler():
    sys.modules.pop("localjudge.engine.constraint", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from localjudge.engine.constraint import Constraint, TokenVocab, compile_regex  # noqa: F401


def test_a_json_pointer_walks_list_indexes_as_well_as_keys():
    schema = {"anyOf": [{"properties": {"x/y": {"type": "string"}}}]}
    assert pointer.resolve(schema, "#/anyOf/0/properties/x~1y") == {"type": "string"}
    assert pointer.resolve(schema, "#/anyOf/1") is None and pointer.resolve(schema, "other#/a") is None
    assert pointer.resolve(schema, "#") is schema


def test_serve_finds_a_ref_loop_through_a_list_index():
    looping = {"anyOf": [{"$ref": "#/anyOf/0"}, {"type": "null"}]}
    with pytest.raises(APIError, match="refers back to itself"):
        check_schema(looping, "response_format")
