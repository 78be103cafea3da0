"""The conversation readers, renderings and windows: MLflow sessions read from a real sqlite tracking store
render byte for byte as MLflow's own session judges render them; strict one-line errors; bounds; the
OpenTelemetry, DeepEval and RAGAS readers; DeepEval's per-turn windows."""

from __future__ import annotations

import json
import re

import pytest

from localjudge.conversations import (
    Bounds,
    ToolSpec,
    available_tools_text,
    conversation_text,
    from_deepeval,
    from_messages,
    from_mlflow_store,
    from_mlflow_traces,
    from_otel,
    from_ragas,
    tool_calls_text,
    turn_windows,
)
from localjudge.conversations.render import mlflow_messages
from localjudge.errors import InputError

CHAT = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    {"role": "assistant", "content": [{"type": "text", "text": "It is 18C."}]},
]


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory):
    """A real sqlite tracking store: 3 sessions x 4 turns from a traced agent calling a TOOL span, plus a
    trace outside any session."""
    import mlflow

    root = tmp_path_factory.mktemp("mlruns")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    # the artifact root defaults to ./mlruns under the working directory: keep the traces in the temp dir
    exp = mlflow.get_experiment(mlflow.create_experiment("chats", artifact_location=(root / "artifacts").as_uri()))
    mlflow.set_experiment(experiment_id=exp.experiment_id)

    @mlflow.trace(span_type="TOOL")
    def lookup(city: str, days: int = 1):
        return {"city": city, "forecast": ["sun"] * days}

    @mlflow.trace
    def agent(question: str, session: str | None):
        if session:
            mlflow.update_current_trace(metadata={"mlflow.trace.session": session})
        if "weather" in question:
            lookup(city="Paris", days=2)
        return f"answer to {question} — ok"

    for s in ("s1", "s2", "s3"):
        for t in range(4):
            agent(f"{s} question {t}" + (" weather" if t % 2 else ""), s)
    agent("lonely", None)
    mlflow.flush_trace_async_logging()
    traces = mlflow.search_traces(locations=[exp.experiment_id], return_type="list", include_spans=True)
    mlflow.set_tracking_uri(None)
    return uri, traces


@pytest.mark.system
def test_mlflow_store_sessions_render_byte_for_byte_as_mlflow_session_judges(mlflow_store):
    from mlflow.genai.judges.instructions_judge import InstructionsJudge
    from mlflow.genai.utils.trace_utils import resolve_conversation_from_session

    uri, traces = mlflow_store
    convs = from_mlflow_store(uri)
    assert [c.id for c in convs] == ["s1", "s2", "s3"]
    for conv in convs:
        # in the order the traces were logged: MLflow orders by the millisecond alone, and traces that share one come
        # in the store's order, which is not fixed (the rendering is what is compared, not MLflow's tie order)
        session = sorted(
            (t for t in traces if t.info.trace_metadata.get("mlflow.trace.session") == conv.id),
            key=lambda t: (t.info.timestamp_ms, min(s.start_time_ns for s in t.data.spans)),
        )
        assert len([t for t in conv.turns if t.role == "user"]) == 4
        for tools in (False, True):
            expected = resolve_conversation_from_session(session, include_tool_calls=tools)
            judge = InstructionsJudge(name="j", instructions="Judge {{ conversation }}", model="openai:/x")
            assert conversation_text(conv, include_tool_calls=tools) == judge._safe_json_dumps(expected)
    tool_msgs = [m["content"] for m in mlflow_messages(convs[0], include_tool_calls=True) if m["role"] == "tool"]
    assert (
        tool_msgs
        == ["Tool: lookup\nInputs: {'city': 'Paris', 'days': 2}\nOutputs: {'city': 'Paris', 'forecast': ['sun', 'sun']}"] * 2
    )


@pytest.mark.system
def test_traces_logged_within_one_millisecond_keep_the_order_they_were_logged_in_whatever_order_they_are_read(mlflow_store):
    import copy
    import random

    _, traces = mlflow_store
    for seed in range(5):
        same_ms = copy.deepcopy(traces)
        for t in same_ms:
            t.info.timestamp_ms = 1_700_000_000_000  # a fast client's traces, all in one millisecond
        random.Random(seed).shuffle(same_ms)  # and the store's order among them, which it does not fix
        convs = from_mlflow_traces(same_ms)
        assert [c.id for c in convs] == ["s1", "s2", "s3"]
        for conv in convs:
            asked = [re.search(r"(s\d) question (\d)", t.content or "").groups() for t in conv.turns if t.role == "user"]
            assert asked == [(conv.id, str(i)) for i in range(4)], asked


def test_tool_renderings_equal_mlflow_formatting_functions():
    from mlflow.genai.judges.utils.formatting_utils import format_available_tools, format_tools_called
    from mlflow.genai.utils.type import FunctionCall
    from mlflow.types.chat import ChatTool

    conv = from_messages(CHAT)
    assert tool_calls_text(conv) == format_tools_called(
        [FunctionCall(name="weather", arguments={"city": "Paris"}, outputs="18C")]
    )
    spec = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "a city"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
    tools = [ToolSpec(name="weather", description="forecast", parameters=spec), ToolSpec(name="now")]
    theirs = [
        ChatTool(
            type="function", function={"name": t.name, "description": t.description or None, "parameters": t.parameters or None}
        )
        for t in tools
    ]
    assert available_tools_text(tools) == format_available_tools(theirs)
    assert tool_calls_text(from_messages([])) == "No tools called" and available_tools_text([]) == "No tools available"


def test_openai_messages_read_into_turns_with_tool_calls_and_results():
    conv = from_messages(json.dumps({"messages": CHAT}))
    assert [t.role for t in conv.turns] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.tool_calls()[0].arguments == {"city": "Paris"} and conv.results_by_call_id()["c1"].content == "18C"
    assert conv.turns[-1].content == "It is 18C."


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "bot", "content": "x"}], "messages[0].role: 'bot' is not one of"),
        ([{"role": "user"}], "messages[0].content: missing"),
        ([{"role": "user", "content": "a"}, {"role": "tool", "content": "r"}], "messages[1].tool_call_id: a tool message needs"),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}],
            "messages[0].tool_calls[0].function.arguments: not valid JSON",
        ),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}],
            "arguments: a JSON list, not an object",
        ),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "messages[0].content[0]: a 'image_url' part"),
        (
            [{"role": "user", "content": "x", "tool_calls": []}, {"role": "user", "content": "y", "extra": 1}],
            "messages[1]: unknown field(s) extra",
        ),
        ("[1, 2", "messages: not valid JSON"),
    ],
)
def test_invalid_messages_fail_with_one_line_naming_turn_and_field(messages, message):
    with pytest.raises(InputError) as e:
        from_messages(messages)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_bounds_refuse_too_many_turns_and_too_many_bytes():
    with pytest.raises(InputError, match="3 turns, more than the limit of 2"):
        from_messages(CHAT[1:4], bounds=Bounds(max_turns=2))
    with pytest.raises(InputError, match="bytes"):
        from_messages(json.dumps(CHAT), bounds=Bounds(max_bytes=100))
    with pytest.raises(InputError, match="bytes of text"):
        from_messages([{"role": "user", "content": "x" * 200}], bounds=Bounds(max_bytes=100))


def test_otel_genai_spans_give_the_last_model_calls_history_and_answer():
    def attr(k, v):
        return {"key": k, "value": {"stringValue": v}}

    history = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "18C"}]},
    ]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "It is 18C."}]}]
    span = {
        "traceId": "t1",
        "spanId": "a",
        "name": "chat gpt",
        "attributes": [
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.conversation.id", "conv-9"),
            attr("gen_ai.input.messages", json.dumps(history)),
            attr("gen_ai.output.messages", json.dumps(answer)),
        ],
    }
    conv = from_otel({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    assert conv.id == "conv-9" and [t.role for t in conv.turns] == ["user", "assistant", "tool", "assistant"]
    assert conv.tool_calls()[0].name == "weather" and conv.turns[2].tool_call_id == "c1" and conv.turns[3].content == "It is 18C."
    flat = {
        "traceId": "t2",
        "spanId": "b",
        "name": "llm",
        "attributes": {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "hi",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "hello",
        },
    }
    assert [t.content for t in from_otel({"spans": [flat]}).turns] == ["hi", "hello"]
    with pytest.raises(InputError, match="no GenAI model-call span"):
        from_otel({"spans": [{"traceId": "t", "spanId": "s", "name": "x"}]})


def test_deepeval_and_ragas_objects_read_into_the_same_model():
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage, ToolMessage
    from ragas.messages import ToolCall as RToolCall

    case = ConversationalTestCase(
        chatbot_role="travel agent",
        expected_outcome="weather given",
        turns=[
            Turn(role="user", content="Weather?"),
            Turn(
                role="assistant",
                content="18C",
                tools_called=[ToolCall(name="weather", input_parameters={"city": "Paris"}, output="18C")],
            ),
        ],
    )
    d = from_deepeval(case)
    assert d.persona == "travel agent" and d.expected_outcome == "weather given"
    assert [t.role for t in d.turns] == ["user", "assistant", "tool", "assistant"] and d.tool_calls()[0].arguments == {
        "city": "Paris"
    }
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="Weather?"),
            AIMessage(content="", tool_calls=[RToolCall(name="weather", args={"city": "Paris"})]),
            ToolMessage(content="18C"),
            AIMessage(content="18C"),
        ],
        reference_tool_calls=[RToolCall(name="weather", args={"city": "Paris"})],
    )
    r = from_ragas(sample)
    assert r.results_by_call_id()["call_0"].content == "18C" and r.expected_tool_calls[0].name == "weather"
    with pytest.raises(InputError, match="not a deepeval ConversationalTestCase"):
        from_deepeval(sample)


@pytest.mark.parametrize("window", [1, 2, 10])
def test_turn_windows_follow_deepeval_unit_interactions_and_sliding_window(window):
    import itertools

    from deepeval.metrics.utils.turns import get_turns_in_sliding_window, get_unit_interactions
    from deepeval.test_case import Turn

    roles = ["user", "assistant", "assistant", "user", "user", "assistant", "user", "assistant", "user"]
    msgs = [{"role": r, "content": f"{r} {i}"} for i, r in enumerate(roles)]
    conv = from_messages(msgs)
    theirs = [
        [t.content for t in itertools.chain(*w)]
        for w in get_turns_in_sliding_window(get_unit_interactions([Turn(**m) for m in msgs]), window)
    ]
    ours = [[t.content for t in conv.turns[w.start : w.end]] for w in turn_windows(conv, window)]
    assert ours == theirs and len(ours) == 3


def test_docs_conversations_page_python_snippets_run():
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs/conversations.md").read_text(encoding="utf-8")
    snippets = re.findall(r"```python\n(.*?)```", page, re.S)
    snippets = [s for s in snippets if "ConversationalTestCase" not in s]  # tests/test_framework_cases_run.py runs it
    assert len(snippets) == 3
    for code in snippets:
        exec(compile(code, "docs/conversations.md", "exec"), {})


def test_messages_bytes_that_are_not_utf8_are_one_line_naming_messages():
    from localjudge.conversations.readers import from_messages

    with pytest.raises(InputError, match=r"^messages: not UTF-8 text; save it as UTF-8 JSON$"):
        from_messages(b'[{"role": "user", "content": "\xff"}]')
