"""A conversation result's transcript as data: which turns to show around what was judged, bounded (shared by
`localjudge view`'s row page, view/transcript.py, and the HTML report, report/transcripts.py).

`build` takes the conversation, the result's position (conversation id, turn index, tool-call index, leading turns
left out to fit the context) and the run's conversation options (`meta["conversation"]`), recomputes the window the
judge saw (DeepEval's sliding window: render.py) and keeps at most `MAX_SHOWN` turns ending with what was judged (a
session: its last turns, where its outcome is; a tool call: with the turns answering it), counting the hidden turns
before and after; `expand` widens that by up to `MAX_EXPAND` turns each side, and a turn's text is cut at
`MAX_CHARS` characters (the count of the rest kept). Texts are kept as they are: whoever renders them escapes them."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ..datasets import Position
from .model import Conversation
from .render import turn_windows, unit_interactions

MAX_SHOWN = 60  # turns around the judged part on one page
MAX_EXPAND = 2000  # turns one `expand` may add on each side
MAX_CHARS = 20_000  # characters of one turn's text or one call's arguments
PREVIEW_TURNS, PREVIEW_WORDS, PREVIEW_CHARS = 4, 12, 400  # a preview: its last turns, their first words, its length


class CallView(BaseModel):
    """One tool call of an assistant turn: its index among the conversation's calls, name, arguments as JSON."""

    index: int
    name: str
    arguments: str
    id: str | None = None
    judged: bool = False


class TurnView(BaseModel):
    """One turn as shown: `in_window` (the judge saw it), `judged` (the turn the result is about)."""

    index: int
    role: str
    content: str
    cut_chars: int = 0
    name: str | None = None
    tool_call_id: str | None = None
    error: str | None = None
    tool_calls: list[CallView] = []
    in_window: bool = False
    judged: bool = False


class Transcript(BaseModel):
    """The shown part of a conversation and what it leaves out."""

    conversation_id: str
    granularity: str
    total_turns: int
    window: tuple[int, int]  # [start, end) turn indices the judge saw
    judged: tuple[int, int]  # [start, end) turn indices the result is about
    hidden_before: int
    hidden_after: int
    expand: int
    turns: list[TurnView]


def _cut(text: str, limit: int) -> tuple[str, int]:
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def build(
    conv: Conversation,
    res: Position,
    options: dict[str, Any],
    expand: int = 0,
    max_shown: int = MAX_SHOWN,
    max_chars: int = MAX_CHARS,
) -> Transcript:
    """The transcript of the result at `res` on conversation `conv`, judged with the run's conversation `options`
    (`max_shown` turns around what was judged, `max_chars` characters of a text: the report shows fewer than the view)."""
    n = len(conv.turns)
    cut = res.truncated_turns or 0
    gran = options.get("granularity") or (
        "tool_call" if res.tool_call_index is not None else "turn" if res.turn_index is not None else "session"
    )
    window, judged, call = (min(cut, n), n), (min(cut, n), n), None
    if gran == "turn" and res.turn_index is not None:
        wins = turn_windows(conv, int(options.get("window") or 10))
        units = unit_interactions(conv.turns)
        if 0 <= res.turn_index < len(wins):
            w = wins[res.turn_index]
            window, judged = (min(w.start + cut, w.end), w.end), units[res.turn_index]
    elif gran == "tool_call" and res.tool_call_index is not None:
        k = 0
        for i, t in enumerate(conv.turns):
            if k + len(t.tool_calls) > res.tool_call_index:
                judged, call = (i, i + 1), res.tool_call_index
                break
            k += len(t.tool_calls)
    expand = max(0, min(expand, MAX_EXPAND))
    hi = judged[1] if gran != "tool_call" else min(n, judged[1] + 3)  # a call's result follows it
    lo = max(0, hi - max_shown)  # what led up to the judged part, its window marked
    lo, hi = max(0, lo - expand), min(n, hi + expand)
    turns, k = [], sum(len(t.tool_calls) for t in conv.turns[:lo])
    for i in range(lo, hi):
        t = conv.turns[i]
        text, rest = _cut(t.content, max_chars)
        calls = []
        for c in t.tool_calls:
            args, _ = _cut(json.dumps(c.arguments, ensure_ascii=False), max_chars)
            calls.append(CallView(index=k, name=c.name, arguments=args, id=c.id, judged=k == call))
            k += 1
        turns.append(
            TurnView(
                index=i,
                role=t.role,
                content=text,
                cut_chars=rest,
                name=t.name,
                tool_call_id=t.tool_call_id,
                error=t.error,
                tool_calls=calls,
                in_window=window[0] <= i < window[1],
                judged=judged[0] <= i < judged[1],
            )
        )
    return Transcript(
        conversation_id=res.conversation_id,
        granularity=gran,
        total_turns=n,
        window=window,
        judged=judged,
        hidden_before=lo,
        hidden_after=n - hi,
        expand=expand,
        turns=turns,
    )


def _first_words(text: str, n: int) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def preview(conv: Conversation, res: Position, options: dict[str, Any]) -> str:
    """A one-line transcript preview of what a conversation result judged (a results table's inputs cell): the last
    `PREVIEW_TURNS` turns of the window it saw, each as `role: first words`, an assistant's tool calls as
    `→ name(arguments)`, the turns before them counted; at most `PREVIEW_CHARS` characters."""
    t = build(conv, res, options, max_shown=PREVIEW_TURNS, max_chars=PREVIEW_CHARS)
    shown = [v for v in t.turns if v.in_window or v.judged] or t.turns
    parts = []
    earlier = shown[0].index - t.window[0] if shown else 0
    if earlier > 0:
        parts.append(f"(+{earlier} earlier turn{'s' if earlier > 1 else ''})")
    for v in shown:
        text = _first_words(v.content, PREVIEW_WORDS)
        calls = " ".join(f"→ {c.name}({_first_words(c.arguments, 4)})" for c in v.tool_calls)
        parts.append(f"{v.role}: " + " ".join(x for x in (text, calls) if x))
    out = " | ".join(parts)
    return out if len(out) <= PREVIEW_CHARS else out[: PREVIEW_CHARS - 1] + "…"
