"""The store's schema as append-only named migrations, and applying them.

`PRAGMA user_version` holds how many have run (the schema version) and `_migrations` records their names.
Never edit or reorder a migration that has shipped: append a new one. An old store opens, migrates and resumes
(tests/test_legacy_store.py); a store with a migration this version does not know is refused (a newer localjudge).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from ..errors import InputError
from .format_spec import legacy_format_spec_json

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")  # as the store writes its other times (db.py)


MIGRATIONS: list[tuple[str, str]] = [
    (
        "001_initial",
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            created TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE results (
            run_id TEXT NOT NULL,
            row_index INTEGER NOT NULL,
            judge TEXT NOT NULL,
            row_id TEXT NOT NULL,
            source TEXT NOT NULL,
            inputs TEXT NOT NULL,
            cache_key TEXT,
            record TEXT,
            result TEXT NOT NULL,
            error TEXT,
            scored INTEGER NOT NULL,
            passed INTEGER,
            updated TEXT NOT NULL,
            PRIMARY KEY (run_id, row_index, judge)
        );
        CREATE TABLE cache (
            cache_key TEXT PRIMARY KEY,
            record TEXT NOT NULL,
            result TEXT NOT NULL,
            created TEXT NOT NULL
        );
    """,
    ),
    (  # human labels of a run's cells (localjudge/labels/store.py reads and writes them)
        "002_labels",
        """
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL,
            row_index INTEGER NOT NULL,
            judge TEXT NOT NULL,
            row_id TEXT NOT NULL,
            value TEXT,
            comment TEXT,
            labeller TEXT NOT NULL,
            sample TEXT NOT NULL,
            created TEXT NOT NULL
        );
        CREATE INDEX labels_cell ON labels (run_id, judge, row_index, id);
        CREATE INDEX results_updated ON results (run_id, updated)
        """,
    ),
    (  # what each label judged (labels.py: a label whose cell changed since is stale); labels already stored get
        # the binding of the cell they are on at migration time
        "003_label_binding",
        """
        ALTER TABLE labels ADD COLUMN prompt_hash TEXT;
        ALTER TABLE labels ADD COLUMN judge_version TEXT;
        UPDATE labels SET
            prompt_hash = (SELECT CASE WHEN json_valid(r.record) THEN json_extract(r.record, '$.prompt_hash') END
                           FROM results r WHERE r.run_id = labels.run_id AND r.row_index = labels.row_index
                           AND r.judge = labels.judge),
            judge_version = (SELECT CASE WHEN json_valid(r.result) THEN CAST(json_extract(r.result, '$.judge_version') AS TEXT) END
                             FROM results r WHERE r.run_id = labels.run_id AND r.row_index = labels.row_index
                             AND r.judge = labels.judge)
        """,
    ),
    (  # each result's format typed, kind + parameters as JSON (format_spec.py), beside the `describe()` string the
        # result JSON keeps; rows already stored get it read from that string (legacy_format_spec, the one reader)
        "004_format_spec",
        """
        ALTER TABLE results ADD COLUMN format_spec TEXT;
        UPDATE results SET format_spec =
            CASE WHEN json_valid(result) THEN legacy_format_spec(json_extract(result, '$.format')) END
        """,
    ),
    (  # where a result sits in a conversation (localjudge/conversations/dataset.py): null for single-turn rows
        "005_conversations",
        """
        ALTER TABLE results ADD COLUMN conversation_id TEXT;
        ALTER TABLE results ADD COLUMN turn_index INTEGER;
        ALTER TABLE results ADD COLUMN tool_call_index INTEGER;
        ALTER TABLE results ADD COLUMN truncated_turns INTEGER
        """,
    ),
    (  # the probability the label's row had of being picked (the view's `active` queue, labels/store.py); NULL:
        # a uniform random sample (the `random` queue) or not a sample (`uncertain`, `browse`)
        "006_label_sampling",
        """
        ALTER TABLE labels ADD COLUMN probability REAL
        """,
    ),
    (  # each judged conversation whole, once per run (localjudge/conversations/stored.py): the view's transcript
        "007_stored_conversations",
        """
        CREATE TABLE conversations (
            run_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            conversation TEXT NOT NULL,
            PRIMARY KEY (run_id, conversation_id)
        )
        """,
    ),
    (  # a label of a whole conversation given inside a per-turn run (localjudge/store/session_labels.py), kept apart
        # from the cell labels: append-only like them, bound to the conversation's turn prompts for staleness
        "008_i31_view_session",
        """
        CREATE TABLE session_labels (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            judge TEXT NOT NULL,
            value TEXT,
            comment TEXT,
            labeller TEXT NOT NULL,
            sample TEXT NOT NULL,
            created TEXT NOT NULL,
            binding TEXT,
            judge_version TEXT
        );
        CREATE INDEX session_labels_cell ON session_labels (run_id, judge, conversation_id, id)
        """,
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)
_SPEC_VERSION = [n for n, _ in MIGRATIONS].index("004_format_spec") + 1  # the schema that has results.format_spec
_CONV_VERSION = [n for n, _ in MIGRATIONS].index("005_conversations") + 1  # the schema with a result's conversation
_CONV_COLUMNS = ("conversation_id", "turn_index", "tool_call_index", "truncated_turns")


def migrate(conn: sqlite3.Connection, migrations: Sequence[tuple[str, str]] = MIGRATIONS) -> int:
    """Apply the migrations not yet applied, each in its own locked transaction; returns the version."""
    conn.create_function("legacy_format_spec", 1, legacy_format_spec_json, deterministic=True)
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)")
    names = [n for n, _ in migrations]
    for i, (name, sql) in enumerate(migrations):
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
            unknown = done - set(names)
            if unknown:
                raise InputError(f"store was written by a newer localjudge (migrations {sorted(unknown)}); upgrade localjudge")
            if name not in done:
                for stmt in sql.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute("INSERT INTO _migrations (name, applied) VALUES (?, ?)", (name, _now()))
                conn.execute(f"PRAGMA user_version = {i + 1}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
                conn.execute("ROLLBACK")
            raise
    return int(conn.execute("PRAGMA user_version").fetchone()[0])
