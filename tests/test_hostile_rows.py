"""Hostile input rows (issue 43, "no input row ever ends a run"): JSON nested past any parser's recursion, numbers
that are not finite, empty and duplicate conversations, trace files whose spans chain thousands deep or share an
id. A conversation row that cannot be read is one stored row error and every other row is judged and stored; a
trace file that cannot be read is exit 2 with one line naming the file and the field. And the mechanism: every
`json.load(s)` call in the package reads through the bounded reader (`localjudge.jsonio`) or is listed here with
the reason its text is trusted.

The scripted engine stands in for the model: these rows never reach a prompt, and the rows around them need only a
verdict to be stored."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import localjudge
from localjudge.conversations import read_otel_traces
from localjudge.conversations.stored import get_conversation
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError
from localjudge.jsonio import JSONBoundsError, check_value, loads
from localjudge.store.db import Store

GOOD = [{"role": "user", "content": "Capital of France?"}, {"role": "assistant", "content": "Paris."}]


def _engine() -> ScriptedEngine:
    return ScriptedEngine([json.dumps({"rationale": "r", "result": "yes"})], cycle=True)


def _nested_objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _nested_value(depth: int) -> Any:
    v: Any = 1
    for _ in range(depth):
        v = {"a": v}
    return v


def _call(arguments: Any) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
    return [
        {"role": "user", "content": "Look it up."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
        {"role": "assistant", "content": "Done."},
    ]


def _jsonl(path: Path, middle_line: str) -> Path:
    """Three conversation rows: good, the given line, good."""
    first = json.dumps({"id": "before", "messages": GOOD})
    last = json.dumps({"id": "after", "messages": GOOD})
    path.write_text(f"{first}\n{middle_line}\n{last}\n", encoding="utf-8")
    return path


def _judged_around_one_error(tmp_path: Path, data: Any, *needles: str) -> str:
    """Runs `data` (three rows, the middle one bad); asserts the middle is one stored row error and the two around it
    are judged and stored with their conversations; returns the error."""
    out = tmp_path / "r"
    run = localjudge.evaluate(data, ["conversation_completeness"], engine=_engine(), out=out)
    before, bad, after = list(run.results)
    assert before.result.value == "yes" and after.result.value == "yes"
    assert bad.error is not None and "\n" not in bad.error and bad.result.value is None
    for needle in needles:
        assert needle in bad.error, bad.error
    stored = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["error"] is None for r in stored] == [True, False, True]
    with Store(run.store_path) as store:
        assert get_conversation(store, run.run_id, "before") is not None
        assert get_conversation(store, run.run_id, "after") is not None
    return bad.error


@pytest.mark.parametrize(
    ("middle", "needles"),
    [
        ("[" * 100_000 + "]" * 100_000, ["column 'messages'", "nested more than 100 levels deep"]),
        ('{"messages": ' + _nested_objects(3000) + "}", ["column 'messages'", "nested more than 100 levels deep"]),
        (
            json.dumps(_call(_nested_objects(5000))),
            ["messages[1].tool_calls[0].function.arguments", "nested more than 100 levels deep"],
        ),
    ],
    ids=["list-text-100k-deep", "objects-text-3000-deep", "arguments-text-5000-deep"],
)
def test_messages_as_deep_json_text_is_one_row_error_and_the_rows_around_it_are_judged(tmp_path, middle, needles):
    line = json.dumps({"id": "deep", "messages": middle})
    _judged_around_one_error(tmp_path, _jsonl(tmp_path / "d.jsonl", line), *needles)


def test_a_jsonl_row_nested_900_deep_is_one_row_error_and_the_rows_around_it_are_judged(tmp_path):
    call = json.dumps(_call({"x": 0})).replace('{"x": 0}', _nested_objects(900))  # the arguments object, 900 deep
    line = '{"id": "deep", "messages": ' + call + "}"
    _judged_around_one_error(tmp_path, _jsonl(tmp_path / "d.jsonl", line), "d.jsonl:line 2", "nested more than 100 levels deep")


def test_tool_arguments_given_as_a_900_deep_object_is_one_row_error_and_the_rows_around_it_are_judged(tmp_path):
    rows = [{"id": "before", "messages": GOOD}, {"id": "deep", "messages": _call(_nested_value(900))}]
    rows.append({"id": "after", "messages": GOOD})
    _judged_around_one_error(tmp_path, rows, "column 'messages'", "nested more than 100 levels deep")


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ('{"a": 1e400}', "1e400 is not a finite number"),
        ('{"a": NaN}', "NaN is not valid JSON"),
        ('{"a": -Infinity}', "-Infinity is not valid JSON"),
        ({"a": float("nan")}, "a: nan is not a finite number"),
        ({"a": [float("inf")]}, "a[0]: inf is not a finite number"),
    ],
    ids=["overflow", "nan-text", "infinity-text", "nan-value", "inf-value"],
)
def test_tool_arguments_with_a_number_that_is_not_finite_are_a_row_error_naming_the_field(tmp_path, arguments, needle):
    rows = [{"id": "before", "messages": GOOD}, {"id": "bad", "messages": _call(arguments)}, {"id": "after", "messages": GOOD}]
    err = _judged_around_one_error(tmp_path, rows, "messages[1].tool_calls[0].function.arguments: ", needle)
    assert err.startswith("records:row 1: column 'messages': ")


def test_an_empty_conversation_is_a_row_error(tmp_path):
    rows = [{"id": "before", "messages": GOOD}, {"id": "empty", "messages": "[]"}, {"id": "after", "messages": GOOD}]
    err = _judged_around_one_error(tmp_path, rows, "a conversation needs at least one message")
    assert err == "records:row 1: column 'messages': an empty list; a conversation needs at least one message to judge"


def test_a_conversation_whose_id_an_earlier_row_has_is_a_row_error_naming_that_row(tmp_path):
    other = [{"role": "user", "content": "Capital of Spain?"}, {"role": "assistant", "content": "Madrid."}]
    rows = [{"id": "before", "messages": GOOD}, {"id": "before", "messages": other}, {"id": "after", "messages": GOOD}]
    out = tmp_path / "r"
    err = _judged_around_one_error(tmp_path, rows)
    assert err == "records:row 1: id 'before' is also records:row 0's; give each conversation its own id"
    run = localjudge.evaluate(rows, ["conversation_completeness"], engine=_engine(), out=tmp_path / "again")
    with Store(run.store_path) as store:  # the first conversation's transcript is the one stored
        conv = get_conversation(store, run.run_id, "before")
        assert conv is not None and conv.turns[1].content == "Paris."
    assert out.exists()


# ------------------------------------------------------------------------------------------- OpenTelemetry


def _span(span_id: str, parent: str | None, name: str = "step", attrs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"traceId": "ab" * 16, "spanId": span_id, "name": name, "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    if parent:
        s["parentSpanId"] = parent
    if attrs:
        s["attributes"] = attrs
    return s


def _chat(span_id: str, parent: str | None, question: str, answer: str, input_messages: str | None = None) -> dict[str, Any]:
    msgs = input_messages or json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}])
    attrs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": msgs}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": out}},
    ]
    return _span(span_id, parent, "chat m", attrs)


def _otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def test_a_span_parent_chain_3000_deep_is_read_like_a_flat_trace(tmp_path):
    spans = [_span(f"{i:016x}", f"{i - 1:016x}" if i else None) for i in range(3000)]
    spans.append(_chat("f" * 16, f"{2999:016x}", "deep question?", "deep answer."))
    f = tmp_path / "chain.json"
    f.write_text(json.dumps(_otlp(spans)))
    (conv,) = read_otel_traces(f)
    assert [t.content for t in conv.turns] == ["deep question?", "deep answer."]


def _run_otel(path: Path):
    from localjudge.cli import main

    argv = ["run", "--otel-traces", str(path), "-j", "conversation_completeness", "--out", str(path.parent / "o")]
    return CliRunner().invoke(main, [*argv, "-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}'])


def _kvlist(depth: int) -> str:
    """An attribute value whose kvlistValue holds itself `depth` times (four JSON levels each)."""
    return '{"kvlistValue": {"values": [{"key": "k", "value": ' * depth + '{"stringValue": "x"}' + "}]}}" * depth


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000, "deep.json: JSON nested more than 100 levels deep at line 1 column 101"),
        ("deep.jsonl", "[" * 5000 + "]" * 5000, "deep.jsonl line 1: JSON nested more than 100 levels deep"),
        (
            "messages.json",
            json.dumps(_otlp([_chat("a" * 16, None, "q", "a", input_messages="[" * 5000 + "]" * 5000)])),
            "messages.json: gen_ai.input.messages: JSON nested more than 100 levels deep",
        ),
        (
            "kvlist.json",
            json.dumps(_otlp([_chat("a" * 16, None, "q", "a")])).replace('{"stringValue": "chat"}', _kvlist(1000)),
            "kvlist.json: JSON nested more than 100 levels deep",
        ),
    ],
    ids=["json-file", "jsonl-line", "gen_ai.input.messages", "kvlistValue"],
)
def test_deep_json_in_a_trace_file_is_exit_2_with_one_line_naming_the_file_and_field(tmp_path, name, text, needle):
    (tmp_path / name).write_text(text)
    r = _run_otel(tmp_path / name)
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    assert str(tmp_path / needle.split(":", 1)[0].split(" line")[0]) in lines[0] and needle.split(name, 1)[1] in lines[0]


def test_two_spans_with_one_span_id_are_refused_with_one_line(tmp_path):
    spans = [_chat("a" * 16, None, "first?", "first."), _chat("a" * 16, None, "second?", "second.")]
    (tmp_path / "dup.json").write_text(json.dumps(_otlp(spans)))
    r = _run_otel(tmp_path / "dup.json")
    assert r.exit_code == 2, r.output
    assert f"{tmp_path / 'dup.json'}: OpenTelemetry span #1 has span id '{'a' * 16}', as span #0 has" in r.output
    assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1


def test_a_trace_given_from_python_is_bounded_before_it_is_walked():
    from localjudge.agent.trace import load_trace
    from localjudge.conversations import from_otel

    spans = [{"traceId": "t", "spanId": "1", "name": "x", "attributes": _nested_value(3000)}]
    with pytest.raises(InputError, match=r"^trace: spans\[0\]\.attributes(\.a)+: nested more than 100 levels deep"):
        load_trace({"spans": spans})
    kv: Any = {"stringValue": "x"}
    for _ in range(3000):  # an attribute value holding itself: the reader's walk over it recursed
        kv = {"kvlistValue": {"values": [{"key": "k", "value": kv}]}}
    spans = [{"traceId": "t", "spanId": "1", "name": "x", "attributes": [{"key": "k", "value": kv}]}]
    with pytest.raises(InputError, match=r"^OpenTelemetry trace: spans\[0\]\.attributes\[0\]\.value\.kvlistValue"):
        from_otel({"spans": spans})


# ------------------------------------------------------------------------------------------------ the reader


def test_the_bounded_reader_refuses_depth_before_parsing_and_non_finite_numbers_when_asked():
    with pytest.raises(JSONBoundsError, match=r"^JSON nested more than 3 levels deep at line 2 column 3 \(the limit\)$"):
        loads('[[\n [["x"]]]]', max_depth=3)
    assert loads('["[[[[", {"a": "]]]]"}]', max_depth=2) == ["[[[[", {"a": "]]]]"}]  # brackets in strings are text
    assert loads(b"[1e400, NaN]") == [float("inf"), pytest.approx(float("nan"), nan_ok=True)]  # as json.loads, unless asked
    for text in ("[1e400]", "[NaN]", "[Infinity]", "[-1e999]"):
        with pytest.raises(JSONBoundsError) as e:
            loads(text, finite=True)
        assert e.value.kind == "not_finite"
    with pytest.raises(JSONBoundsError, match=r"^12 bytes of JSON, more than the limit of 4$") as e:
        loads('"0123456789"', max_bytes=4)
    with pytest.raises(JSONBoundsError) as e:
        loads(b"\xff")
    assert e.value.kind == "not_utf8"
    with pytest.raises(JSONBoundsError, match=r"^b\[0\]: nested more than 2 levels deep"):
        check_value({"a": 1, "b": [{"c": [1]}]}, max_depth=2)
    check_value(_nested_value(100))
    with pytest.raises(JSONBoundsError):
        check_value(_nested_value(100_000))  # iterative: no RecursionError however deep


# Every json.load(s) call that may read JSON from outside the package goes through localjudge.jsonio; these read only
# text the package itself wrote or ships, or are owned by concurrent work named in the reason. (file, function): why.
TRUSTED_JSON_CALLS: dict[tuple[str, str], str] = {
    ("jsonio.py", "loads"): "the bounded reader itself: its calls come after the size and depth checks",
    ("serve/core/compile_guard.py", "ask"): "the compile child's answer: JSON the package's own child process wrote",
    (
        "serve/core/compile_guard.py",
        "_child",
    ): "inside the compile child: the question its parent server wrote (a client schema already bounded there)",
    ("serve/core/catalog.py", "framework_rows"): "framework_prompts.json, a file shipped inside the package",
    ("serve/ollama/translate.py", "_calls"): "the arguments of a tool call this server's model just made, read by serve/protocol",
    ("engine/_template_worker.py", "main"): "a request line from the parent process, written by engine/template.py",
    ("engine/template.py", "_roundtrip"): "a reply line from the template worker this package started",
    ("constraints/llg_search.py", "literals"): "a grammar this package compiled (constraints/llg.py), not client text",
    ("constraints/llg_minimal.py", "from_grammar"): "a grammar this package compiled (constraints/llg.py), not client text",
    ("constraints/llg_bounds.py", "lark_rules"): (
        "a %json block of a client's grammar, within llg_bounds' own size bound; constraints/* is being changed by "
        "the concurrent schema-check work, so switching it is left to that work"
    ),
    ("models/files.py", "gguf_metadata"): "a metadata cache file this package wrote",
    ("models/registry.py", "sha256_of"): "a checksum cache file this package wrote",
    ("models/manifest.py", "read_manifest"): "the model manifest this package writes (`localjudge models add`)",
    ("cli/run_trust.py", "calibrated"): "the summary.json this same run has just written",
    ("run/exports.py", "jsonl_line"): "a line pydantic has just written (model_dump_json) in this process",
    ("store/db.py", "_json_or"): "text this package wrote to its own store (json.dumps of values already read)",
    ("store/format_spec.py", "from_json"): "text this package wrote to its own store",
    ("store/session_labels.py", "latest_session_labels"): "text this package wrote to its own store",
    ("store/labels.py", "_label"): "text this package wrote to its own store",
    ("labels/store.py", "label_rows"): "text this package wrote to its own store",
    ("view/runs.py", "_result_row"): "text this package wrote to its own store",
    ("view/rowpage.py", "page_item"): "text this package wrote to its own store",
    ("view/panels.py", "_value"): "text this package wrote to its own store",
}


def _json_load_calls() -> set[tuple[str, str]]:
    """(file under localjudge/, enclosing function) of every `json.load` / `json.loads` call."""
    root = Path(localjudge.__file__).parent
    found: set[tuple[str, str]] = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
        while stack:
            node, func = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                func = node.name
            if isinstance(node, ast.ImportFrom) and node.module == "json" and {a.name for a in node.names} & {"load", "loads"}:
                found.add((path.relative_to(root).as_posix(), "from json import load(s)"))  # never allowed: unseen calls
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("load", "loads")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "json"
            ):
                found.add((path.relative_to(root).as_posix(), func))
            stack.extend((child, func) for child in ast.iter_child_nodes(node))
    return found


def test_every_json_load_in_the_package_is_bounded_or_listed_as_reading_trusted_text():
    calls = _json_load_calls()
    unlisted = sorted(calls - set(TRUSTED_JSON_CALLS))
    assert not unlisted, f"read these through localjudge.jsonio.loads, or list them with the reason: {unlisted}"
    stale = sorted(set(TRUSTED_JSON_CALLS) - calls)
    assert not stale, f"listed but no longer calling json.load(s): {stale}"
