"""Each conversation of a run kept whole in its store (table `conversations`, store migration 007_stored_conversations), so
`localjudge view` can show a result as the chat transcript it came from: a per-turn result's inputs hold only its
window, as the judge saw it, not the turns around it.

Written once per run before its rows are judged (a resumed run rewrites it: the same data gives the same JSON);
read by conversation id. A store older than the migration gains the empty table when it opens."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from .. import jsonio
from ..store.conversations import conversation_text, put_conversation_texts, read_conversation_texts
from ..store.db import Store
from .model import Conversation


def put_conversations(store: Store, run_id: str, convs: Iterable[tuple[str, Conversation]]) -> int:
    """Store each `(conversation id, conversation)` of a run in one transaction; returns how many."""
    return put_conversation_texts(store, run_id, ((cid, conv.model_dump_json(exclude_defaults=True)) for cid, conv in convs))


def _parsed(text: str) -> Conversation | None:
    """A stored text as a `Conversation`; None for a text of a foreign shape (never a traceback)."""
    try:
        return Conversation.model_validate(jsonio.loads(text, max_depth=jsonio.PARSER_DEPTH))
    except (ValueError, ValidationError):
        return None


def get_conversation(store: Store, run_id: str, conversation_id: str) -> Conversation | None:
    """A run's stored conversation, or None (a run made before the table existed, or a row that could not be read;
    a stored text of a foreign shape is None too, never a traceback)."""
    text = conversation_text(store, run_id, conversation_id)
    return None if text is None else _parsed(text)


def read_stored_conversations(db_path: str | Path, run_id: str) -> dict[str, Conversation]:
    """A run's stored conversations by id, read from its store file without opening it as a `Store` (so nothing is
    migrated or written: the report reads an old run directory as it is); `{}` when the file or the table (a store
    older than 007_stored_conversations) is missing. A stored text of a foreign shape is left out."""
    out: dict[str, Conversation] = {}
    for cid, text in read_conversation_texts(db_path, run_id):
        conv = _parsed(text)
        if conv is not None:
            out[cid] = conv
    return out
