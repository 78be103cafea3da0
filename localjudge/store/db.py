"""The SQLite store of a run: one row per (row, judge) in `results`, every judgement in `cache`.

Durability and concurrency:
  * WAL journal, `synchronous=FULL`, a 30 s busy timeout: every finished result is its own
    committed transaction, so a `kill -9` loses at most the judgement in flight, and two processes
    writing the same store wait for each other instead of failing or corrupting it.
  * Writes take the write lock up front (`BEGIN IMMEDIATE`); `results` is keyed by
    (run_id, row_index, judge) and written with an upsert, so a cell is never duplicated.

A store that cannot be written (disk full, read-only directory, no permission, I/O error) raises
`StorageError` naming the file; the transaction in flight is rolled back, so the file keeps every
result committed before it. Free space or make the directory writable, then run again to resume.

A damaged file (overwritten pages: SQLite's "database disk image is malformed", or not a database)
raises `InputError` (exit 2) naming the file and how to recover it, wherever SQLite notices it. A
result row whose JSON columns have a foreign shape is read as an unscored error row
(`unscored_reason` `foreign_row`), never a traceback, and a resumed run judges that cell again.

Schema changes are append-only named migrations (store/migrations.py).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError, StorageError, UnscoredReason
from ..jsonio import loads
from .format_spec import FormatSpec
from .labels import Label, add_label
from .migrations import _CONV_COLUMNS, _CONV_VERSION, _SPEC_VERSION, MIGRATIONS, SCHEMA_VERSION, migrate
from .queries import run_meta_text
from .results import JudgeResult, Record, ResultRow
from .session_labels import SessionLabel, add_session_label

# MIGRATIONS, SCHEMA_VERSION and migrate moved to store/migrations.py; still importable from here
__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Record", "ResultRow", "Store", "connect", "migrate"]

# SQLite primary result codes that mean "cannot write here", not "bad file": PERM, READONLY, IOERR, FULL, CANTOPEN
_STORAGE_CODES = {3, 8, 10, 13, 14}


def storage_error(path: str | Path, e: BaseException) -> StorageError | None:
    """A one-line StorageError for an SQLite error that means the store cannot be written, else None."""
    code = getattr(e, "sqlite_errorcode", None)
    if not isinstance(e, sqlite3.Error) or code is None or code & 0xFF not in _STORAGE_CODES:
        return None
    return StorageError(
        f"cannot write the store {str(path)!r} ({e}); free disk space or make its directory writable, "
        "then run the same command again to resume"
    )


_COLUMNS = "run_id, row_index, judge, row_id, source, inputs, cache_key, record, result, error"
# SQLite primary result codes that mean the file itself is damaged: CORRUPT, NOTADB
_CORRUPT_CODES = {11, 26}


def corrupt_error(path: str | Path, e: BaseException) -> InputError | None:
    """A one-line InputError (exit 2) for an SQLite error that means the store file is damaged, else None."""
    code = getattr(e, "sqlite_errorcode", None)
    if not isinstance(e, sqlite3.DatabaseError) or code is None or code & 0xFF not in _CORRUPT_CODES:
        return None
    return InputError(
        f"the store {str(path)!r} is damaged ({e}); move it away (recover what it holds with "
        "`sqlite3 FILE .recover | sqlite3 NEW`) and run again to judge afresh"
    )


def _db_error(path: str | Path, e: BaseException) -> BaseException:
    """The library error for an SQLite error (cannot write / damaged file), or the error itself."""
    return storage_error(path, e) or corrupt_error(path, e) or e


def _json_or(text: Any, default: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return default


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def connect(path: str | Path, timeout_s: float = 30.0) -> sqlite3.Connection:
    """A connection in autocommit mode (explicit transactions), WAL, busy timeout, FULL sync."""
    conn = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
    # switching a new file to WAL needs an exclusive lock and does not always wait on the busy handler:
    # two processes opening a fresh store at once retry here instead of failing
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def _put_sql(spec_column: bool, conv_columns: bool = False) -> str:
    """The upsert of one result row; with the typed format column and the conversation columns where the schema
    has them."""
    cols = "run_id, row_index, judge, row_id, source, inputs, cache_key, record, result, error, scored, passed, updated"
    cols += ", format_spec" if spec_column else ""
    cols += "".join(f", {c}" for c in _CONV_COLUMNS) if conv_columns else ""
    names = [c.strip() for c in cols.split(",")]
    update = ", ".join(f"{c} = excluded.{c}" for c in names[3:])
    return (
        f"INSERT INTO results ({cols}) VALUES ({', '.join('?' * len(names))}) "
        f"ON CONFLICT (run_id, row_index, judge) DO UPDATE SET {update}"
    )


class Store:
    """Results and cache of runs in one SQLite file (safe for several processes at once)."""

    # the schema the file is at, set when opened; a Store made without opening (a test's store at an older
    # schema) reads and writes the columns that schema has
    schema_version: int = 0

    def _columns(self) -> str:
        """The results columns a row is read from: the first ten, then the typed format and the conversation
        columns where the schema has them (NULL where it does not)."""
        cols = _COLUMNS + (", format_spec" if self.schema_version >= _SPEC_VERSION else ", NULL")
        return cols + (", " + ", ".join(_CONV_COLUMNS) if self.schema_version >= _CONV_VERSION else ", NULL, NULL, NULL, NULL")

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageError(f"cannot create {str(self.path.parent)!r} ({e.strerror or e}); choose a writable place") from None
        try:
            self.conn = connect(self.path)
            self.schema_version = migrate(self.conn)
        except sqlite3.DatabaseError as e:
            err = storage_error(self.path, e)
            if err is not None:
                raise err from None
            raise InputError(f"cannot open store {str(self.path)!r} ({e}); move it away to start afresh") from None

    def close(self) -> None:
        """Close the database connection."""
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------- runs

    def _write(self, sql: str, args: Sequence[Any] = ()) -> None:
        """One autocommitted write; a store that cannot be written raises StorageError."""
        try:
            self.conn.execute(sql, args)
        except sqlite3.Error as e:
            raise _db_error(self.path, e) from None

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Reads: a damaged file raises the one-line InputError instead of sqlite3.DatabaseError."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            raise _db_error(self.path, e) from None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; on any error, ROLLBACK (unless SQLite already did, as on a full
        disk) and re-raise, as StorageError when the store cannot be written."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            yield
            self.conn.execute("COMMIT")
        except BaseException as e:
            if self.conn.in_transaction:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.DatabaseError:  # a damaged file may refuse even this; report the first error
                    pass
            err = _db_error(self.path, e)
            if err is e:
                raise
            raise err from None

    def add_labels(self, labels: Sequence[Label | SessionLabel]) -> list[Label | SessionLabel]:
        """Append cell labels and session labels in one transaction (all of them, or none on an error); each as
        stored, with its id."""
        with self._transaction():
            return [
                add_session_label(self.conn, lab) if isinstance(lab, SessionLabel) else add_label(self.conn, lab)
                for lab in labels
            ]

    def new_run(self, meta: dict[str, Any] | None = None, run_id: str | None = None) -> str:
        """Register a run and return its id (default `YYYYmmdd-HHMMSS-` + 6 hex digits); an existing id is kept
        as it is, metadata included."""
        run_id = run_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self._write(
            "INSERT OR IGNORE INTO runs (run_id, created, meta) VALUES (?, ?, ?)", (run_id, _now(), json.dumps(meta or {}))
        )
        return run_id

    def run_for_dir(self) -> str:
        """The run of a run directory's store: the existing one, or a new one (race-free across processes)."""
        with self._transaction():
            run_id = self.latest_run() or self.new_run()
        return run_id

    def latest_run(self) -> str | None:
        """The id of the most recently created run, or None when the store has none."""
        with self._reading():
            r = self.conn.execute("SELECT run_id FROM runs ORDER BY created DESC, rowid DESC LIMIT 1").fetchone()
        return r[0] if r else None

    def run_meta(self, run_id: str) -> dict[str, Any]:
        """A run's stored metadata (run.json's content); {} before the run registered it, or when it is not an object."""
        with self._reading():
            text = run_meta_text(self.conn, run_id)
        try:
            meta = loads(text) if text else {}
        except ValueError:
            return {}
        return meta if isinstance(meta, dict) else {}

    def set_run_meta(self, run_id: str, meta: dict[str, Any]) -> None:
        """Replace a run's metadata (stored as JSON, other values as text); an unknown run id changes nothing."""
        self._write("UPDATE runs SET meta = ? WHERE run_id = ?", (json.dumps(meta, default=str), run_id))

    # ------------------------------------------------------------------------------- results

    def put(self, row: ResultRow, cache: bool = False) -> None:
        """Write one result (and its cache entry) in one committed transaction."""
        res = row.result
        result_json = res.model_dump_json()
        record_json = row.record.model_dump_json() if row.record else None
        spec_column = self.schema_version >= _SPEC_VERSION
        values = [
            row.run_id, row.row_index, row.judge, row.row_id, row.source, json.dumps(row.inputs, ensure_ascii=False),
            row.cache_key, record_json, result_json, row.error, int(res.scored),
            None if res.passed is None else int(res.passed), _now(),
        ]  # fmt: skip
        if spec_column:
            values.append(res.format_spec.to_json() if res.format_spec is not None else None)
        conv_columns = self.schema_version >= _CONV_VERSION
        if conv_columns:
            values += [row.conversation_id, row.turn_index, row.tool_call_index, row.truncated_turns]
        with self._transaction():
            self.conn.execute(_put_sql(spec_column, conv_columns), values)
            if cache and row.cache_key and record_json:
                self.conn.execute(
                    "INSERT OR REPLACE INTO cache (cache_key, record, result, created) VALUES (?, ?, ?, ?)",
                    (row.cache_key, record_json, result_json, _now()),
                )

    def cell(self, run_id: str, row_index: int, judge: str) -> tuple[str | None, bool, bool | None] | None:
        """(cache_key, scored, passed) of a stored cell, or None when the cell has no result (or a result of a
        foreign shape, which is then judged again)."""
        with self._reading():
            r = self.conn.execute(
                f"SELECT {self._columns()}, scored, passed FROM results WHERE run_id = ? AND row_index = ? AND judge = ?",
                (run_id, row_index, judge),
            ).fetchone()
        if r is None or self._row(r).result.unscored_reason == UnscoredReason.FOREIGN_ROW:
            return None
        return r[6], bool(r[15]), None if r[16] is None else bool(r[16])

    def cached(self, cache_key: str) -> JudgeResult | None:
        """The cached result of a judgement by its cache key, or None when there is none (or it has a foreign shape)."""
        with self._reading():
            r = self.conn.execute("SELECT result FROM cache WHERE cache_key = ?", (cache_key,)).fetchone()
        return _result_or_none(r[0]) if r else None

    def _where(self, run_id: str, judges: Sequence[str] | None, max_rows: int | None) -> tuple[str, list[Any]]:
        sql = " WHERE run_id = ?"
        args: list[Any] = [run_id]
        if judges is not None:
            sql += f" AND judge IN ({', '.join('?' * len(judges))})"
            args += list(judges)
        if max_rows is not None:
            sql += " AND row_index < ?"
            args.append(max_rows)
        return sql, args

    def rows_with_results(self, run_id: str) -> int:
        """1 + the highest row index with a result in this run (0 when none)."""
        with self._reading():
            r = self.conn.execute("SELECT MAX(row_index) FROM results WHERE run_id = ?", (run_id,)).fetchone()
        return 0 if r[0] is None else int(r[0]) + 1

    def stored_inputs(self, run_id: str, below: int) -> dict[tuple[int, str], tuple[str, Any]]:
        """(row_id, inputs) of a run's cells by (row_index, judge), for the rows below `below` (inputs None when
        their JSON is foreign)."""
        with self._reading():
            cur = self.conn.execute(
                "SELECT row_index, judge, row_id, inputs FROM results WHERE run_id = ? AND row_index < ?", (run_id, below)
            )
            return {(int(r[0]), str(r[1])): (str(r[2]), _json_or(r[3], None)) for r in cur}

    def count(self, run_id: str, judges: Sequence[str] | None = None, max_rows: int | None = None) -> int:
        """How many results a run has, optionally only for `judges` and for rows below `max_rows`."""
        where, args = self._where(run_id, judges, max_rows)
        with self._reading():
            return int(self.conn.execute("SELECT COUNT(*) FROM results" + where, args).fetchone()[0])

    def iter_results(self, run_id: str, judges: Sequence[str] | None = None, max_rows: int | None = None) -> Iterator[ResultRow]:
        """Stored results in row order (judges in the order given), streamed from the database."""
        where, args = self._where(run_id, judges, max_rows)
        order = "row_index, judge"
        if judges:
            order = "row_index, CASE judge " + " ".join(f"WHEN ? THEN {i}" for i in range(len(judges))) + " END"
            args += list(judges)
        with self._reading():
            cur = self.conn.execute(
                f"SELECT {self._columns()} FROM results" + where + " ORDER BY " + order,
                args,
            )
            for r in cur:
                yield self._row(r)

    def _row(self, r: Sequence[Any]) -> ResultRow:
        """One stored row; JSON columns of a foreign shape make it an unscored `foreign_row` error row."""
        inputs = _json_or(r[5], None)
        record = result = None
        try:
            record = Record.model_validate_json(r[7]) if r[7] else None
            result = JudgeResult.model_validate_json(r[8])
        except (ValidationError, TypeError, ValueError):
            pass
        if result is not None and isinstance(inputs, dict):
            spec = FormatSpec.from_json(r[10])
            if spec is not None:
                result.format_spec = spec
            return ResultRow(
                run_id=r[0], row_index=r[1], judge=r[2], row_id=r[3], source=r[4], inputs=inputs,
                cache_key=r[6], record=record, result=result, error=r[9],
                conversation_id=r[11], turn_index=r[12], tool_call_index=r[13], truncated_turns=r[14],
            )  # fmt: skip
        judge, where = str(r[2]), f"{self.path}: row {r[1]!r}, judge {str(r[2])!r}"
        msg = f"{where}: the stored result has a foreign shape (not written by this localjudge); run again to judge it afresh"
        try:
            return ResultRow(
                run_id=str(r[0]), row_index=int(r[1]), judge=judge, row_id=str(r[3]), source=str(r[4]), cache_key=None,
                result=JudgeResult(judge=judge, judge_version="", format="", unscored_reason=UnscoredReason.FOREIGN_ROW, error=msg),
                error=msg,
            )  # fmt: skip
        except (ValidationError, TypeError, ValueError):
            raise InputError(f"{where}: not a result row of this localjudge; move the store away and run again") from None

    def integrity_ok(self) -> bool:
        """Whether SQLite's `PRAGMA integrity_check` finds the file sound."""
        try:
            return bool(self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok")
        except sqlite3.DatabaseError:
            return False


def _result_or_none(text: Any) -> JudgeResult | None:
    try:
        return JudgeResult.model_validate_json(text)
    except (ValidationError, TypeError, ValueError):
        return None
