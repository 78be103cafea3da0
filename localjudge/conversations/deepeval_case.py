"""A conversation as the fields of DeepEval's single-turn `LLMTestCase` that its agentic metrics read
(`deepeval_argument_correctness`): `input` and `tools_called`, printed as DeepEval's templates print them.

The mapping (DeepEval's agentic metrics judge one input, a conversation has several user turns): the `input` of
a tool call is the text of the user turns before it, joined with a newline; a row's `input` is that of its last
tool call (all the user turns when it has none). A tool call is DeepEval's `ToolCall(name=..., input_parameters=
arguments)` and prints as its `__repr__`; a list of them as Python's `str(list)` (what Jinja prints)."""

from __future__ import annotations

import json

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
