"""A conversation as DeepEval's `ConversationalTestCase.turns` with their tool calls (`deepeval_tool_turns`, read by
`deepeval_goal_accuracy`): the Python list of `{'content', 'role'}` dicts `deepeval_turns_text` prints, where an
assistant turn that called tools also has `'tools_called'`: those calls as DeepEval's `print_tools_called` prints a
turn's `tools_called` (conversations/deepeval_case.py), each with its result as `output`.

The inverse of `readers.from_deepeval`: the calls of assistant turns with no text (and of the turn itself) belong
to the next assistant turn with text, as DeepEval holds them; tool turns are left out. Calls with no assistant
text after them before the next user turn have no DeepEval turn to sit on and are left out."""

from __future__ import annotations

from ..datasets import Printed
from .deepeval_case import call_outputs, print_tools_called_text
from .model import Conversation, ToolCall


def deepeval_tool_turns_text(conv: Conversation) -> str:
    """The turns as DeepEval turn dicts with their printed `tools_called` (see the module docstring)."""
    outputs = call_outputs(conv)
    turns: list[dict[str, str]] = []
    pending: list[ToolCall] = []
    for t in conv.turns:
        if t.role == "tool":
            continue
        if t.role != "assistant":
            pending = []
            turns.append({"content": t.content, "role": t.role})
            continue
        pending += t.tool_calls
        if not t.content:
            continue
        turn = {"content": t.content, "role": "assistant"}
        if pending:
            turn["tools_called"] = print_tools_called_text(pending, outputs)
            pending = []
        turns.append(turn)
    return Printed(turns)
