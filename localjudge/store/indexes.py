"""What makes `localjudge view` fast on 100,000-row runs: indexes it adds to a run's store, and a search index
beside it.

Sort and queue indexes (`ensure_indexes`, run when the view opens a store): expression indexes on the JSON
fields the rows table sorts by (expected score and score, both directions, nulls last, as `runs.SORTS` orders
them) and one index by (run, judge, row) with scored, passed and the JSON fields the uncertainty queue reads
(SQLite 3.40 finds the rows by it; it still reads their JSON, as it cannot take expression values from an index). They are `CREATE INDEX IF NOT EXISTS`, named `view_*`, and not a migration: the
store's schema version, its tables and what `localjudge run` reads and writes are unchanged, an old store still
opens and resumes, and a store the view cannot write is simply read without them (slower, same answers).

Search (`SearchIndex`): an FTS5 table with the trigram tokenizer in `RUN_DIR/view-search.sqlite` (a file of
the view's own, deleted at will; it is rebuilt). Trigram indexes answer `LIKE '%text%'` with the same meaning as
a scan (case-insensitive for ASCII), so the index changes the speed of a search, never its answer. It is built
in a background thread on first use and brought up to date incrementally before each search (the results
committed since, by the store's `updated` column). Every run is queued for its build when the view opens it, on
one builder thread; a search waits for a build under way, and where SQLite has no FTS5, the directory is
read-only or the build failed, search scans the same text with LIKE.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from pathlib import Path

SIDECAR = "view-search.sqlite"

E = "json_extract(result, '$.expected_score')"
S = "json_extract(result, '$.score')"
V = "json_extract(result, '$.value')"

# the text a search looks in: the row id, the inputs, and what the judge said
SEARCH_TEXT = (
    "row_id || ' ' || inputs || ' ' || ifnull(json_extract(result, '$.value'), '') || ' ' || "
    "ifnull(json_extract(result, '$.rationale'), '') || ' ' || ifnull(json_extract(result, '$.raw_text'), '') || ' ' || "
    "ifnull(json_extract(result, '$.unscored_reason'), '') || ' ' || ifnull(json_extract(result, '$.error'), '')"
)

INDEXES = [
    f"CREATE INDEX IF NOT EXISTS view_expected_asc ON results (run_id, {E} IS NULL, {E}, row_index, judge)",
    f"CREATE INDEX IF NOT EXISTS view_expected_desc ON results (run_id, {E} IS NULL, {E} DESC, row_index, judge)",
    f"CREATE INDEX IF NOT EXISTS view_score_asc ON results (run_id, {S} IS NULL, {S}, row_index, judge)",
    f"CREATE INDEX IF NOT EXISTS view_score_desc ON results (run_id, {S} IS NULL, {S} DESC, row_index, judge)",
    f"CREATE INDEX IF NOT EXISTS view_queue ON results (run_id, judge, row_index, scored, passed, {E}, {S}, {V})",
]


def ensure_indexes(conn: sqlite3.Connection) -> bool:
    """Create the view's indexes on a store (a few hundred ms on 100k results, once); False when the store
    cannot be written (read-only file or directory, or locked past the busy timeout): it is then read without."""
    try:
        for sql in INDEXES:
            conn.execute(sql)
        return True
    except sqlite3.Error:
        return False


def has_fts5() -> bool:
    """Whether this Python's SQLite has FTS5 with the trigram tokenizer (SQLite >= 3.34)."""
    try:
        c = sqlite3.connect(":memory:")
        try:
            c.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram', detail=none)")
            return True
        finally:
            c.close()
    except sqlite3.Error:
        return False


def like_pattern(q: str) -> str:
    """`%q%` with LIKE's wildcards in `q` escaped by backslash (use with `ESCAPE '\\'`)."""
    return "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class SearchIndex:
    """The trigram index of one run's results in `RUN_DIR/view-search.sqlite` (see the module docstring).

    `ready` is False until the first build has finished; `sync()` indexes the results committed since the last
    call. Its own connection does the writes, so building never holds the view's store connection."""

    def __init__(self, store_path: Path, run_id: str):
        self.store_path, self.run_id = store_path, run_id
        self.path = store_path.parent / SIDECAR
        self.ready = False
        self.failed: str | None = None
        self._lock = threading.Lock()
        self._since: str | None = None
        self._tail = -1
        self._queued = False
        self._built = threading.Event()
        self.closed = False
        self._conn: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            c = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=False)
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")  # an index of the store: lost on a crash, rebuilt
            c.execute("ATTACH DATABASE ? AS store", (str(self.store_path),))  # only read: never written here
            c.execute("CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(text, tokenize='trigram', detail=none)")
            c.execute("CREATE TABLE IF NOT EXISTS synced (run_id TEXT PRIMARY KEY, updated TEXT)")
            self._conn = c
        return self._conn

    def sync(self) -> bool:
        """Index the run's results committed since the last sync (all of them the first time); True when the
        index is ready. Never raises: a failure leaves search on LIKE (the reason in `failed`)."""
        if self.failed is not None or self.closed:
            return False
        try:
            with self._lock:
                if self.closed:
                    return False
                c = self._open()
                if self._since is None:
                    r = c.execute("SELECT updated FROM synced WHERE run_id = ?", (self.run_id,)).fetchone()
                    self._since = r[0] if r else ""
                last, tail = c.execute(
                    "SELECT MAX(updated), COUNT(*) FROM store.results WHERE run_id = ? AND updated >= ?",
                    (self.run_id, self._since or ""),
                ).fetchone()
                # `updated` has one-second resolution: the last second is read again, and indexed again only when it
                # gained results (REPLACE keeps one copy of each)
                if last is not None and (last != self._since or tail != self._tail):
                    c.execute("BEGIN")  # deferred: a write lock on the index only, a read of the store
                    try:
                        c.execute(
                            "INSERT OR REPLACE INTO search (rowid, text) SELECT rowid, "
                            + SEARCH_TEXT
                            + " FROM store.results WHERE run_id = ? AND updated >= ?",
                            (self.run_id, self._since or ""),
                        )
                        c.execute("INSERT OR REPLACE INTO synced (run_id, updated) VALUES (?, ?)", (self.run_id, last))
                        c.execute("COMMIT")
                    except BaseException:
                        if c.in_transaction:
                            c.execute("ROLLBACK")
                        raise
                    self._since = last
                    self._tail = int(
                        c.execute(
                            "SELECT COUNT(*) FROM store.results WHERE run_id = ? AND updated >= ?", (self.run_id, last)
                        ).fetchone()[0]
                    )
                self.ready = True
                return True
        except (sqlite3.Error, OSError) as e:
            self.failed = str(e)
            self.ready = False
            return False

    def build_in_background(self) -> None:
        """Queue the first sync on the view's one builder thread (runs are indexed one after the other, so a
        folder of runs does not take every core); `wait` for it, or search with LIKE meanwhile."""
        if self._queued:
            return
        self._queued = True
        _builder().put(self)

    def wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the first build; True when the index is ready. A scan that ran beside the
        build would compete with it for the same CPU and take longer than what is left of it."""
        if self._queued:
            self._built.wait(timeout_s)
        return self.ready

    def close(self) -> None:
        """Close the index's connection."""
        with self._lock:
            self.closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None


_QUEUE: queue.Queue[SearchIndex] | None = None
_QUEUE_LOCK = threading.Lock()


def _builder() -> queue.Queue[SearchIndex]:
    """The queue of the one daemon thread that builds search indexes (started on first use)."""
    global _QUEUE
    with _QUEUE_LOCK:
        if _QUEUE is None:
            q: queue.Queue[SearchIndex] = queue.Queue()

            def work() -> None:
                while True:
                    idx = q.get()
                    try:
                        idx.sync()
                    finally:
                        idx._built.set()

            threading.Thread(target=work, daemon=True, name="view-search-builder").start()
            _QUEUE = q
        return _QUEUE


def attach_search(conn: sqlite3.Connection, path: Path) -> bool:
    """Attach the search index to the view's store connection (read side) as `vsearch`; False when it cannot."""
    try:
        names = {r[1] for r in conn.execute("PRAGMA database_list")}
        if "vsearch" not in names:
            conn.execute("ATTACH DATABASE ? AS vsearch", (str(path),))
        return True
    except sqlite3.Error:
        return False


def search_where(q: str, use_index: bool) -> tuple[str, str]:
    """(the WHERE part of a search on `results` with one `?`, its pattern): through the index or by scan, the
    same text and the same LIKE either way. A `q` holding LIKE's wildcards is escaped (the index then reads
    every entry of its table, still without parsing the store's JSON)."""
    plain = not any(ch in q for ch in "%_\\")
    pattern, escape = ("%" + q + "%", "") if plain else (like_pattern(q), " ESCAPE '\\'")
    if use_index:
        return f"rowid IN (SELECT rowid FROM vsearch.search WHERE text LIKE ?{escape})", pattern
    return f"({SEARCH_TEXT}) LIKE ?{escape}", pattern
