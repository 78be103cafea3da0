"""Which keywords serve relaxes is read from the compiler's refusal as data (`SchemaError.unimplemented`, set where
llguidance answered), never searched for in the refusal's message, which may quote the client's own schema (issue 44
part 4). Relaxation itself is tested with a real server in test_serve_relaxed_schemas.py."""

from __future__ import annotations

import pytest

from localjudge.constraints.sandbox import CompileLimits
from localjudge.formats import JSONSchemaFormat, SchemaError
from localjudge.serve.core import schemas
from localjudge.serve.core.checked import CheckedFormat
from localjudge.serve.core.schemas import FormatCache

UNIQUE = {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3, "uniqueItems": True}
OVERLAP = {"oneOf": [{"type": "object"}, {"type": "object", "properties": {"a": {"type": "string"}}}]}


def _cache() -> FormatCache:
    return FormatCache(None, None, CompileLimits(None, None))


@pytest.mark.parametrize(
    ("schema", "keywords"),
    [
        (UNIQUE, {"uniqueItems"}),
        (OVERLAP, {"oneOf"}),
        ({"type": "object", "properties": {"a": {"type": "integer"}}, "if": {"required": ["a"]}, "then": {}}, {"if", "then"}),
    ],
)
def test_a_refusal_by_the_compiler_carries_the_keywords_it_names(schema, keywords):
    with pytest.raises(SchemaError) as e:
        JSONSchemaFormat(schema, constraint="llguidance")
    assert e.value.unimplemented == frozenset(keywords)


def test_a_refusal_about_something_else_carries_no_keyword_even_when_its_message_quotes_one():
    schema = {"type": "string", "pattern": '"not"('}  # a bad regex, quoted back in the refusal
    with pytest.raises(SchemaError) as e:
        JSONSchemaFormat(schema, constraint="llguidance")
    assert '"not"' in str(e.value)
    assert e.value.unimplemented == frozenset()


def test_relaxation_follows_the_keywords_the_refusal_carries():
    fmt = _cache().get(UNIQUE, "colours")
    assert isinstance(fmt, CheckedFormat)
    assert fmt.relaxed_keywords == ("uniqueItems",)
    assert "uniqueItems" not in fmt.schema and fmt.original == UNIQUE


def test_a_message_naming_a_keyword_without_the_keywords_as_data_is_not_relaxed(monkeypatch):
    """A refusal whose text reads like llguidance's but which carries no keywords is answered as it is."""
    worded = SchemaError('response schema: Unimplemented keys: ["uniqueItems"] cannot be honoured by constrained decoding')

    def refuse(*args, **kwargs):
        raise worded

    monkeypatch.setattr(schemas, "JSONSchemaFormat", refuse)
    with pytest.raises(SchemaError) as e:
        _cache().get(UNIQUE, "colours")
    assert e.value is worded


def test_the_keywords_as_data_choose_the_relaxation_whatever_the_message_says(monkeypatch):
    refused = SchemaError("response schema: refused", unimplemented=frozenset({"uniqueItems"}))
    real = schemas.JSONSchemaFormat

    def refuse_first(schema, **kw):
        if schema == UNIQUE:
            raise refused
        return real(schema, **kw)

    monkeypatch.setattr(schemas, "JSONSchemaFormat", refuse_first)
    fmt = _cache().get(UNIQUE, "colours")
    assert isinstance(fmt, CheckedFormat) and fmt.relaxed_keywords == ("uniqueItems",)


@pytest.mark.system
def test_a_refusal_from_the_compile_child_carries_the_same_keywords():
    from localjudge.serve.core.compile_guard import CompileGuard

    guard = CompileGuard(workers=1)
    try:
        for schema, keywords in ((UNIQUE, {"uniqueItems"}), (OVERLAP, {"oneOf"})):
            for _ in range(2):  # asked, then from the guard's cache
                with pytest.raises(SchemaError) as e:
                    guard.grammar("schema", schema, SchemaError)
                assert e.value.unimplemented == frozenset(keywords)
        assert guard.asked == 2
    finally:
        guard.close()
