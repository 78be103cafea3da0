"""Issue 29: no client grammar or schema reaches llguidance unbounded, so none can kill `localjudge serve`.

A Lark rule chain 3,000 deep, or a JSON schema `$ref` chain as deep (in `response_format`, a tool's
parameters, or a Lark `%json` block), overflowed llguidance's stack during request planning and
killed the server (a segfault). Each is now a 400 naming the bound, and the server answers the next
request. A bounded hypothesis run sends deep, wide and recursive grammars and schemas to one live
server: every answer is a 200 or a 400, and the server is alive afterwards."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_support import assert_openai_error, healthy, post, start_server

from localjudge.constraints import llg_bounds
from localjudge.formats.grammar import GrammarError

MODEL = "smollm2-135m"
MSG = [{"role": "user", "content": "Answer."}]
FUZZ_SECONDS = 75  # the whole hypothesis run stops sending after this


@pytest.fixture(scope="module")
def server(_localjudge_home):
    """One server of its own (one thread), so that a crash here is seen here."""
    s = start_server("--no-precompile", "--option", "n_threads=1", "--compile-timeout", "20")
    yield s
    s.stop()


def lark_chain(n: int) -> str:
    """The issue's grammar: `r0: r1 "a" | "b"`, `r1: r2 "a" | "b"`, ... `n` rules deep."""
    return "\n".join(["start: r0", *(f'r{i}: r{i + 1} "a" | "b"' for i in range(n)), f'r{n}: "a"'])


def ref_chain(n: int) -> dict:
    """A schema whose `$defs` chain `n` arrays deep through `$ref`s (each level is 2 steps)."""
    defs: dict = {f"d{i}": {"type": "array", "items": {"$ref": f"#/$defs/d{i + 1}"}, "maxItems": 1} for i in range(n)}
    defs[f"d{n}"] = {"type": "boolean"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def nested_items(n: int) -> dict:
    """An array of arrays ... `n` deep, inline."""
    s: dict = {"type": "boolean"}
    for _ in range(n):
        s = {"type": "array", "items": s, "maxItems": 1}
    return s


def nested_any_of(n: int) -> dict:
    """`anyOf` inside `anyOf` ... `n` deep, through `$ref`s."""
    defs: dict = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"type": "null"}]} for i in range(n)}
    defs[f"d{n}"] = {"type": "boolean"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def recursive_tree(width: int) -> dict:
    """A recursive schema (a node holds nodes), `width` properties wide."""
    props = {f"p{i}": {"type": "boolean"} for i in range(width)}
    node = {
        "type": "object",
        "properties": {**props, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 1}},
    }
    return {"$defs": {"node": node}, "$ref": "#/$defs/node"}


def grammar_rf(grammar: str) -> dict:
    return {"type": "grammar", "grammar": grammar}


def schema_rf(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}


def tool_body(schema: dict) -> dict:
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    return {"tools": [tool], "tool_choice": {"type": "function", "function": {"name": "f"}}}


def ask(url: str, max_tokens: int = 16, **extra) -> tuple[int, dict]:
    status, body, _ = post(url, {"model": MODEL, "messages": MSG, "max_tokens": max_tokens, **extra}, timeout=120)
    return status, body


def alive_and_answering(url: str) -> None:
    """The server answers /health and a plain small grammar request with a 200."""
    healthy(url)
    status, body = ask(url, response_format=grammar_rf('start: "yes" | "no"'))
    assert status == 200 and body["choices"][0]["message"]["content"] in ("yes", "no"), body


@pytest.mark.system
def test_a_3000_deep_lark_rule_chain_is_a_400_naming_the_bound_and_the_server_lives(server):
    status, body = ask(server.url, response_format=grammar_rf(lark_chain(3000)))
    assert_openai_error(status, body, 400, "rule references chain 3002 steps deep", "limit of 200", param="response_format")
    alive_and_answering(server.url)


@pytest.mark.system
def test_a_3000_deep_schema_chain_is_a_400_in_response_format_tools_and_lark_json(server):
    schema = ref_chain(3000)
    status, body = ask(server.url, response_format=schema_rf(schema))
    assert_openai_error(status, body, 400, "6001 steps deep", "limit of 200", param="response_format")
    status, body = ask(server.url, **tool_body(schema))
    assert_openai_error(status, body, 400, "6001 steps deep", "limit of 200", param="tools[0].function.parameters")
    status, body = ask(server.url, response_format=grammar_rf("start: %json " + json.dumps(schema)))
    assert_openai_error(status, body, 400, "6003 steps deep", "limit of 200", param="response_format")
    status, body = ask(server.url, response_format=schema_rf(nested_any_of(3000)))
    assert_openai_error(status, body, 400, "steps deep", "limit of 200", param="response_format")
    alive_and_answering(server.url)


@pytest.mark.system
def test_grammars_and_schemas_inside_the_bounds_are_still_answered(server):
    for extra in (
        {"response_format": grammar_rf(lark_chain(150))},
        {"response_format": grammar_rf('start: expr\nexpr: "(" expr ")" | "x"')},  # recursive: a cycle is finite
        {"response_format": schema_rf(ref_chain(60))},
        {"response_format": schema_rf(recursive_tree(3))},
        tool_body(nested_items(20)),
        {"response_format": grammar_rf('start: "v=" v\nv: %json {"type": "integer", "minimum": 0, "maximum": 9}')},
    ):
        status, body = ask(server.url, max_tokens=64, **extra)
        assert status == 200, (list(extra), body)


def test_the_bounds_count_the_longest_chain_and_cycles_once_without_recursion():
    chain, depth = llg_bounds.longest_chain({"a": ["b"], "b": ["c", "a"], "c": ["d"], "d": []}, lambda _n: 1)
    assert chain == 4 and depth[0] in ("a", "b")  # a and b form one cycle (weight 2), then c, then d
    refs, json_depth = llg_bounds.lark_rules(
        'start: a // b is a comment\n  | "b: not a rule" /c\\/d/ x\na: %json {"items": {"items": {}}}\n%ignore " "\nx: "x"'
    )
    assert refs == {"start": ["a", "x"], "a": [], "x": []} and json_depth["a"] == 3
    with pytest.raises(GrammarError, match="rule references chain 9002 steps deep"):
        llg_bounds.check_lark(lark_chain(9_000), GrammarError)  # far past Python's recursion limit


# the hypothesis run: deep, wide and recursive grammars and schemas, through every path, against one server
sizes = st.one_of(st.integers(1, 40), st.integers(150, 260), st.integers(2_500, 3_500))
lark_grammars = st.one_of(
    st.builds(lark_chain, sizes),
    st.builds(
        lambda n: "start: " + " | ".join(f"r{i}" for i in range(n)) + "\n" + "\n".join(f'r{i}: "w{i}"' for i in range(n)), sizes
    ),
    st.builds(lambda n: "start: " + "(" * n + '"a"' + ")" * n, sizes),
    st.builds(lambda n: "start: r0\n" + "\n".join(f'r{i}: "(" r{(i + 1) % n} ")" | "x"' for i in range(n)), sizes),
)
inline = st.one_of(st.integers(1, 40), st.integers(150, 260), st.integers(600, 800))  # a request body nests inline ones
schemas = st.one_of(st.builds(ref_chain, sizes), st.builds(nested_items, inline), st.builds(nested_any_of, sizes))
schemas |= st.builds(recursive_tree, sizes)
requests = st.one_of(
    lark_grammars.map(lambda g: {"response_format": grammar_rf(g)}),
    schemas.map(lambda s: {"response_format": schema_rf(s)}),
    schemas.map(tool_body),
    schemas.map(lambda s: {"response_format": grammar_rf("start: %json " + json.dumps(s))}),
)


@pytest.mark.system
def test_deep_wide_and_recursive_grammars_and_schemas_are_answered_200_or_400_and_the_server_lives(server):
    deadline = time.monotonic() + FUZZ_SECONDS
    seen: list[int] = []

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
    @given(requests)
    def one(extra: dict) -> None:
        if time.monotonic() > deadline:
            return
        status, body = ask(server.url, max_tokens=8, **extra)  # a dropped connection raises here
        seen.append(status)
        assert status in (200, 400), body
        if status == 400:
            assert set(body["error"]) == {"message", "type", "param", "code"} and "\n" not in body["error"]["message"]

    one()
    assert 200 in seen and 400 in seen, seen
    alive_and_answering(server.url)
