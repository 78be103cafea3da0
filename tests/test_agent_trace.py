"""Reading traces: MLflow exports (span schemas v2 and v3) and OpenTelemetry span JSON; bad input."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from localjudge.agent import load_trace, parse_trace
from localjudge.errors import InputError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"
RAG = EXAMPLES / "rag_agent.mlflow.json"
TOOL = EXAMPLES / "tool_agent.otel.json"


def test_mlflow_export_reads_spans_types_and_decoded_inputs():
    t = load_trace(RAG)
    assert t.source_format == "mlflow"
    assert t.trace_id == "tr-5f1c2a9e8b7d4c3fa1e2d3c4b5a69788"
    assert [s.name for s in t.spans] == ["rag_agent", "retrieve_documents", "generate_answer"]
    assert [s.span_type for s in t.spans] == ["CHAIN", "RETRIEVER", "CHAT_MODEL"]
    root, retriever, llm = t.spans
    assert root.parent_id is None and retriever.parent_id == root.span_id and llm.parent_id == root.span_id
    assert retriever.inputs == {"query": root.inputs["question"], "top_k": 2}  # JSON-encoded attribute decoded
    assert retriever.outputs[0]["metadata"]["doc_uri"] == "handbook/leave-policy.md"
    assert t.duration_ms == pytest.approx(1842)
    assert t.state == "OK" and all(s.status == "OK" for s in t.spans)
    assert retriever.duration_ms == pytest.approx(207)
    assert "mlflow.spanInputs" not in retriever.visible_attributes()
    assert retriever.visible_attributes() == {"retriever.index": "hr-handbook-v2"}


def test_otel_export_reads_attributes_status_and_exception_event():
    t = load_trace(TOOL)
    assert t.source_format == "otel"
    assert t.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert t.metadata["service.name"] == "weather-agent"
    by_name = {s.name: s for s in t.spans}
    tool = by_name["get_forecast"]
    assert tool.span_type == "TOOL" and tool.status == "ERROR"
    assert tool.inputs == {"city": "Paris", "date": "2025-06-04"}
    assert tool.attributes["http.status_code"] == 503  # intValue "503" → int
    assert "requests.exceptions.HTTPError" in tool.error_text() and "503" in tool.error_text()
    assert [s.name for s in t.errors()] == ["get_forecast"]
    assert t.spans[0].name == "weather_agent" and t.duration_ms == pytest.approx(3120)


def test_mlflow_v2_span_schema_is_read():
    trace = {
        "info": {"request_id": "tr-v2", "timestamp_ms": 1_700_000_000_000, "execution_time_ms": 12, "status": "ERROR"},
        "data": {
            "spans": [
                {
                    "name": "root",
                    "context": {"span_id": "0x00000000000000aa", "trace_id": "0x1"},
                    "parent_id": None,
                    "start_time": 1,
                    "end_time": 5_000_001,
                    "status_code": "ERROR",
                    "status_message": "boom",
                    "attributes": {"mlflow.spanType": '"AGENT"', "mlflow.spanInputs": '{"q": "hi"}'},
                    "events": [],
                }
            ]
        },
    }
    t = parse_trace(trace)
    s = t.spans[0]
    assert (t.trace_id, t.state, t.duration_ms) == ("tr-v2", "ERROR", 12)
    assert (s.span_id, s.span_type, s.status, s.status_message, s.inputs) == (
        "0x00000000000000aa",
        "AGENT",
        "ERROR",
        "boom",
        {"q": "hi"},
    )
    assert s.duration_ms == pytest.approx(5.0)
    assert t.find_span("00000000000000AA") is s and t.find_span(" '0x00000000000000AA' ") is s  # lenient lookup
    assert t.find_span("aa") is None


def test_otel_span_list_snake_case_iso_times_and_json_lines(tmp_path):
    spans = [
        {
            "trace_id": "0xabc",
            "span_id": "0x01",
            "name": "agent",
            "start_time": "2025-01-01T00:00:00Z",
            "end_time": "2025-01-01T00:00:01.5Z",
            "status": {"status_code": "OK"},
            "attributes": {"input.value": "hello"},
        },
        {
            "trace_id": "0xabc",
            "span_id": "0x02",
            "parent_id": "0x01",
            "name": "tool",
            "start_time": "2025-01-01T00:00:00.5Z",
            "end_time": "2025-01-01T00:00:01Z",
            "status": {"status_code": "ERROR", "description": "timeout"},
        },
    ]
    for src in (spans, {"spans": spans}, json.dumps(spans)):
        t = load_trace(src)
        assert [s.name for s in t.spans] == ["agent", "tool"]
        assert t.spans[0].duration_ms == pytest.approx(1500) and t.spans[0].inputs == "hello"
        assert t.spans[1].status == "ERROR" and t.spans[1].status_message == "timeout"
    p = tmp_path / "spans.jsonl"
    p.write_text("\n".join(json.dumps(s) for s in spans) + "\n")
    assert [s.span_id for s in load_trace(p).spans] == ["0x01", "0x02"]


def test_children_follow_parents_even_when_listed_first():
    spans = [
        {"traceId": "t", "spanId": "c", "parentSpanId": "p", "name": "child", "startTimeUnixNano": "5"},
        {"traceId": "t", "spanId": "p", "name": "parent", "startTimeUnixNano": "1"},
    ]
    assert [s.name for s in load_trace(spans).spans] == ["parent", "child"]


def test_base64_span_ids_are_shown_as_hex():
    raw = bytes.fromhex("a1b2c3d4e5f60718")
    trace = {
        "info": {"trace_id": "tr-1"},
        "data": {
            "spans": [
                {
                    "span_id": base64.b64encode(raw).decode(),
                    "parent_span_id": "",
                    "name": "root",
                    "start_time_unix_nano": 1,
                    "end_time_unix_nano": 2,
                    "status": {"code": "STATUS_CODE_OK"},
                    "attributes": {},
                }
            ]
        },
    }
    s = parse_trace(trace).spans[0]
    assert s.span_id == "a1b2c3d4e5f60718" and s.status == "OK" and s.parent_id is None


def test_neither_format_names_the_missing_fields():
    with pytest.raises(InputError) as e:
        parse_trace({"question": "hi", "answer": "there"})
    msg = str(e.value)
    assert "'info'" in msg and "'data.spans'" in msg and "'resourceSpans'" in msg and "answer" in msg
    with pytest.raises(InputError, match="neither"):
        parse_trace(42)


def test_mlflow_export_without_spans_names_data_spans():
    with pytest.raises(InputError, match="'data'"):
        parse_trace({"info": {"trace_id": "x"}})
    with pytest.raises(InputError, match="'data.spans'"):
        parse_trace({"info": {"trace_id": "x"}, "data": {}})
    with pytest.raises(InputError, match="empty"):
        parse_trace({"info": {"trace_id": "x"}, "data": {"spans": []}})


def test_span_without_id_names_the_field():
    with pytest.raises(InputError, match="span #0 .*'span_id'"):
        parse_trace({"info": {"trace_id": "x"}, "data": {"spans": [{"name": "a"}]}})
    with pytest.raises(InputError, match="span #1 is missing 'spanId'"):
        parse_trace({"spans": [{"traceId": "t", "spanId": "1", "name": "a"}, {"traceId": "t", "name": "b"}]})
    with pytest.raises(InputError, match="'name'"):
        parse_trace({"spans": [{"traceId": "t", "spanId": "1"}]})
    with pytest.raises(InputError, match="'traceId'"):
        parse_trace({"spans": [{"spanId": "1", "name": "a"}]})


def test_missing_file_and_bad_json_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_trace(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"info": ')
    with pytest.raises(InputError, match="not valid JSON"):
        load_trace(bad)
    assert InputError.exit_code == 2


def test_opentelemetry_python_sdk_to_json_shape_is_read():
    spans = [
        {
            "name": "call_tool",
            "context": {"trace_id": "0x4bf9", "span_id": "0x00f0", "trace_state": "[]"},
            "kind": "SpanKind.CLIENT",
            "parent_id": None,
            "start_time": "2025-06-03T09:00:00.000000Z",
            "end_time": "2025-06-03T09:00:00.250000Z",
            "status": {"status_code": "ERROR", "description": "timeout"},
            "attributes": {"tool.name": "search"},
            "events": [],
            "links": [],
            "resource": {"attributes": {}},
        }
    ]
    t = load_trace(spans)
    s = t.spans[0]
    assert (t.trace_id, s.span_id, s.span_type, s.status, s.status_message) == ("0x4bf9", "0x00f0", "CLIENT", "ERROR", "timeout")
    assert s.duration_ms == pytest.approx(250) and t.state == "ERROR"
