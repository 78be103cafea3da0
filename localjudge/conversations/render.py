"""A `Conversation` as judge prompt text, byte for byte as MLflow 3.17 and DeepEval 4.3 print it.

* `conversation_text` is the `{{ conversation }}` value of MLflow's session-level judges: the message
  list of `mlflow.genai.utils.trace_utils.resolve_conversation_from_session` (user, `Tool: ...` messages
  when tool calls are included, assistant) as `InstructionsJudge._safe_json_dumps` prints it
  (`json.dumps(indent=2, ensure_ascii=False, default=str)`). System turns, which MLflow sessions never
  have, are kept as `{"role": "system"}` messages; an assistant turn's text comes before its tool calls.
* `tool_calls_text` / `available_tools_text` are MLflow's `format_tools_called` / `format_available_tools`
  (mlflow/genai/judges/utils/formatting_utils.py), the `{{ tools_called }}` / `{{ available_tools }}`
  values of its tool-call judges; `expected_calls_text` is its `_format_expected_calls` (with arguments), the
  `{{ expected_calls }}` value of `tool_call_correctness` given expectations (`tool_call_correctness_expected`).
* `turn_windows` is DeepEval's per-turn convention (metrics/utils/turns.py, `TurnRelevancy`): the turns
  are cut into unit interactions (a user turn up to the next user turn that follows an assistant turn)
  and each unit is judged with the `window_size - 1` units before it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..datasets import Printed
from .model import Conversation, ToolCall, ToolSpec, Turn


def mlflow_messages(conv: Conversation, *, include_tool_calls: bool = False) -> list[dict[str, str]]:
    """The conversation as MLflow's `[{"role", "content"}]` list; empty or blank texts are left out as
    MLflow leaves them out, a tool call prints as `Tool: name` / `Inputs: {args}` / `Outputs: result` /
    `Exception: error` (lines only for what is present), a result with no matching call as its own
    `Tool:` message."""
    results = conv.results_by_call_id()
    answered = {c.id for c in conv.tool_calls() if c.id is not None}
    out: list[dict[str, str]] = []
    for t in conv.turns:
        if t.role == "tool":
            if include_tool_calls and (t.tool_call_id is None or t.tool_call_id not in answered):
                out.append({"role": "tool", "content": _tool_message(t.name or "unknown", None, t)})
            continue
        if t.content and t.content.strip():
            out.append({"role": t.role, "content": t.content})
        if include_tool_calls:
            for c in t.tool_calls:
                out.append({"role": "tool", "content": _tool_message(c.name, c, results.get(c.id) if c.id else None)})
    return out


def _tool_message(name: str, call: ToolCall | None, result: Turn | None) -> str:
    text = f"Tool: {name}"
    if call is not None and call.arguments:
        text += f"\nInputs: {call.arguments}"
    if result is not None and result.content:
        text += f"\nOutputs: {result.content}"
    if result is not None and result.error is not None:
        text += f"\nException: {result.error}"
    return text


def conversation_text(conv: Conversation, *, include_tool_calls: bool = False) -> str:
    """The `{{ conversation }}` value of an MLflow session-level judge (see the module docstring)."""
    return json.dumps(mlflow_messages(conv, include_tool_calls=include_tool_calls), default=str, indent=2, ensure_ascii=False)


def tool_calls_text(conv: Conversation) -> str:
    """The `{{ tools_called }}` value: `Tool Call N: name`, its arguments and output (MLflow's
    `format_tools_called`), or `No tools called`."""
    results = conv.results_by_call_id()
    parts = []
    for i, c in enumerate(conv.tool_calls(), start=1):
        r = results.get(c.id) if c.id else None
        text = f"Tool Call {i}: {c.name}\n  Input Arguments: {c.arguments}\n  Output: {(r.content if r else '') or '(no output)'}"
        if r is not None and r.error:
            text += f"\n  Exception: {r.error}"
        parts.append(text)
    return "\n\n".join(parts) if parts else "No tools called"


def expected_calls_text(calls: list[ToolCall]) -> str:
    """The `{{ expected_calls }}` value: `Expected Tool Call N: name` and its `Arguments:` as JSON (`empty` when
    none), as MLflow's `_format_expected_calls` prints them with arguments; `No expected tool calls provided.`
    for an empty list (MLflow itself falls back to its ground-truth-free prompt then)."""
    lines = []
    for i, c in enumerate(calls, start=1):
        lines.append(f"Expected Tool Call {i}: {c.name}")
        lines.append(f"  Arguments: {json.dumps(c.arguments)}" if c.arguments else "  Arguments: empty")
    return "\n".join(lines) if lines else "No expected tool calls provided."


def available_tools_text(tools: list[ToolSpec]) -> str:
    """The `{{ available_tools }}` value: `- name: description` and a `(required)`/`(optional)` line per
    JSON-schema property (MLflow's `format_available_tools`), or `No tools available`."""
    parts = []
    for tool in tools:
        text = f"- {tool.name}"
        if tool.description:
            text += f": {tool.description}"
        props: dict[str, Any] = tool.parameters.get("properties") or {}
        required = set(tool.parameters.get("required") or [])
        lines = []
        for name, prop in props.items():
            line = f"    - {name}{' (required)' if name in required else ' (optional)'}"
            if isinstance(prop, dict) and prop.get("type"):
                line += f": {prop['type']}"
            if isinstance(prop, dict) and prop.get("description"):
                line += f" - {prop['description']}"
            lines.append(line)
        if lines:
            text += "\n" + "\n".join(lines)
        parts.append(text)
    return "\n\n".join(parts) if parts else "No tools available"


# -------------------------------------------------------------------------------- per-turn windows


@dataclass(frozen=True)
class TurnWindow:
    """The turns one per-turn judgement sees: `turns[start:end]` of the conversation, ending with the
    unit interaction being judged (`unit` counts units from 0)."""

    unit: int
    start: int
    end: int


def unit_interactions(turns: list[Turn]) -> list[tuple[int, int]]:
    """`(start, end)` index ranges of DeepEval's unit interactions (`get_unit_interactions`): a new unit starts
    at a user turn that follows an assistant turn once the current unit has a user turn; a trailing unit
    counts only when it has a user turn, more than one turn, and ends with an assistant turn."""
    units: list[tuple[int, int]] = []
    start, has_user = 0, False
    for i, t in enumerate(turns):
        if i > start and turns[i - 1].role == "assistant" and t.role == "user" and has_user:
            units.append((start, i))
            start = i
            continue
        if t.role == "user":
            has_user = True
    if len(turns) - start > 1 and turns[-1].role == "assistant" and has_user:
        units.append((start, len(turns)))
    return units


def turn_windows(conv: Conversation, window_size: int = 10) -> list[TurnWindow]:
    """One window per unit interaction: that unit and up to `window_size - 1` units before it (DeepEval's
    `get_turns_in_sliding_window` over unit interactions; its `TurnRelevancy` default is 10)."""
    if window_size < 1:
        raise ValueError(f"window_size must be at least 1, not {window_size}")
    units = unit_interactions(conv.turns)
    return [TurnWindow(i, units[max(0, i - window_size + 1)][0], end) for i, (_, end) in enumerate(units)]


# ---------------------------------------------------------------------------------- DeepEval's turns


def deepeval_turns_text(conv: Conversation) -> str:
    """The turns as DeepEval's conversational templates print them (the `{{ sliding_window }}` of
    `TurnRelevancyMetric`): the Python list of `convert_turn_to_dict(turn)` dicts, `{'content': ..., 'role': ...}`.
    DeepEval's turns are user and assistant messages only: tool turns and an assistant turn with no text (the
    call turn `from_deepeval` adds) are left out; a system turn is kept as role `system`. A `Printed` text: the
    judges that need the turns read its `value`, never the text back."""
    return Printed(
        [{"content": t.content, "role": t.role} for t in conv.turns if t.role != "tool" and (t.role != "assistant" or t.content)]
    )


def deepeval_rag_turns_text(conv: Conversation) -> str:
    """The turns with their retrieval contexts, as DeepEval's `convert_turn_to_dict(turn, [CONTENT, ROLE,
    RETRIEVAL_CONTEXT])` gives them: `deepeval_turns_text`'s dicts, an assistant turn's with `'retrieval_context':
    [...]` after its role when it has one (the `deepeval_rag_turns` value the turn-level RAG judges read)."""
    out: list[dict[str, Any]] = []
    for t in conv.turns:
        if t.role == "tool" or (t.role == "assistant" and not t.content):
            continue
        d: dict[str, Any] = {"content": t.content, "role": t.role}
        if t.retrieval_context is not None:
            d["retrieval_context"] = list(t.retrieval_context)
        out.append(d)
    return Printed(out)
