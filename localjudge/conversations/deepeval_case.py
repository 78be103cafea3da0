"""A conversation as the fields of DeepEval's single-turn `LLMTestCase` that its agentic metrics read
(`deepeval_argument_correctness`, `deepeval_task_completion`): `input`, `actual_output` and `tools_called`,
printed as DeepEval's templates print them.

The mapping (DeepEval's agentic metrics judge one input, a conversation has several user turns): the `input` of
a tool call is the text of the user turns before it, joined with a newline; a row's `input` is that of its last
tool call (all the user turns when it has none). A tool call is DeepEval's `ToolCall(name=..., input_parameters=
arguments)` and prints as its `__repr__`; a list of them as Python's `str(list)` (what Jinja prints); TaskCompletion prints them as JSON
instead (`print_tools_called_text`), each with its result as `output`."""

from __future__ import annotations

import json
import math
from typing import Any

from .model import Conversation, ToolCall


def tool_call_repr(call: ToolCall) -> str:
    """DeepEval 4.3.1's `ToolCall.__repr__` for a call with a name, the default type and its arguments as
    `input_parameters` (left out when empty, as DeepEval leaves out a falsy field)."""
    fields = [f'name="{call.name}"', 'type="FUNCTION"']  # ToolCallType.FUNCTION.value
    if call.arguments:
        lines = json.dumps(call.arguments, indent=4, ensure_ascii=False).splitlines()
        fields.append(f"input_parameters={lines[0]}\n" + "\n".join(f"    {line}" for line in lines[1:]))
    return "ToolCall(\n    " + ",\n    ".join(fields) + "\n)"


def tools_called_text(calls: list[ToolCall]) -> str:
    """A list of tool calls as Jinja prints a Python list of DeepEval `ToolCall`s."""
    return "[" + ", ".join(tool_call_repr(c) for c in calls) + "]"


def input_text(conv: Conversation, before_call: int | None = None) -> str:
    """The user turns' texts, joined with a newline: those before tool call `before_call` (0-based, in
    conversation order: `Conversation.tool_calls`), or before the last tool call when None (every user turn when
    there is none)."""
    n_calls = len(conv.tool_calls())
    stop = before_call if before_call is not None else n_calls - 1
    seen, users = 0, []
    for turn in conv.turns:
        if turn.role == "assistant":
            seen += len(turn.tool_calls)
            if n_calls and seen > stop:
                break
        elif turn.role == "user":
            users.append(turn.content)
    return "\n".join(users)


def _json_safe(value: Any) -> Any:
    """DeepEval's `make_json_serializable` on JSON-decoded values: NUL characters stripped from strings (keys
    too), non-finite floats as None, keys as strings."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    return value


def print_tools_called_text(calls: list[ToolCall], outputs: dict[str, str] | None = None) -> str:
    """DeepEval 4.3.1's `print_tools_called` of the calls as `ToolCall(name=..., input_parameters=arguments or
    None, output=...)`: each `serialize_to_json(call, indent=4)` (ASCII escapes, every field, nulls kept) with
    every line indented 2 spaces, in `[\\n...\\n]`; "" for no call. `outputs` maps a call id to its result text
    (DeepEval's `ToolCall.output`; None when the call has no id or no result)."""
    if not calls:
        return ""
    outputs = outputs or {}
    items = []
    for call in calls:
        fields = {
            "name": call.name,
            "type": "FUNCTION",
            "description": None,
            "reasoning": None,
            "output": outputs.get(call.id) if call.id is not None else None,
            "input_parameters": call.arguments or None,
        }
        text = json.dumps(_json_safe(fields), indent=4)
        items.append("\n".join("  " + line for line in text.splitlines()))
    return "[\n" + ",\n".join(items) + "\n]"


def call_outputs(conv: Conversation) -> dict[str, str]:
    """Each answered call's result text by call id: the tool turn's content, or its error when the content is
    empty (the first answer wins)."""
    return {cid: t.content or (t.error or "") for cid, t in conv.results_by_call_id().items()}


def actual_output_text(conv: Conversation) -> str:
    """DeepEval's `actual_output`: the content of the conversation's last assistant turn ("" when none)."""
    return next((t.content for t in reversed(conv.turns) if t.role == "assistant"), "")
