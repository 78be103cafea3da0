"""A `Conversation` as RAGAS 0.4.3 prints a `MultiTurnSample` (`pretty_repr`, ragas/messages.py): the text its agent
metrics (goal accuracy, topic adherence) put in their prompts, and the `ragas_conversation` value of the
localjudge judges ported from them.

`Human: <text>` for a user turn; for an assistant turn `AI: <text>` (when it has text) then `Tools:` and one
`  <name>: <arguments as a Python dict>` line per call; `ToolOutput: <text>` for a tool result (its error when it
has no text). System turns, which a `MultiTurnSample` cannot hold, are left out.
"""

from __future__ import annotations

from .model import Conversation


def ragas_text(conv: Conversation) -> str:
    """The conversation as `MultiTurnSample.pretty_repr()` prints it."""
    lines: list[str] = []
    for t in conv.turns:
        if t.role == "user":
            lines.append(f"Human: {t.content}")
        elif t.role == "assistant":
            part = [f"AI: {t.content}"] if t.content != "" else []
            if t.tool_calls:
                part += ["Tools:", *(f"  {c.name}: {c.arguments}" for c in t.tool_calls)]
            lines.append("\n".join(part))
        elif t.role == "tool":
            lines.append(f"ToolOutput: {t.content if t.content or t.error is None else t.error}")
    return "\n".join(lines)
