"""OpenTelemetry GenAI trace files as run data (`run --otel-traces`, `evaluate(OtelTraces(path))`): traces
written by the real opentelemetry-sdk, grouped into conversations by gen_ai.conversation.id / session.id in
start-time order, judged session-level, per turn and per tool call; bad files are one line naming the file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import localjudge
from localjudge.conversations import Bounds, read_otel_traces
from localjudge.conversations.dataset import OtelTraces
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError


def _text(role, text):
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _sdk_trace(history, answer, conversation_id=None, key="gen_ai.conversation.id", call=None):
    """One trace recorded by the real SDK: an agent span around a chat span with GenAI message attributes."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent") as root:
        if conversation_id:
            root.set_attribute(key, conversation_id)
        if call is not None:
            with tracer.start_as_current_span("chat m") as s:
                s.set_attribute("gen_ai.operation.name", "chat")
                s.set_attribute("gen_ai.input.messages", json.dumps(history))
                parts = [{"type": "tool_call", "id": "c1", "name": call[0], "arguments": call[1]}]
                s.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": parts}]))
            history = [
                *history,
                {"role": "assistant", "parts": parts},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": call[2]}]},
            ]
        with tracer.start_as_current_span("chat m") as s:
            s.set_attribute("gen_ai.operation.name", "chat")
            s.set_attribute("gen_ai.input.messages", json.dumps(history))
            s.set_attribute("gen_ai.output.messages", json.dumps([_text("assistant", answer)]))
    provider.shutdown()
    return exporter.get_finished_spans()


def _otlp(spans):
    """The SDK's spans as OTLP/JSON (resourceSpans, hex ids, typed attribute values, nanosecond strings)."""

    def value(v):
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}

    out = []
    for s in spans:
        span = {
            "traceId": f"{s.context.trace_id:032x}",
            "spanId": f"{s.context.span_id:016x}",
            "name": s.name,
            "startTimeUnixNano": str(s.start_time),
            "endTimeUnixNano": str(s.end_time),
            "attributes": [{"key": k, "value": value(v)} for k, v in s.attributes.items()],
        }
        if s.parent is not None:
            span["parentSpanId"] = f"{s.parent.span_id:016x}"
        out.append(span)
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "agent"}, "spans": out}]}]}


def _sdk_json(spans):
    """The SDK's own span JSON (`ReadableSpan.to_json`) as `{"spans": [...]}`."""
    return {"spans": [json.loads(s.to_json()) for s in spans]}


@pytest.fixture
def traces_dir(tmp_path):
    """Three traces of one session (s1, written out of order: its second turn resends the history) and one
    trace of its own with a tool call."""
    d = tmp_path / "traces"
    d.mkdir()
    first = _sdk_trace([_text("user", "What is 2+2?")], "4.", "s1")
    second = _sdk_trace([_text("user", "What is 2+2?"), _text("assistant", "4."), _text("user", "And times 3?")], "12.", "s1")
    third = _sdk_trace([_text("user", "Minus 2?")], "10.", "s1", key="session.id")  # only its own turn
    lone = _sdk_trace([_text("user", "Weather in Paris?")], "Sunny.", call=("get_weather", {"city": "Paris"}, "sun"))
    (d / "a.json").write_text(json.dumps(_otlp(third)))  # name order is not time order
    (d / "b.json").write_text(json.dumps(_sdk_json(first)))
    (d / "c.json").write_text(json.dumps(_otlp(second)))
    (d / "d.json").write_text(json.dumps(_otlp(lone)))
    (d / "notes.txt").write_text("not a trace")
    return d


def _verdicts(answers):
    """A scripted engine answering each prompt by the last assistant text in it: `answers[text]` is yes/no."""

    def answer(messages, fmt):
        conv = json.loads(messages[-1].content.removeprefix("conversation: "))
        last = [m["content"] for m in conv if m["role"] == "assistant" and m["content"]][-1]
        return json.dumps({"rationale": f"judged {last}", "result": answers[last]})

    return ScriptedEngine(answer)


def test_traces_sharing_a_conversation_id_are_one_conversation_in_start_time_order(traces_dir):
    convs = read_otel_traces(traces_dir)
    assert [c.id for c in convs] == ["s1", convs[1].metadata["trace_ids"][0]]
    s1 = convs[0]
    assert [(t.role, t.content) for t in s1.turns] == [
        ("user", "What is 2+2?"),
        ("assistant", "4."),
        ("user", "And times 3?"),
        ("assistant", "12."),
        ("user", "Minus 2?"),
        ("assistant", "10."),
    ]
    assert [f.rsplit("/", 1)[1] for f in s1.metadata["files"]] == ["b.json", "c.json", "a.json"]
    lone = convs[1]
    assert [c.name for c in lone.tool_calls()] == ["get_weather"] and lone.turns[-1].content == "Sunny."


def test_evaluate_otel_traces_session_level_and_per_turn(traces_dir, tmp_path):
    engine = _verdicts({"4.": "yes", "12.": "no", "10.": "yes", "Sunny.": "yes"})
    data = OtelTraces(path=traces_dir)
    run = localjudge.evaluate(data, ["conversation_completeness"], engine=engine, out=tmp_path / "s")
    assert [(r.conversation_id, r.turn_index, r.result.value) for r in run.results][0] == ("s1", None, "yes")
    assert len(json.loads(next(iter(run.results)).inputs["conversation"])) == 6
    turn = localjudge.evaluate(data, ["conversation_completeness"], engine=engine, out=tmp_path / "t", conversation="turn")
    got = [(r.conversation_id, r.turn_index, r.result.value) for r in turn.results]
    assert got[:3] == [("s1", 0, "yes"), ("s1", 1, "no"), ("s1", 2, "yes")] and len(got) == 4
    # resumed from the same files: every cell reused, nothing judged again
    again = localjudge.evaluate(data, ["conversation_completeness"], engine=engine, out=tmp_path / "t", conversation="turn")
    assert again.counts.reused == 4 and again.counts.evaluated == 0


def test_evaluate_otel_traces_per_tool_call(traces_dir, tmp_path):
    from localjudge.conversations.dataset import ConversationOptions

    engine = ScriptedEngine([json.dumps({"rationale": "r", "result": "yes"})], cycle=True)
    opts = ConversationOptions(granularity="tool_call")
    judges = ["conversation_completeness"]
    run = localjudge.evaluate(OtelTraces(path=traces_dir), judges, engine=engine, out=tmp_path / "r", conversation=opts)
    (row,) = run.results  # one call among the four traces: the lone trace's
    assert (row.tool_call_index, row.result.value) == (0, "yes") and row.conversation_id != "s1"


def test_a_jsonl_file_of_traces_is_read_one_trace_per_line(tmp_path):
    lines = [_otlp(_sdk_trace([_text("user", f"q{i}")], f"a{i}", "s9")) for i in range(3)]
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (conv,) = read_otel_traces(f)
    assert [t.content for t in conv.turns] == ["q0", "a0", "q1", "a1", "q2", "a2"]
    as_json = tmp_path / "lines.json"  # JSON Lines under a .json name: its lines are the traces
    as_json.write_text(f.read_text())
    assert read_otel_traces(as_json)[0].turns == conv.turns
    one = tmp_path / "one.json"
    one.write_text(json.dumps(lines[0]))
    assert [c.id for c in read_otel_traces(one)] == ["s9"]


@pytest.mark.parametrize(
    ("content", "bounds", "message"),
    [
        (
            "{not json",
            Bounds(),
            "bad.json: not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
        ),
        (json.dumps({"resourceSpans": "x"}), Bounds(), "bad.json: 'resourceSpans' is not a list of objects"),
        (
            json.dumps({"data": 1}),
            Bounds(),
            "bad.json: not an OpenTelemetry trace (no 'resourceSpans' or 'spans'); found ['data']",
        ),
        (json.dumps({"spans": [{"name": "x"}]}), Bounds(), "bad.json: OpenTelemetry span #0 is missing 'spanId'"),
        (
            json.dumps({"spans": [{"name": "x", "spanId": "1", "traceId": "t"}]}),
            Bounds(),
            "bad.json: OpenTelemetry trace has no GenAI",
        ),
        (json.dumps({"spans": [{}, {}, {}]}), Bounds(max_spans=2), "bad.json: 3 spans, more than the limit of 2 for one trace"),
        ("{}" + " " * 50, Bounds(max_bytes=10), "bad.json: 52 bytes, more than the limit of 10 for one trace"),
    ],
)
def test_a_bad_trace_file_is_one_line_naming_the_file_and_the_field(tmp_path, content, bounds, message):
    d = tmp_path / "d"
    d.mkdir()
    (d / "bad.json").write_text(content)
    with pytest.raises(InputError) as e:
        read_otel_traces(d, bounds=bounds)
    assert str(e.value).startswith(str(d / message.split(": ", 1)[0])) and message.split(": ", 1)[1] in str(e.value)
    assert "\n" not in str(e.value)


def test_more_trace_files_than_the_bound_and_an_empty_directory_are_refused(tmp_path):
    for i in range(3):
        (tmp_path / f"{i}.json").write_text("{}")
    with pytest.raises(InputError, match=r"3 \*\.json files, more than the limit of 2"):
        read_otel_traces(tmp_path, bounds=Bounds(max_traces=2))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no OpenTelemetry traces to judge"):
        read_otel_traces(tmp_path / "empty")


def test_cli_otel_traces_bad_file_exits_2_with_one_line_and_runs_nothing(tmp_path):
    from localjudge.cli import main

    (tmp_path / "bad.json").write_text(json.dumps({"spans": "x"}))
    r = CliRunner().invoke(
        main,
        ["run", "--otel-traces", str(tmp_path / "bad.json"), "-j", "conversation_completeness", "--out", str(tmp_path / "o")],
    )
    assert r.exit_code == 2, r.output
    assert f"{tmp_path / 'bad.json'}: 'spans' is a str, not a list" in r.output
    both = CliRunner().invoke(main, ["run", str(tmp_path / "d.jsonl"), "--otel-traces", str(tmp_path), "-j", "x"])
    assert both.exit_code == 2 and "--otel-traces PATH (one of them)" in both.output


@pytest.mark.model
def test_cli_otel_traces_per_turn_with_the_real_default_model(traces_dir, tmp_path, _localjudge_home):
    from localjudge.cli import main

    argv = ["run", "--otel-traces", str(traces_dir), "-j", "conversation_completeness", "--threads", "1"]
    r = CliRunner().invoke(main, [*argv, "--granularity", "turn", "--out", str(tmp_path / "t")])
    assert r.exit_code in (0, 1), r.output
    assert "Per conversation" in r.output
    rows = [json.loads(x) for x in (tmp_path / "t" / "results.jsonl").read_text().splitlines()]
    assert [(x["conversation_id"], x["turn_index"]) for x in rows][:3] == [("s1", 0), ("s1", 1), ("s1", 2)] and len(rows) == 4
    assert all(x["result"]["value"] in ("yes", "no") or x["error"] for x in rows)
