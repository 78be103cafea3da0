"""Readers that turn what chat APIs and eval frameworks hold into a `Conversation`: an OpenAI-style
`messages` list (a Python list, or its JSON text), a DeepEval `ConversationalTestCase` and a RAGAS
`MultiTurnSample` (imported only when such an object is read). MLflow sessions and OpenTelemetry spans
are in `traces.py`. Every reader enforces `Bounds` and fails with one `InputError` line naming the turn
index and the field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from ..jsonio import JSONBoundsError, check_value, loads
from .model import Conversation, ToolCall, Turn

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


@dataclass(frozen=True)
class Bounds:
    """The largest conversation a reader accepts: turns, and UTF-8 bytes of text (JSON input, or the sum of
    turn contents and tool arguments); and the most trace files and spans a trace reader accepts."""

    max_turns: int = 1000
    max_bytes: int = 4_000_000
    max_traces: int = 10_000  # traces (files, or JSONL lines) read as one run's data (`conversations/otel_files.py`)
    max_spans: int = 10_000  # spans of one OpenTelemetry trace


DEFAULT_BOUNDS = Bounds()


def check_bounds(conv: Conversation, bounds: Bounds, where: str) -> Conversation:
    """`conv` unchanged, or `InputError` when it has more turns or more text than `bounds` allow."""
    if len(conv.turns) > bounds.max_turns:
        raise InputError(f"{where}: {len(conv.turns)} turns, more than the limit of {bounds.max_turns}")
    size = sum(
        len(t.content.encode())
        + sum(len(json.dumps(c.arguments, default=str)) for c in t.tool_calls)
        + sum(len(p.encode()) for p in t.retrieval_context or ())
        for t in conv.turns
    )
    if size > bounds.max_bytes:
        raise InputError(f"{where}: {size} bytes of text, more than the limit of {bounds.max_bytes}")
    return conv


def build(where: str, **fields: Any) -> Conversation:
    """A `Conversation` from its fields; a pydantic error becomes one `InputError` line."""
    try:
        return Conversation(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise InputError(f"{where}: {loc}: {err['msg']}") from None


# ------------------------------------------------------------------------------------------- OpenAI


def read_json(text: str | bytes, bounds: Bounds, where: str) -> Any:
    """JSON text parsed (`localjudge.jsonio.loads`), at most `bounds.max_bytes` of it nested at most 100 deep;
    else one `InputError` line starting with `where` (too large, too deep, not JSON with its line and column, or
    bytes that are not UTF-8)."""
    try:
        return loads(text, max_bytes=bounds.max_bytes)
    except JSONBoundsError as e:
        raise InputError(f"{where}: {e}") from None


def from_messages(
    messages: str | bytes | list[Any] | dict[str, Any], *, bounds: Bounds = DEFAULT_BOUNDS, **fields: Any
) -> Conversation:
    """A conversation from an OpenAI chat `messages` list (or `{"messages": [...]}`, or either as JSON text).

    Roles system / developer (read as system) / user / assistant / tool; content a string, null on an
    assistant turn that calls tools, or a list of text parts; `tool_calls[].function.arguments` a JSON
    object (text or parsed). `fields` are the other `Conversation` fields (id, expected_tool_calls, ...)."""
    if isinstance(messages, str | bytes):
        messages = read_json(messages, bounds, "messages")
    else:  # given as Python values (records, a DataFrame cell): bounded as JSON text is, before any walk
        try:
            check_value(messages)
        except JSONBoundsError as e:
            raise InputError(f"messages: {e}") from None
    if isinstance(messages, dict):
        if "messages" not in messages:
            raise InputError("messages: an object needs a 'messages' list")
        messages = messages["messages"]
    if not isinstance(messages, list):
        raise InputError(f"messages: a {type(messages).__name__}, not a list of messages")
    if len(messages) > bounds.max_turns:
        raise InputError(f"messages: {len(messages)} turns, more than the limit of {bounds.max_turns}")
    turns = [_turn(m, i) for i, m in enumerate(messages)]
    return check_bounds(build("messages", turns=turns, **fields), bounds, "messages")


def _turn(m: Any, i: int) -> Turn:
    at = f"messages[{i}]"
    if not isinstance(m, dict):
        raise InputError(f"{at}: a {type(m).__name__}, not a message object")
    role = m.get("role")
    if role not in _ROLES:
        raise InputError(f"{at}.role: {role!r} is not one of system, developer, user, assistant, tool")
    known = {"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "annotations", "audio", "retrieval_context"}
    unknown = sorted(set(m) - known)
    if unknown:
        raise InputError(f"{at}: unknown field(s) {', '.join(unknown)}")
    raw_calls = m.get("tool_calls") or []
    if raw_calls and role != "assistant":
        raise InputError(f"{at}.tool_calls: only an assistant message can call tools, this is a {role} message")
    if not isinstance(raw_calls, list):
        raise InputError(f"{at}.tool_calls: a {type(raw_calls).__name__}, not a list")
    content = _content(m.get("content"), at, allow_none=role == "assistant" and bool(raw_calls) or m.get("refusal") is not None)
    if content is None:
        content = str(m.get("refusal") or "")
    calls = [_call(c, f"{at}.tool_calls[{j}]") for j, c in enumerate(raw_calls)]
    tool_call_id = m.get("tool_call_id")
    if role == "tool":
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise InputError(f"{at}.tool_call_id: a tool message needs the id of the call it answers")
    elif tool_call_id is not None:
        raise InputError(f"{at}.tool_call_id: only a tool message answers a call, this is a {role} message")
    name = m.get("name")
    if name is not None and not isinstance(name, str):
        raise InputError(f"{at}.name: a {type(name).__name__}, not a string")
    rag = retrieval_context(m.get("retrieval_context"), f"{at}.retrieval_context", role)
    return Turn(role=_ROLES[role], content=content, tool_calls=calls, tool_call_id=tool_call_id, name=name, retrieval_context=rag)


def retrieval_context(value: Any, at: str, role: str) -> list[str] | None:
    """An assistant turn's `retrieval_context` (the passages retrieved for its answer) as a list of strings; None
    when absent or null; else one `InputError` line naming `at` (the field) and what to give instead."""
    if value is None:
        return None
    if role != "assistant":
        raise InputError(f"{at}: only an assistant message has a retrieval context, this is a {role} message")
    if not isinstance(value, list):
        raise InputError(f"{at}: a {type(value).__name__}, not a list of strings (the passages retrieved for this answer)")
    for k, p in enumerate(value):
        if not isinstance(p, str):
            raise InputError(f"{at}[{k}]: a {type(p).__name__}, not a string; give each retrieved passage as text")
    return list(value)


def _content(c: Any, at: str, *, allow_none: bool) -> str | None:
    if c is None:
        if allow_none:
            return None
        raise InputError(f"{at}.content: missing; only an assistant message that calls tools may have no content")
    if isinstance(c, str):
        return c
    if not isinstance(c, list):
        raise InputError(f"{at}.content: a {type(c).__name__}, not a string or a list of text parts")
    texts = []
    for k, p in enumerate(c):
        if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
            kind = p.get("type") if isinstance(p, dict) else type(p).__name__
            raise InputError(f"{at}.content[{k}]: a {kind!r} part; only text parts ({{'type': 'text', 'text': ...}}) are read")
        texts.append(p["text"])
    return "\n".join(texts)


def _call(c: Any, at: str) -> ToolCall:
    if not isinstance(c, dict):
        raise InputError(f"{at}: a {type(c).__name__}, not a tool call object")
    if c.get("type", "function") != "function":
        raise InputError(f"{at}.type: {c.get('type')!r}; only 'function' tool calls are read")
    fn = c.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise InputError(f"{at}.function.name: missing; a tool call needs function.name")
    args = fn.get("arguments", {})
    try:  # finite numbers only: NaN, Infinity and 1e400 are not JSON a tool could have been called with
        if isinstance(args, str):
            args = loads(args, finite=True) if args.strip() else {}
        else:
            check_value(args, finite=True)
    except JSONBoundsError as e:
        raise InputError(f"{at}.function.arguments: {e}") from None
    if not isinstance(args, dict):
        raise InputError(f"{at}.function.arguments: a JSON {type(args).__name__}, not an object")
    call_id = c.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise InputError(f"{at}.id: a {type(call_id).__name__}, not a string")
    return ToolCall(name=fn["name"], arguments=args, id=call_id)


# ------------------------------------------------------------------------------- DeepEval and RAGAS


def from_deepeval(case: Any, *, bounds: Bounds = DEFAULT_BOUNDS) -> Conversation:
    """A conversation from a DeepEval `ConversationalTestCase`. An assistant turn's `tools_called` become an
    assistant turn calling them (ids `call_<turn>_<k>`), a tool turn per call with an `output`, then the
    assistant's text; `chatbot_role` is the persona, `expected_outcome` and the scenario are kept."""
    from deepeval.test_case import ConversationalTestCase

    if not isinstance(case, ConversationalTestCase):
        raise InputError(f"from_deepeval: a {type(case).__name__}, not a deepeval ConversationalTestCase")
    turns: list[Turn] = []
    for i, t in enumerate(case.turns):
        calls = []
        for k, tc in enumerate(t.tools_called or []):
            calls.append((ToolCall(name=tc.name, arguments=dict(tc.input_parameters or {}), id=f"call_{i}_{k}"), tc.output))
        if calls:
            turns.append(Turn(role="assistant", tool_calls=[c for c, _ in calls]))
            turns += [
                Turn(role="tool", content=o if isinstance(o, str) else json.dumps(o, default=str), tool_call_id=c.id, name=c.name)
                for c, o in calls
                if o is not None
            ]
        rag = [_passage(p, f"deepeval turns[{i}].retrieval_context[{k}]") for k, p in enumerate(t.retrieval_context or [])]
        where = f"deepeval turns[{i}].retrieval_context"
        turns.append(
            Turn(
                role=t.role,
                content=t.content,
                retrieval_context=retrieval_context(rag if t.retrieval_context is not None else None, where, t.role),
            )
        )
    meta = {k: v for k, v in (("scenario", case.scenario), ("name", case.name), ("user_description", case.user_description)) if v}
    conv = build(
        "deepeval ConversationalTestCase",
        turns=turns,
        id=case.name,
        expected_outcome=case.expected_outcome,
        persona=case.chatbot_role,
        metadata={**meta, **dict(case.metadata or {})},
    )
    return check_bounds(conv, bounds, "deepeval ConversationalTestCase")


def _passage(p: Any, at: str) -> str:
    """A DeepEval retrieval context item as text: a string, or a `RetrievedContextData`'s text (its `context`)."""
    if isinstance(p, str):
        return p
    from deepeval.test_case import RetrievedContextData

    if isinstance(p, RetrievedContextData) and isinstance(p.context, str):
        return p.context
    raise InputError(f"{at}: a {type(p).__name__}, not a string; give each retrieved passage as text")


def from_ragas(sample: Any, *, bounds: Bounds = DEFAULT_BOUNDS) -> Conversation:
    """A conversation from a RAGAS `MultiTurnSample`: Human / AI / Tool messages in order; an AI message's
    tool calls get ids `call_<k>` (k counts every call) and each following ToolMessage answers the next
    unanswered call. `reference_tool_calls` are the expected tool calls, `reference` the expected outcome."""
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage, ToolMessage

    if not isinstance(sample, MultiTurnSample):
        raise InputError(f"from_ragas: a {type(sample).__name__}, not a ragas MultiTurnSample")
    turns: list[Turn] = []
    pending: list[ToolCall] = []
    k = 0
    for i, m in enumerate(sample.user_input):
        if isinstance(m, HumanMessage):
            turns.append(Turn(role="user", content=m.content))
        elif isinstance(m, AIMessage):
            calls = []
            for tc in m.tool_calls or []:
                calls.append(ToolCall(name=tc.name, arguments=dict(tc.args), id=f"call_{k}"))
                k += 1
            pending = list(calls)
            turns.append(Turn(role="assistant", content=m.content, tool_calls=calls))
        elif isinstance(m, ToolMessage):
            if not pending:
                raise InputError(f"ragas user_input[{i}]: a ToolMessage with no unanswered tool call before it")
            c = pending.pop(0)
            turns.append(Turn(role="tool", content=m.content, tool_call_id=c.id, name=c.name))
        else:  # pragma: no cover - ragas only has these three
            raise InputError(f"ragas user_input[{i}]: a {type(m).__name__}, not a Human/AI/ToolMessage")
    expected = [ToolCall(name=tc.name, arguments=dict(tc.args)) for tc in sample.reference_tool_calls or []]
    conv = build(
        "ragas MultiTurnSample",
        turns=turns,
        expected_tool_calls=expected if sample.reference_tool_calls is not None else None,
        expected_outcome=sample.reference,
    )
    return check_bounds(conv, bounds, "ragas MultiTurnSample")
