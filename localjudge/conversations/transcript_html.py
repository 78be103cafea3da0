"""One turn of a bounded transcript (`transcript.py`) as HTML, the same markup on the report and on `view`'s row
page: the role tag and index, a "judged" tag on the judged turn, a tool result's tool name and the call it answers,
the turn's text (left out when empty) with the count of characters cut, the assistant's tool calls with their
arguments (the judged call marked) and a tool's error.

Each page passes its own escaping function (the report's Jinja `markupsafe.escape`, `view`'s `html.escape`), so a
page's escaped bytes stay its own; every text goes through it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .transcript import TurnView


def turn_html(turn: TurnView, esc: Callable[[Any], str]) -> str:
    """`turn` as one `<div class="turn ...">`, classes `in-window` (the judge saw it) and `judged` added."""
    cls = "turn" + (" in-window" if turn.in_window else "") + (" judged" if turn.judged else "")
    head = f'<span class="tag role-{esc(turn.role)}">{esc(turn.role)}</span> <span class="note">#{turn.index}</span>'
    if turn.judged:
        head += ' <span class="tag judged-mark">judged</span>'
    if turn.role == "tool":
        head += (
            f' <span class="tool-name">{esc(turn.name or "")}</span> <span class="note">result of {esc(turn.tool_call_id)}</span>'
        )
    text = f'<pre class="turn-text">{esc(turn.content)}</pre>' if turn.content else ""
    rest = f'<p class="note">({turn.cut_chars} more characters not shown)</p>' if turn.cut_chars else ""
    calls = "".join(
        f'<div class="tool-call{" judged" if c.judged else ""}" data-call="{c.index}"><span class="tag">call {c.index}</span> '
        f'<code class="tool-name">{esc(c.name)}</code><pre class="args">{esc(c.arguments)}</pre></div>'
        for c in turn.tool_calls
    )
    err = f'<pre class="tool-error">error: {esc(turn.error)}</pre>' if turn.error else ""
    return f'<div class="{cls}" data-turn="{turn.index}"><div class="turn-head">{head}</div>{text}{rest}{calls}{err}</div>'
