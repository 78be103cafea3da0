"""`serve --alias NAME=MODEL --format FORMAT` and instructor's JSON-mode schema, at the plan (no model needed),
and the CLI's one-line usage errors (exit 2, before any model loads)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from localjudge.serve import json_mode, protocol
from localjudge.serve.core.aliases import AliasError, check_models, parse_aliases

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}


def _plan(body: dict, aliases=None) -> protocol.Plan:
    return protocol.plan(protocol.parse_request(body), field_tokens=80, aliases=aliases)


def test_an_alias_gives_a_request_without_response_format_its_schema(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    aliases = parse_aliases(("strict=judge",), (str(tmp_path / "s.json"),))
    p = _plan({"model": "strict", "messages": [{"role": "user", "content": "hi"}]}, aliases)
    assert p.schema == SCHEMA and p.schema_name == "strict"


def test_the_clients_own_response_format_wins_over_the_alias(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    aliases = parse_aliases(("strict=judge",), (str(tmp_path / "s.json"),))
    body = {"model": "strict", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "text"}}
    assert _plan(body, aliases).schema is None


def test_a_format_kind_and_a_grammar_file_are_alias_formats(tmp_path):
    (tmp_path / "g.lark").write_text('start: "GRADE: " /[CPI]/\n')
    aliases = parse_aliases(("yn=judge", "g=judge"), ("yes_no_json", str(tmp_path / "g.lark")))
    assert _plan({"model": "yn", "messages": [{"role": "user", "content": "x"}]}, aliases).schema is not None
    assert _plan({"model": "g", "messages": [{"role": "user", "content": "x"}]}, aliases).fmt is not None


@pytest.mark.parametrize(
    ("specs", "formats", "words"),
    [
        (("noequals",), ("yes_no_json",), "expected NAME=MODEL"),
        (("a=judge",), (), "give one --format per --alias"),
        (("a=judge",), ("no_such_kind",), "not a *.json schema file"),
        (("a=judge",), ("/nonexistent/s.json",), "cannot read the file"),
        (("a=judge", "a=judge"), ("yes_no_json", "yes_no_json"), "already served"),
    ],
)
def test_a_bad_alias_spec_is_one_line_naming_it(specs, formats, words):
    with pytest.raises(AliasError, match=words.replace("*", r"\*")) as e:
        parse_aliases(specs, formats)
    assert "\n" not in str(e.value)


def test_an_alias_of_another_model_is_refused():
    with pytest.raises(AliasError, match="this server serves 'judge'"):
        check_models(parse_aliases(("a=other",), ("yes_no_json",)), "judge")


@pytest.mark.system
def test_the_cli_refuses_a_bad_alias_in_one_line_with_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "localjudge", "serve", "--alias", "a=judge", "--format", "no_such_kind"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--format 'no_such_kind' (alias a)" in done.stderr


def _instructor_messages(schema: dict) -> list[dict]:
    from instructor.v2.providers.openai.handlers import OpenAIJSONHandler
    from pydantic import create_model

    model = create_model("Verdict", ok=(bool, ...))
    _, kwargs = OpenAIJSONHandler().prepare_request(model, {"messages": [{"role": "user", "content": "Is it ok?"}]})
    assert kwargs["response_format"] == {"type": "json_object"}
    return kwargs["messages"]


def test_json_object_is_constrained_to_the_schema_instructor_states():
    pytest.importorskip("instructor")
    messages = _instructor_messages(SCHEMA)
    p = _plan({"model": "m", "messages": messages, "response_format": {"type": "json_object"}})
    assert p.schema_name == json_mode.SCHEMA_NAME and p.schema["required"] == ["ok"]


def test_json_object_without_a_stated_schema_is_any_object():
    body = {"model": "m", "messages": [{"role": "user", "content": "json please"}], "response_format": {"type": "json_object"}}
    assert _plan(body).schema == {"type": "object"}


def test_a_stated_schema_that_fails_the_bounds_leaves_any_object():
    bad = 'the parsed objects in json that match the following json_schema:\n{"type": "object", "required": 5}\nMake sure to return an instance of the JSON, not the schema itself'
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": bad}, {"role": "user", "content": "x"}],
        "response_format": {"type": "json_object"},
    }
    assert _plan(body).schema == {"type": "object"}
