"""The HTML report's conversation parts: each conversation result's transcript, and the per-conversation aggregate.

A result of a session, per-turn or per-tool-call run (one with a `conversation_id`) shows the conversation it judged
as a transcript (`conversations/transcript.py`, the bounding `localjudge view` uses, with fewer turns: `MAX_SHOWN`
around what was judged, texts cut at the report's `--max-chars`): roles, the assistant's tool calls with their
arguments, tool results and errors, the judged turn or call marked, the turns the judge saw marked, the rest counted
("N turns hidden"). The conversations come from the run directory's store (`results.sqlite`, read without migrating
it); a run directory without them (made before store migration 007_stored_conversations, or copied without its
store) shows no transcript. Every text is escaped.

The aggregate is run.json's `conversations` (what `run` recorded: `run/turns.py`'s rule), else the same rule
recomputed from the results (a run directory written before runs recorded it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from ..conversations.stored import read_stored_conversations
from ..conversations.transcript import Transcript, build, preview
from ..conversations.transcript_html import turn_html
from ..datasets import Position
from ..run.turns import per_conversation
from .rundir import Run

MAX_SHOWN = 12  # turns a report row shows around what it judged (a per-turn run repeats them on every row)


def aggregate(run: Run) -> dict[str, Any]:
    """The per-conversation aggregate of a per-turn or per-tool-call run (`{}` for any other run)."""
    agg = run.record.conversations
    if agg is not None and agg.get("judges"):
        return agg
    return per_conversation(run.rows)


def transcripts(run: Run, max_chars: int, row_indexes: set[int]) -> dict[int, tuple[Markup, str]]:
    """Each conversation result's transcript HTML and its one-line preview (`conversations.transcript.preview`: the
    turns the judge saw, roles and first words) by its row index (only the rows in `row_indexes`, those shown)."""
    pos: dict[int, Position] = {}
    for r in run.rows:
        if r.conversation_id is not None and r.row_index in row_indexes and r.row_index not in pos:
            pos[r.row_index] = Position(r.conversation_id, r.turn_index, r.tool_call_index, r.truncated_turns)
    if not pos:
        return {}
    convs = read_stored_conversations(Path(run.path) / "results.sqlite", run.run_id)
    options = run.record.conversation or {}
    out: dict[int, tuple[Markup, str]] = {}
    for i, p in pos.items():
        conv = convs.get(p.conversation_id)
        if conv is not None:
            html = transcript_html(build(conv, p, options, max_shown=MAX_SHOWN, max_chars=max_chars))
            out[i] = html, preview(conv, p, options)
    return out


def transcript_html(t: Transcript) -> Markup:
    """A transcript as an escaped HTML block: the hidden turns counted before and after the ones shown."""
    what = {"session": "the whole conversation", "turn": "a turn", "tool_call": "a tool call"}.get(t.granularity, t.granularity)

    def hidden(n: int, where: str) -> str:
        return f'<p class="hidden-turns" data-hidden="{where}">{n} turn{"s" if n != 1 else ""} hidden {where}</p>' if n else ""

    out = [
        f'<div class="transcript" data-conversation="{escape(t.conversation_id)}" data-granularity="{escape(t.granularity)}">'
        f'<p class="note">conversation <code>{escape(t.conversation_id)}</code> · {t.total_turns} turns · judged: {escape(what)}'
        f" · the judge saw turns {t.window[0]}–{max(t.window[0], t.window[1] - 1)}</p>",
        hidden(t.hidden_before, "before"),
    ]
    out.extend(turn_html(turn, escape) for turn in t.turns)
    out.append(hidden(t.hidden_after, "after"))
    out.append("</div>")
    return Markup("".join(out))
