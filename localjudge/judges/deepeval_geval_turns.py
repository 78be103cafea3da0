"""The turns `deepeval_geval` (DeepEval's ConversationalGEval) prints, read from the row values: `deepeval_turns`
(content and role), `deepeval_rag_turns` when `retrieval_context` is among the params (conversations/render.py
`deepeval_rag_turns_text`), `deepeval_tool_turns` when `tools_called` is (conversations/deepeval_tool_turns.py).
With both, the two values' turns are matched one to one (both leave out tool turns and assistant turns with no text).

A turn's `tools_called` there is DeepEval's `print_tools_called` JSON; ConversationalGEval prints a Turn's ToolCall
list instead as Python prints a list (`str(dict)` of `convert_turn_to_dict`), each call as `ToolCall.__repr__`:
`ToolCalls` gives that text as its `repr`, so `str(turns)` prints the turn dicts exactly as DeepEval does."""

from __future__ import annotations

import json
from typing import Any

from .. import jsonio
from ..errors import InputError
from .deepeval_turn_rag import rag_turns
from .deepeval_values import deepeval_turns
from .spec import DeepEvalGEval

RAG, TOOLS = "deepeval_rag_turns", "deepeval_tool_turns"
TURN_TEXTS: dict[str, str] = {
    "deepeval_turns": "the turns as DeepEval prints them (deepeval_turns_text)",
    RAG: "the turns with each assistant turn's retrieval context (deepeval_rag_turns_text)",
    TOOLS: "the turns with each assistant turn's tool calls (deepeval_tool_turns_text)",
}


def turn_sources(cfg: DeepEvalGEval) -> list[str]:
    """The row values the turns are read from: `deepeval_turns` alone, or those of the extra turn fields."""
    names = [v for p, v in (("retrieval_context", RAG), ("tools_called", TOOLS)) if p in cfg.evaluation_params]
    return names or ["deepeval_turns"]


def _indented(field: str, value: Any) -> str:
    lines = json.dumps(value, indent=4, ensure_ascii=False).splitlines()
    return f"{field}={lines[0]}\n" + "\n".join(f"    {line}" for line in lines[1:])


def tool_call_repr(call: dict[str, Any]) -> str:
    """DeepEval 4.3.1's `ToolCall.__repr__` of one call of `print_tools_called`'s JSON (falsy fields left out as
    DeepEval leaves them out; `output` as its Python repr, or indented JSON when a dict)."""
    fields = []
    for key in ("name", "type", "description", "reasoning"):
        if call.get(key):
            fields.append(f'{key}="{call[key]}"')
    if call.get("input_parameters"):
        fields.append(_indented("input_parameters", call["input_parameters"]))
    out = call.get("output")
    if isinstance(out, dict):
        fields.append(_indented("output", out))
    elif out is not None:
        fields.append(f"output={out!r}")
    return "ToolCall(\n    " + ",\n    ".join(fields) + "\n)"


class ToolCalls:
    """A turn's tool calls whose `repr` is Python's `str(list)` of DeepEval `ToolCall`s."""

    def __init__(self, calls: list[dict[str, Any]]):
        self.calls = calls

    def __repr__(self) -> str:
        return "[" + ", ".join(tool_call_repr(c) for c in self.calls) + "]"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCalls) and other.calls == self.calls

    __hash__ = None  # type: ignore[assignment]


def _tool_calls(text: Any) -> ToolCalls:
    try:
        calls = jsonio.loads(text) if isinstance(text, str) else None
    except ValueError:
        calls = None
    if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        raise InputError(
            f"variable {TOOLS!r}: a turn's 'tools_called' must be DeepEval's printed tool-call list "
            "(deepeval_tool_turns_text); give the row a conversation (--conversation FILE) and fix the row"
        )
    return ToolCalls(calls)


def merged_turns(cfg: DeepEvalGEval, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Each turn's content and role, with its `retrieval_context` and `tools_called` (as `ToolCalls`) when the
    params name them and the turn has them."""
    sources = turn_sources(cfg)
    if sources == ["deepeval_turns"]:
        return [dict(t) for t in deepeval_turns(raw["deepeval_turns"])]
    read = {RAG: lambda v: rag_turns(v), TOOLS: lambda v: deepeval_turns(v, TOOLS)}
    lists = [read[s](raw[s]) for s in sources]
    base = lists[0]
    for other in lists[1:]:
        if [(t["content"], t["role"]) for t in other] != [(t["content"], t["role"]) for t in base]:
            raise InputError(
                f"variables {RAG!r} and {TOOLS!r} hold different turns: give both from the same conversation; fix the row"
            )
    out = []
    for i, t in enumerate(base):
        turn: dict[str, Any] = {"content": t["content"], "role": t["role"]}
        if RAG in sources and lists[0][i].get("retrieval_context") is not None:
            turn["retrieval_context"] = lists[0][i]["retrieval_context"]
        if TOOLS in sources and lists[-1][i].get("tools_called") is not None:
            turn["tools_called"] = _tool_calls(lists[-1][i]["tools_called"])
        out.append(turn)
    return out
