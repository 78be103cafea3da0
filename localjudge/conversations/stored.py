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
from ..store.db import Store
from .model import Conversation


def put_conversations(store: Store, run_id: str, convs: Iterable[tuple[str, Conversation]]) -> int:
    """Store each `(conversation id, conversation)` of a run in one transaction; returns how many."""
    rows = [(run_id, cid, conv.model_dump_json(exclude_defaults=True)) for cid, conv in convs]
    with store._transaction():
        store.conn.executemany(
            "INSERT INTO conversations (run_id, conversation_id, conversation) VALUES (?, ?, ?) "
            "ON CONFLICT (run_id, conversation_id) DO UPDATE SET conversation = excluded.conversation",
            rows,
        )
    return len(rows)


def get_conversation(store: Store, run_id: str, conversation_id: str) -> Conversation | None:
    """A run's stored conversation, or None (a run made before the table existed, or a row that could not be read;
    a stored text of a foreign shape is None too, never a traceback)."""
    with store._reading():
        r = store.conn.execute(
            "SELECT conversation FROM conversations WHERE run_id = ? AND conversation_id = ?", (run_id, conversation_id)
        ).fetchone()
    if r is None:
        return None
    try:
        return Conversation.model_validate(jsonio.loads(r[0], max_depth=jsonio.PARSER_DEPTH))
    except (ValueError, ValidationError):
        return None


def read_stored_conversations(db_path: str | Path, run_id: str) -> dict[str, Conversation]:
    """A run's stored conversations by id, read from its store file without opening it as a `Store` (so nothing is
    migrated or written: the report reads an old run directory as it is); `{}` when the file or the table (a store
    older than 007_stored_conversations) is missing. A stored text of a foreign shape is left out."""
    import sqlite3

    path = Path(db_path)
    if not path.is_file():
        return {}
    out: dict[str, Conversation] = {}
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT conversation_id, conversation FROM conversations WHERE run_id = ?", (run_id,)).fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    for cid, text in rows:
        try:
            out[cid] = Conversation.model_validate(jsonio.loads(text, max_depth=jsonio.PARSER_DEPTH))
        except (ValueError, ValidationError):
            continue
    return out
