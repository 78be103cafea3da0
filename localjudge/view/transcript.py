"""A conversation result shown as the chat transcript it judged: each turn with its role and text, the
assistant's tool calls (name, arguments) and the tool results, the judged turn (per-turn) or tool call (per-tool-call)
highlighted, the turns the judge saw (its window) marked.

The conversation comes whole from the run's store (conversations/stored.py); the window is recomputed from the
run's conversation options (`meta["conversation"]`, DeepEval's sliding window: conversations/render.py) and the
result's position (conversation id, turn index, tool-call index, leading turns left out to fit the context).

Bounded: a page shows at most `MAX_SHOWN` turns ending with what was judged (a session: its last turns, where its
outcome is; a tool call: with the turns answering it) plus the count of hidden turns before and after; `expand` widens that by up to `MAX_EXPAND` turns each side, and a
turn's text is cut at `MAX_CHARS` characters (the count of the rest shown). Every text is escaped (`esc`) on the row
page and put in with `textContent` by the label page's script: a turn's text is shown, never run."""

from __future__ import annotations

from typing import Any

from ..conversations.stored import get_conversation
from ..conversations.transcript import (  # the pure part lives in conversations/ (the report shows transcripts too)
    MAX_CHARS,
    MAX_EXPAND,
    MAX_SHOWN,
    CallView,
    Transcript,
    TurnView,
    build,
)
from ..conversations.transcript_html import turn_html
from ..datasets import Position
from ..store import queries
from .pages import esc

__all__ = [
    "MAX_CHARS",
    "MAX_EXPAND",
    "MAX_SHOWN",
    "CallView",
    "Transcript",
    "TurnView",
    "build",
    "transcript_html",
    "transcript_of",
]


def transcript_of(run: Any, row_index: int, expand: int = 0) -> Transcript | None:
    """The transcript of data row `row_index` of `run` (a view RunHandle), None for a single-turn row or a run that
    did not store its conversations (made before store migration 007_stored_conversations)."""
    rid = run.run_id()
    if rid is None:
        return None
    with run.conn() as c:
        r = queries.row_position(c, rid, row_index)
    if r is None:
        return None
    with run.lock:
        conv = get_conversation(run.store, rid, r[0])
    if conv is None:
        return None
    pos = Position(r[0], r[1], r[2], r[3])
    return build(conv, pos, run.record().conversation or {}, expand)


def transcript_html(t: Transcript, base: str) -> str:
    """The transcript as HTML (every text escaped); `base` is the page's own address, for the expand links."""
    what = {"session": "the whole conversation", "turn": "turn", "tool_call": "tool call"}.get(t.granularity, t.granularity)

    def more(n: int, where: str) -> str:
        if not n:
            return ""
        step = min(MAX_EXPAND, t.expand + MAX_SHOWN)
        return (
            f'<p class="hidden-turns" data-hidden="{where}">{n} turn{"s" if n != 1 else ""} hidden {where} · '
            f'<a href="{esc(base)}?expand={step}#transcript">show {step - t.expand} more each side</a></p>'
        )

    out = [
        f'<section id="transcript" class="transcript" data-conversation="{esc(t.conversation_id)}" '
        f'data-granularity="{esc(t.granularity)}"><h2>Transcript</h2>'
        f'<p class="sub">conversation <code>{esc(t.conversation_id)}</code> · {t.total_turns} turns · judged: {esc(what)} · '
        f"the judge saw turns {t.window[0]}–{max(t.window[0], t.window[1] - 1)} (marked)</p>",
        more(t.hidden_before, "before"),
    ]
    out.extend(turn_html(turn, esc) for turn in t.turns)
    out.append(more(t.hidden_after, "after"))
    out.append("</section>")
    return "".join(out)
