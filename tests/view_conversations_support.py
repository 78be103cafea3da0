"""Conversation runs for the view's transcript tests: three conversations (one with tool calls and their results,
one with hostile text in a turn and in a call's arguments), judged by a scripted engine (yes, no, yes, ...)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from view_support import HOSTILE

CONVERSATIONS: list[dict[str, Any]] = [
    {
        "id": "weather",
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "18C, sunny"},
            {"role": "assistant", "content": "It is 18C and sunny in Paris."},
            {"role": "user", "content": "And in Rome?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c2", "content": "24C, clear"},
            {"role": "assistant", "content": "24C and clear in Rome."},
        ],
    },
    {
        "id": "hostile",
        "messages": [
            {"role": "user", "content": HOSTILE[0]},
            {
                "role": "assistant",
                "content": HOSTILE[1],
                "tool_calls": [
                    {"id": "h1", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": HOSTILE[2]})}}
                ],
            },
            {"role": "tool", "tool_call_id": "h1", "content": HOSTILE[0]},
            {"role": "assistant", "content": "done"},
        ],
    },
    {
        "id": "math",
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "times 3?"},
            {"role": "assistant", "content": "12"},
            {"role": "user", "content": "minus 5?"},
            {"role": "assistant", "content": "7"},
        ],
    },
]
VERDICTS = ['{"rationale": "answered", "result": "yes"}', '{"rationale": "missed it", "result": "no"}']


def make_conversation_run(out: Path, granularity: str, window: int = 10) -> Any:
    """A finished run of `conversation_completeness` over CONVERSATIONS at `granularity` in `out`."""
    from localjudge import evaluate
    from localjudge.engine.base import ScriptedEngine

    engine = ScriptedEngine(VERDICTS, cycle=True)
    return evaluate(
        CONVERSATIONS,
        ["conversation_completeness"],
        engine=engine,
        conversation={"granularity": granularity, "window": window},
        out=out,
    )
