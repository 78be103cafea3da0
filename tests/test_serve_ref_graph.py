"""Issue 43: no client schema reaches llguidance unchecked, by any of serve's five doors, and a crash inside
llguidance is a 400, never the server's end.

A `$ref` chain 1,500 links long under a keyword the bound checks did not walk (`{"$ref": "#/x/a0", "x": {...}}`)
segfaulted `localjudge serve` through `response_format`, `tools[].function.parameters`, a Lark `%json` block,
Ollama's `format` and `/v1/responses`' `text.format`. The bounds now walk the reference graph (every `$ref`
resolved wherever it points: `constraints.schema_graph`), and llguidance reads every client schema and grammar in
a child process first (`serve.compile_guard`), so a crash nobody knows of yet is a refusal too."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_support import assert_openai_error, healthy, post, start_server

from localjudge.constraints import isolation, llg_bounds, schema_graph
from localjudge.formats.grammar import GrammarError, GrammarFormat
from localjudge.formats.json_schema import SchemaError
from localjudge.serve.core.compile_guard import CompileGuard

MODEL = "smollm2-135m"
MSG = [{"role": "user", "content": "Answer."}]
# CI's run: 120 requests, and no more sent after 60 s (a bound on CI time, not on what is checked); a longer run:
# LOCALJUDGE_FUZZ_EXAMPLES=5000 LOCALJUDGE_FUZZ_SECONDS=3600 pytest tests/test_serve_ref_graph.py -k every_door
FUZZ_EXAMPLES = int(os.environ.get("LOCALJUDGE_FUZZ_EXAMPLES", "120"))
FUZZ_SECONDS = float(os.environ.get("LOCALJUDGE_FUZZ_SECONDS", "60"))


def hidden_chain(n: int, under: str = "x") -> dict:
    """The issue's schema: `n` array links, each `items` a `$ref` to the next, all under the keyword `under`."""
    links: dict = {f"a{i}": {"type": "array", "items": {"$ref": f"#/{under}/a{i + 1}"}} for i in range(n)}
    links[f"a{n}"] = {"type": "string"}
    return {"$ref": f"#/{under}/a0", under: links}


# ------------------------------------------------------------------------------------------------ the graph


@pytest.mark.parametrize("under", ["x", "x-vendor", "components", "properties"])
def test_a_ref_chain_is_counted_wherever_its_links_sit(under):
    assert llg_bounds.schema_depth(hidden_chain(1500, under)) == 3001  # 1,500 links of 2 steps, and the root's $ref
    with pytest.raises(SchemaError, match="3001 steps deep, more than the limit of 200"):
        llg_bounds.check_schema(hidden_chain(1500, under), SchemaError)


def test_json_pointer_escapes_are_followed():
    links = {f"a/{i}~": {"type": "array", "items": {"$ref": f"#/x/a~1{i + 1}~0"}} for i in range(300)}
    links["a/300~"] = {"type": "string"}
    schema = {"$ref": "#/x/a~10~0", "x": links}
    assert llg_bounds.schema_depth(schema) == 601


def test_a_ref_to_a_value_that_is_not_a_schema_is_refused_in_one_line():
    for target, what in ((5, "a number"), ("s", "a string"), ([1], "a list"), (1.5, "a number")):
        schema = {"type": "object", "properties": {"a": {"$ref": "#/x"}}, "x": target}
        with pytest.raises(SchemaError) as e:
            llg_bounds.check_schema(schema, SchemaError, where="response_format")
        assert str(e.value) == (
            f'response_format: $ref "#/x" at $.properties.a points at {what}, not a schema; point it at a schema object'
        )


def test_cycles_and_diamonds_are_walked_once_without_recursion():
    diamond = {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}, {"$ref": "#/$defs/c"}]}, "b": {"$ref": "#/$defs/d"}}}
    diamond["$defs"] |= {"c": {"$ref": "#/$defs/d"}, "d": {"type": "string"}}
    assert llg_bounds.schema_depth({**diamond, "$ref": "#/$defs/a"}) == 4
    cycle = {"x": {"a": {"type": "array", "items": {"$ref": "#/x/b"}}, "b": {"type": "array", "items": {"$ref": "#/x/a"}}}}
    assert llg_bounds.schema_depth({**cycle, "$ref": "#/x/a"}) == 4  # the cycle's 4 subschemas counted once
    deep = hidden_chain(50_000)  # far past Python's recursion limit: the walk is iterative
    assert llg_bounds.schema_depth(deep) == 100_001
    g = schema_graph.build(deep)
    assert len(g.edges) == 100_002


# ------------------------------------------------------------------------------------------------ the child


@pytest.mark.system
def test_a_crashed_compile_child_is_a_refusal_and_the_next_request_gets_a_fresh_child():
    guard = CompileGuard(workers=1)
    try:
        ok = {"type": "object", "properties": {"a": {"type": "integer"}}}
        assert guard.grammar("schema", ok, SchemaError)
        child = guard._idle.queue[0]
        os.kill(child.proc.pid, signal.SIGSEGV)  # what llguidance did to the server; now to a child only
        child.proc.wait()
        with pytest.raises(SchemaError) as e:
            guard.grammar("schema", {"type": "string", "maxLength": 3}, SchemaError)
        assert "\n" not in str(e.value)
        assert str(e.value).startswith("response schema: the constraint compiler crashed (SIGSEGV) on it; simplify it")
        assert guard.grammar("lark", 'start: "yes" | "no"', GrammarError)  # a fresh child answers
        assert guard.stopped == 1
    finally:
        guard.close()


@pytest.mark.system
def test_a_repeated_schema_asks_the_child_once_and_refusals_are_the_in_process_ones():
    guard = CompileGuard(workers=1)
    try:
        schema = {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}
        first = guard.grammar("schema", schema, SchemaError)
        assert guard.grammar("schema", json.loads(json.dumps(schema)), SchemaError) == first
        assert guard.asked == 1
        bad = "start: a\na: b"  # b is not defined: llguidance's own refusal
        with pytest.raises(GrammarError) as here:
            GrammarFormat(bad)
        with isolation.using(guard), pytest.raises(GrammarError) as there:
            GrammarFormat(bad)
        assert str(there.value) == str(here.value)
        assert guard.asked == 2
    finally:
        guard.close()


@pytest.mark.system
def test_more_questions_than_children_wait_their_turn_and_are_all_answered():
    from concurrent.futures import ThreadPoolExecutor

    guard = CompileGuard(workers=1)
    try:
        schemas = [{"type": "object", "properties": {f"p{i}": {"type": "integer"}}} for i in range(6)]
        with ThreadPoolExecutor(6) as pool:
            grammars = list(pool.map(lambda s: guard.grammar("schema", s, SchemaError), schemas))
        assert len(set(grammars)) == 6 and guard.asked == 6 and guard._started == 1
    finally:
        guard.close()


@pytest.mark.system
def test_a_compile_past_the_time_limit_is_refused_and_not_remembered():
    guard = CompileGuard(workers=1, seconds=0.001)
    try:
        with pytest.raises(SchemaError, match=r"ran past the server's limit of 0.001 s"):
            guard.grammar("schema", {"type": "integer"}, SchemaError)
        guard.seconds = 60.0
        assert guard.grammar("schema", {"type": "integer"}, SchemaError)
    finally:
        guard.close()


# ------------------------------------------------------------------------------------------------ a live server


@pytest.fixture(scope="module")
def server(_localjudge_home):
    """One server of its own (one thread), so that a crash here is seen here."""
    s = start_server("--option", "n_threads=1", "--compile-timeout", "20")
    yield s
    s.stop()


def doors(schema: dict) -> list[tuple[str, dict, str | None]]:
    """The five ways a client schema reaches serve: (path, body, the parameter a 400 names)."""
    rf = {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    lark = {"type": "grammar", "grammar": "start: %json " + json.dumps(schema)}
    base = {"model": MODEL, "messages": MSG, "max_tokens": 16}
    return [
        ("/chat/completions", {**base, "response_format": rf}, "response_format"),
        (
            "/chat/completions",
            {**base, "tools": [tool], "tool_choice": {"type": "function", "function": {"name": "f"}}},
            "tools[0].function.parameters",
        ),
        ("/chat/completions", {**base, "response_format": lark}, "response_format"),
        ("/api/chat", {"model": MODEL, "messages": MSG, "format": schema, "stream": False, "options": {"num_predict": 16}}, None),
        (
            "/responses",
            {
                "model": MODEL,
                "input": "Answer.",
                "max_output_tokens": 16,
                "text": {"format": {**rf["json_schema"], "type": "json_schema"}},
            },
            "text.format",
        ),
    ]


def send(server, path: str, body: dict) -> tuple[int, dict]:
    if path.startswith("/api/"):
        status, out, _ = post(server.url.removesuffix("/v1"), body, path=path, timeout=120)
    else:
        status, out, _ = post(server.url, body, path=path, timeout=120)
    return status, out


def message(out: dict) -> str:
    err = out["error"]
    return err if isinstance(err, str) else err["message"]


def alive_and_answering(server) -> None:
    healthy(server.url)
    rf = {
        "type": "json_schema",
        "json_schema": {"name": "X", "schema": {"type": "object", "properties": {"a": {"type": "boolean"}}}},
    }
    status, out = send(server, "/chat/completions", {"model": MODEL, "messages": MSG, "max_tokens": 16, "response_format": rf})
    assert status == 200, out


@pytest.mark.system
def test_the_issues_hidden_ref_chain_is_a_400_through_all_five_doors_and_the_server_lives(server):
    for path, body, param in doors(hidden_chain(1500)):
        status, out = send(server, path, body)
        assert status == 400, (path, out)
        assert "steps deep" in message(out) and "limit of 200" in message(out), (path, out)
        if param is not None:
            assert_openai_error(status, out, 400, "steps deep", param=param)
        assert server.proc.poll() is None, (path, server.log[-5:])
    alive_and_answering(server)


@pytest.mark.system
def test_a_short_chain_under_any_keyword_is_still_answered(server):
    for path, body, _ in doors(hidden_chain(20)):
        status, out = send(server, path, body)
        assert status == 200, (path, out)


# the hypothesis run: $ref graphs (chains, cycles, diamonds; under known, unknown and x- keywords, $defs,
# definitions and property names; pointer escapes) and deep or wide Lark grammars, through all five doors
keywords = st.sampled_from(["$defs", "definitions", "x", "x-ext", "components", "not_a_keyword", "a/b", "t~x"])


def _esc(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


@st.composite
def ref_graphs(draw) -> dict:
    under = draw(keywords)
    n = draw(st.one_of(st.integers(1, 30), st.integers(90, 130), st.integers(600, 1600)))
    shape = draw(st.sampled_from(["chain", "cycle", "diamond", "alias"]))
    names = [f"n{i}" for i in range(n + 1)]
    ref = [f"#/{_esc(under)}/{x}" for x in names]
    nodes: dict = {}
    for i in range(n):
        nxt = ref[i + 1] if shape != "cycle" or i + 1 < n else ref[0]
        if shape == "diamond":
            nodes[names[i]] = {"anyOf": [{"$ref": nxt}, {"type": "array", "items": {"$ref": nxt}, "maxItems": 1}]}
        elif shape == "alias":
            nodes[names[i]] = {"$ref": nxt}
        else:
            nodes[names[i]] = {"type": ["array", "null"], "items": {"$ref": nxt}, "maxItems": 1}
    nodes[names[n]] = {"type": "boolean"}
    container: dict = {under: nodes}
    if under == "properties":
        container["type"] = "object"
    return {**container, "$ref": ref[0]}


sizes = st.one_of(st.integers(1, 40), st.integers(150, 260), st.integers(2_500, 3_500))
lark_grammars = st.one_of(
    st.builds(lambda n: "\n".join(["start: r0", *(f'r{i}: r{i + 1} "a" | "b"' for i in range(n)), f'r{n}: "a"']), sizes),
    st.builds(lambda n: "start: " + " | ".join(f'"w{i}"' for i in range(n)), sizes),
)


@pytest.mark.system
def test_ref_graphs_and_grammars_through_every_door_are_answered_200_or_400_and_the_server_lives(server):
    deadline = time.monotonic() + FUZZ_SECONDS
    seen: list[int] = []

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
    @given(st.one_of(ref_graphs().map(lambda s: ("schema", s)), lark_grammars.map(lambda g: ("lark", g))), st.integers(0, 4))
    def one(item: tuple[str, object], door: int) -> None:
        if time.monotonic() > deadline:
            return
        kind, value = item
        if kind == "lark":
            path, body = "/chat/completions", {"model": MODEL, "messages": MSG, "max_tokens": 8}
            body["response_format"] = {"type": "grammar", "grammar": value}
        else:
            path, body, _ = doors(value)[door]  # type: ignore[arg-type]
        status, out = send(server, path, body)  # a dropped connection raises here
        seen.append(status)
        assert status in (200, 400), (path, out)
        assert server.proc.poll() is None
        if status == 400:
            assert "\n" not in message(out)

    one()
    assert 200 in seen and 400 in seen, seen
    alive_and_answering(server)
