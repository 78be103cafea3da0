"""A conversation as the trace dict DeepEval 4.3.1 builds for the equivalent agent run (`trace_manager.
create_nested_spans_dict` of the root span: what its trace-based metrics, StepEfficiencyMetric and
PlanAdherenceMetric, print into their prompts as `serialize_to_json(test_case._trace_dict, indent=2)`).

The equivalent run is an `@observe(type="agent", available_tools=[...])` function `agent(input)` called with the
user turns' texts joined with a newline (`deepeval_case.input_text`) that returns the last assistant turn's text;
inside it, each assistant turn is an `@observe(type="llm")` function `llm(messages)` called with the turns before
it (`{"role", "content"}` each, system and tool turns included) that returns the turn's text, followed by one
`@observe(type="tool", name=<call name>)` function per tool call, called with the call's arguments as keyword
arguments, that returns the call's result (its tool turn's content, or its error; nothing when unanswered).
DeepEval drops ids, times, status and every None field, and gives the agent span the tools its tool children
called (`tools_called`, DeepEval's `ToolCall` fields) and `agent_handoffs` (none here)."""

from __future__ import annotations

import json
from typing import Any

from .deepeval_case import _json_safe, actual_output_text, call_outputs, input_text
from .model import Conversation


def _span(name: str, kind: str, input: dict[str, Any], output: Any) -> dict[str, Any]:
    """A span as DeepEval keeps it: name, type, input, output (left out when None), then its other fields."""
    span: dict[str, Any] = {"name": name, "type": kind, "input": input}
    if output is not None:
        span["output"] = output
    return span


def deepeval_trace_dict(conv: Conversation) -> dict[str, Any]:
    """The trace dict of the conversation's equivalent agent run (see the module docstring), key for key."""
    outputs = call_outputs(conv)
    children: list[dict[str, Any]] = []
    called: list[dict[str, Any]] = []
    seen: list[dict[str, str]] = []
    for turn in conv.turns:
        if turn.role == "assistant":
            llm = _span("llm", "llm", {"messages": [dict(m) for m in seen]}, turn.content)
            children.append({**llm, "children": []})
            for call in turn.tool_calls:
                result = outputs.get(call.id) if call.id is not None else None
                children.append({**_span(call.name, "tool", dict(call.arguments), result), "children": []})
                called.append(
                    {
                        "name": call.name,
                        "type": "FUNCTION",
                        "description": None,
                        "reasoning": None,
                        "output": result,
                        "input_parameters": dict(call.arguments),
                    }
                )
        seen.append({"role": turn.role, "content": turn.content})
    root = _span("agent", "agent", {"input": input_text(conv)}, actual_output_text(conv))
    root.update(
        tools_called=called,
        available_tools=[t.name for t in conv.available_tools],
        agent_handoffs=[],
        children=children,
    )
    return root


def deepeval_trace_json(conv: Conversation) -> str:
    """The trace dict as DeepEval's metrics print it: `serialize_to_json(trace, indent=2)` (ASCII escapes)."""
    return json.dumps(_json_safe(deepeval_trace_dict(conv)), indent=2)
