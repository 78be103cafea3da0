"""Conversations from traces: MLflow traces grouped into sessions, read from a real tracking store, and
OpenTelemetry GenAI spans (through `agent.trace_otel`, today's span reader).

MLflow: a session is the traces sharing the `mlflow.trace.session` metadata (traces without it belong to
no session), ordered by `timestamp_ms` (ties by the earliest span's start in nanoseconds, then the trace id), as
`mlflow.genai.evaluate` groups them
(evaluation/session_utils.py) and `resolve_conversation_from_session` orders them. Each trace gives a
user turn (its request, through MLflow's own `extract_inputs_from_trace` / `parse_inputs_to_str`), an
assistant turn calling the trace's TOOL spans in start order with a tool turn per result, and an
assistant turn (its response, through `parse_outputs_to_str`)."""

from __future__ import annotations

import json
from typing import Any

from ..agent.trace_model import Trace
from ..agent.trace_otel import parse_otel
from ..errors import InputError
from ..jsonio import JSONBoundsError, loads
from .model import Conversation, ToolCall, Turn
from .readers import DEFAULT_BOUNDS, Bounds, build, check_bounds, from_messages

SESSION_KEY = "mlflow.trace.session"  # mlflow.tracing.constant.TraceMetadataKey.TRACE_SESSION


def from_mlflow_store(
    tracking_uri: str, experiment_ids: list[str] | None = None, *, bounds: Bounds = DEFAULT_BOUNDS
) -> list[Conversation]:
    """One conversation per session in the experiments (all of them when None) of the tracking store at
    `tracking_uri` (e.g. `sqlite:///mlflow.db`), in order of each session's first trace."""
    import mlflow
    from mlflow import MlflowClient

    mlflow.flush_trace_async_logging()  # traces this process logged are written before they are read
    client = MlflowClient(tracking_uri=tracking_uri)
    if experiment_ids is None:
        experiment_ids = [e.experiment_id for e in client.search_experiments()]
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(tracking_uri)
    try:
        traces = mlflow.search_traces(locations=experiment_ids, return_type="list", include_spans=True)
    finally:
        mlflow.set_tracking_uri(previous)
    return from_mlflow_traces(traces, bounds=bounds)


def from_mlflow_traces(traces: list[Any], *, bounds: Bounds = DEFAULT_BOUNDS) -> list[Conversation]:
    """One conversation per session among MLflow `Trace` objects (traces without a session are left out)."""
    sessions: dict[str, list[Any]] = {}
    for t in sorted(traces, key=_started):
        sid = t.info.trace_metadata.get(SESSION_KEY)
        if sid:
            sessions.setdefault(sid, []).append(t)
    return [_session(sid, ts, bounds) for sid, ts in sessions.items()]


def _started(trace: Any) -> tuple[int, int, str]:
    """A trace's place in time: its `timestamp_ms`, then its earliest span's start in nanoseconds, then its id. Traces
    a fast client logs one after another often share a millisecond, and the store returns those in no fixed order: by
    the millisecond alone, two sessions (or two turns of one) came out swapped from one read to the next."""
    spans = trace.data.spans or []
    return trace.info.timestamp_ms, min((int(s.start_time_ns or 0) for s in spans), default=0), str(trace.info.trace_id)


def _session(sid: str, traces: list[Any], bounds: Bounds) -> Conversation:
    from mlflow.genai.utils.trace_utils import (
        extract_inputs_from_trace,
        extract_outputs_from_trace,
        extract_tools_called_from_trace,
        parse_inputs_to_str,
        parse_outputs_to_str,
    )

    where = f"MLflow session {sid!r}"
    if len(traces) * 2 > bounds.max_turns:
        raise InputError(f"{where}: {len(traces)} traces, more than {bounds.max_turns} turns allow")
    turns: list[Turn] = []
    for t in traces:
        tid = t.info.trace_id
        if inputs := extract_inputs_from_trace(t):
            text = parse_inputs_to_str(inputs)
            if text and text.strip():
                turns.append(Turn(role="user", content=text))
        calls, results = [], []
        for k, f in enumerate(extract_tools_called_from_trace(t)):
            args = f.arguments if isinstance(f.arguments, dict) or f.arguments is None else {"input": f.arguments}
            call = ToolCall(name=f.name or "unknown", arguments=args or {}, id=f"{tid}:{k}")
            calls.append(call)
            if f.outputs is not None or f.exception is not None:
                content = "" if f.outputs is None else f"{f.outputs}"
                err = None if f.exception is None else f"{f.exception}"
                results.append(Turn(role="tool", content=content, tool_call_id=call.id, name=call.name, error=err))
        if calls:
            turns.append(Turn(role="assistant", tool_calls=calls))
            turns += results
        if outputs := extract_outputs_from_trace(t):
            text = parse_outputs_to_str(outputs)
            if text and text.strip():
                turns.append(Turn(role="assistant", content=text))
    conv = build(where, id=sid, turns=turns, metadata={"trace_ids": [t.info.trace_id for t in traces]})
    return check_bounds(conv, bounds, where)


# ------------------------------------------------------------------------------------ OpenTelemetry

_CHAT_OPS = {"chat", "text_completion", "generate_content"}


def from_otel(obj: dict[str, Any], *, bounds: Bounds = DEFAULT_BOUNDS) -> Conversation:
    """The conversation of one OpenTelemetry trace (OTLP/JSON or `{"spans": [...]}`) from its GenAI spans:
    the last model-call span's input messages (the whole history it was sent) followed by its output
    messages. Messages are read from `gen_ai.input.messages` / `gen_ai.output.messages` (the GenAI
    semantic conventions: `parts` of type text / tool_call / tool_call_response) or from the indexed
    `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes (OpenLLMetry). The conversation id is
    `gen_ai.conversation.id` or `session.id` when a span has one, else the trace id."""
    return from_otel_trace(parse_otel(obj), bounds=bounds)


def from_otel_trace(trace: Trace, *, bounds: Bounds = DEFAULT_BOUNDS) -> Conversation:
    """`from_otel` of a trace already read by `agent.trace_otel.parse_otel`."""
    chats = [s for s in trace.spans if _is_chat(s.attributes)]
    if not chats:
        raise InputError("OpenTelemetry trace has no GenAI model-call span (gen_ai.input.messages or gen_ai.prompt.0.role)")
    last = chats[-1].attributes
    messages = _otel_messages(last, "input") + _otel_messages(last, "output")
    conv_id = next(
        (str(s.attributes[k]) for s in trace.spans for k in ("gen_ai.conversation.id", "session.id") if s.attributes.get(k)),
        trace.trace_id,
    )
    return from_messages(messages, bounds=bounds, id=conv_id, metadata={"trace_id": trace.trace_id})


def _is_chat(a: dict[str, Any]) -> bool:
    return (
        "gen_ai.input.messages" in a
        or "gen_ai.prompt.0.role" in a
        or a.get("gen_ai.operation.name") in _CHAT_OPS
        and ("gen_ai.output.messages" in a or "gen_ai.completion.0.role" in a)
    )


def _otel_messages(a: dict[str, Any], side: str) -> list[dict[str, Any]]:
    raw = a.get(f"gen_ai.{side}.messages")
    if raw is not None:
        try:
            msgs = loads(raw) if isinstance(raw, str) else raw
        except JSONBoundsError as e:
            detail = f"not valid JSON ({e.parser.msg} at column {e.parser.colno})" if e.parser else str(e)
            raise InputError(f"gen_ai.{side}.messages: {detail}") from None
        if not isinstance(msgs, list):
            raise InputError(f"gen_ai.{side}.messages: a {type(msgs).__name__}, not a list")
        return [m for msg in msgs for m in _from_parts(msg)]
    prefix = "gen_ai.prompt" if side == "input" else "gen_ai.completion"
    out: list[dict[str, Any]] = []
    i = 0
    while f"{prefix}.{i}.role" in a or f"{prefix}.{i}.content" in a:
        p = f"{prefix}.{i}"
        m: dict[str, Any] = {"role": a.get(f"{p}.role", "assistant"), "content": a.get(f"{p}.content")}
        calls, k = [], 0
        while f"{p}.tool_calls.{k}.name" in a:
            q = f"{p}.tool_calls.{k}"
            calls.append(
                {"id": a.get(f"{q}.id"), "function": {"name": a[f"{q}.name"], "arguments": a.get(f"{q}.arguments", "{}")}}
            )
            k += 1
        if calls:
            m["tool_calls"] = calls
        if f"{p}.tool_call_id" in a:
            m["tool_call_id"] = a[f"{p}.tool_call_id"]
        out.append(m)
        i += 1
    return out


def _from_parts(m: Any) -> list[dict[str, Any]]:
    """One GenAI semconv message (`{"role", "parts": [...]}`) as OpenAI messages: text and tool calls in
    one message, each tool_call_response as a tool message of its own."""
    if not isinstance(m, dict) or "parts" not in m:
        return [m]
    texts, calls, responses = [], [], []
    for p in m.get("parts") or []:
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text":
            texts.append(str(p.get("content", "")))
        elif kind == "tool_call":
            args = p.get("arguments", {})
            calls.append({"id": p.get("id"), "function": {"name": p.get("name"), "arguments": args}})
        elif kind == "tool_call_response":
            resp = p.get("response", p.get("result"))
            text = resp if isinstance(resp, str) else json.dumps(resp, default=str)
            responses.append({"role": "tool", "tool_call_id": p.get("id"), "content": text})
    out: list[dict[str, Any]] = []
    if texts or calls:
        msg: dict[str, Any] = {"role": m.get("role"), "content": "\n".join(texts) if texts else None}
        if calls:
            msg["tool_calls"] = calls
        out.append(msg)
    return out + responses
