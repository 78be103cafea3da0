"""The four trace tools: bounded text, truncation markers, paging, and errors returned as text."""

from __future__ import annotations

import re
from pathlib import Path

from localjudge.agent import ToolLimits, TraceTools, clip, load_trace

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"
RAG = load_trace(EXAMPLES / "rag_agent.mlflow.json")
TOOL = load_trace(EXAMPLES / "tool_agent.otel.json")


def big_trace(n: int = 7, size: int = 5000):
    spans = [
        {
            "traceId": "t1",
            "spanId": f"s{i}",
            "parentSpanId": "s0" if i else "",
            "name": f"step_{i}",
            "startTimeUnixNano": str(i),
            "endTimeUnixNano": str(i + 1_000_000),
            "attributes": [
                {"key": "input.value", "value": {"stringValue": f"in{i} " + "x" * size}},
                {"key": "output.value", "value": {"stringValue": f"out{i} " + "needle " * (size // 7)}},
            ],
        }
        for i in range(n)
    ]
    return load_trace({"spans": spans})


def test_clip_marks_how_much_was_cut():
    assert clip("abc", 5) == "abc"
    assert clip("abcdefghij", 4) == "abcd…[truncated: 6 of 10 chars cut]"


def test_get_trace_info_reports_counts_errors_and_previews():
    text = TraceTools(TOOL).call("get_trace_info")
    assert "trace_id: 4bf92f3577b34da6a3ce929d0e0e4736" in text
    assert "spans: 4 (2 LLM, 1 AGENT, 1 TOOL)" in text
    assert "failed spans: 1 (get_forecast span_id 2b3c4d5e6f708192)" in text
    assert "duration_ms: 3120" in text and "request: " in text and "Paris" in text
    assert "format: MLflow trace export" in TraceTools(RAG).call("get_trace_info")


def test_list_spans_pages_and_truncates_values_with_marker():
    tr = big_trace(n=5, size=300)
    tools = TraceTools(tr, ToolLimits(page_size=2, value_chars=20, result_chars=5000))
    p1 = tools.call("list_spans", {"page": 1})
    assert p1.startswith("spans 1-2 of 5 (page 1 of 3):")
    assert "span_id s0 " in p1 and "span_id s1 " in p1 and "span_id s2 " not in p1
    n = len("in0 " + "x" * 300)
    assert f"inputs: in0 xxxxxxxxxxxxxxxx…[truncated: {n - 20} of {n} chars cut]" in p1
    assert p1.endswith("more spans: call list_spans with page 2")
    p3 = tools.call("list_spans", {"page": 3})
    assert p3.startswith("spans 5-5 of 5 (page 3 of 3):") and "more spans" not in p3
    assert tools.call("list_spans", {"page": 4}) == "Error: page 4 does not exist; the trace has 5 spans on 3 page(s) of 2."


def test_list_spans_shows_the_error_of_a_failed_span():
    text = TraceTools(TOOL).call("list_spans", {"page": 1})
    assert "name get_forecast | type TOOL | status ERROR" in text
    assert "error: requests.exceptions.HTTPError: 503 Server Error" in text


def test_get_span_shows_inputs_outputs_attributes_events_and_children():
    tools = TraceTools(TOOL)
    text = tools.call("get_span", {"span_id": "2b3c4d5e6f708192"})
    assert "name get_forecast" in text and 'inputs: {"city": "Paris", "date": "2025-06-04"}' in text
    assert "status message: 503 Server Error" in text and "event exception:" in text and '"http.status_code": 503' in text
    root = tools.call("get_span", {"span_id": "00f067aa0ba902b7"})
    assert "children: plan_tool_calls (span_id 1a2b3c4d5e6f7081), get_forecast" in root


def test_get_span_unknown_id_returns_error_text_with_known_ids():
    tools = TraceTools(RAG)
    text = tools.call("get_span", {"span_id": "deadbeef"})
    assert text == (
        "Error: no span with span_id 'deadbeef'. Known span ids: a1b2c3d4e5f60718, b2c3d4e5f6071829, c3d4e5f60718293a."
    )
    hint = tools.call("get_span", {"span_id": "retrieve_documents"})
    assert hint.startswith("Error:") and "its span_id is b2c3d4e5f6071829" in hint


def test_get_span_bounds_each_field_and_the_whole_result():
    tr = big_trace(n=2, size=5000)
    tools = TraceTools(tr, ToolLimits(field_chars=100, result_chars=1000))
    text = tools.call("get_span", {"span_id": "s1"})
    assert re.search(r"inputs: in1 x{96}…\[truncated: 4904 of 5004 chars cut\]", text)
    assert len(text) <= 1000 + len("…[truncated: 99999 of 99999 chars cut]")


def test_search_trace_shows_each_match_in_context():
    tools = TraceTools(TOOL, ToolLimits(context_chars=15, max_matches=2))
    text = tools.call("search_trace", {"pattern": r"\b503\b"})
    lines = text.splitlines()
    assert lines[0] == "4 match(es) for '\\\\b503\\\\b'; showing the first 2:"
    assert lines[1:] == [
        "- span_id 2b3c4d5e6f708192 (get_forecast) status message: «503» Server Error: …",
        '- span_id 2b3c4d5e6f708192 (get_forecast) attributes: ….status_code": «503»}',
    ]
    everything = TraceTools(TOOL, ToolLimits(max_matches=10)).call("search_trace", {"pattern": "503"})
    assert "(final_answer) inputs:" in everything and "showing" not in everything
    assert TraceTools(RAG).call("search_trace", {"pattern": "VACATION DAYS"}).startswith("3 match(es)")  # case-insensitive


def test_search_trace_bad_or_empty_regex_and_no_match_return_text():
    tools = TraceTools(RAG)
    bad = tools.call("search_trace", {"pattern": "(unclosed"})
    assert bad.startswith("Error: '(unclosed' is not a valid regular expression (missing ), unterminated subpattern")
    assert tools.call("search_trace", {"pattern": "  "}).startswith("Error: the search pattern is empty")
    assert tools.call("search_trace", {"pattern": "zebra"}) == "no match for 'zebra' in 3 spans."
    assert tools.call("search_trace", {"pattern": "(?:)"}) == "no match for '(?:)' in 3 spans."  # empty matches skipped


def test_every_tool_result_is_capped():
    tr = big_trace(n=30, size=20000)
    lim = ToolLimits(page_size=30, result_chars=800)
    tools = TraceTools(tr, lim)
    for name, args in [
        ("list_spans", {"page": 1}),
        ("get_span", {"span_id": "s3"}),
        ("search_trace", {"pattern": "needle"}),
        ("get_trace_info", {}),
    ]:
        text = tools.call(name, args)
        body, _, marker = text.partition("…[truncated:")
        assert len(body) <= 800, name
        if len(text) > 800:
            assert marker.endswith("chars cut]"), name


def test_call_returns_argument_mistakes_as_text():
    tools = TraceTools(RAG)
    assert tools.call("delete_trace").startswith("Error: unknown tool 'delete_trace'; the tools are get_trace_info, list_spans")
    assert tools.call("get_span", {}) == "Error: get_span needs the argument 'span_id' (a span_id shown by list_spans)."
    assert tools.call("list_spans", {"page": "two"}) == "Error: page must be an integer, got 'two'."
    assert tools.call("get_trace_info", {"verbose": True}) == "Error: get_trace_info takes no argument(s) 'verbose'."
