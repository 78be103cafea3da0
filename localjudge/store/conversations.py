"""The `conversations` table of a run's store (migration 007_stored_conversations): each conversation of a run as
its JSON text, by conversation id. What the text holds is conversations/stored.py's (the typed `Conversation`);
this module only keeps and finds it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from .db import Store


def put_conversation_texts(store: Store, run_id: str, texts: Iterable[tuple[str, str]]) -> int:
    """Store each `(conversation id, JSON text)` of a run in one transaction (a stored id is replaced); returns how
    many."""
    rows = [(run_id, cid, text) for cid, text in texts]
    with store._transaction():
        store.conn.executemany(
            "INSERT INTO conversations (run_id, conversation_id, conversation) VALUES (?, ?, ?) "
            "ON CONFLICT (run_id, conversation_id) DO UPDATE SET conversation = excluded.conversation",
            rows,
        )
    return len(rows)


def conversation_text(store: Store, run_id: str, conversation_id: str) -> str | None:
    """The stored text of one conversation of a run, or None."""
    with store._reading():
        r = store.conn.execute(
            "SELECT conversation FROM conversations WHERE run_id = ? AND conversation_id = ?", (run_id, conversation_id)
        ).fetchone()
    return None if r is None else r[0]


def read_conversation_texts(db_path: str | Path, run_id: str) -> list[tuple[str, str]]:
    """A run's `(conversation id, text)` pairs read from its store file read-only, without opening it as a `Store`
    (nothing is migrated or written); `[]` when the file or the table (a store older than the migration) is
    missing."""
    path = Path(db_path)
    if not path.is_file():
        return []
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT conversation_id, conversation FROM conversations WHERE run_id = ?", (run_id,)))
    except sqlite3.Error:
        return []
    finally:
        conn.close()
