"""The runs a `localjudge view` shows: found on disk, opened once, read with paginated SQL.

Every read goes to the run's SQLite store (results.sqlite), never to results.jsonl, so a run in
progress shows each result as soon as it is committed. Pages are `LIMIT/OFFSET` over the results'
primary key (run_id, row_index, judge): the first page of a 100,000-row run costs a few
milliseconds. Sorting by score or expected score walks an expression index, search reads a trigram index, the
uncertainty queue an index by judge and row (all made by the view when it opens a store: store/indexes.py).

Panels and cascades (localjudge/trust/): their members' results are stored as judges `JUDGE@MEMBER` beside the
combined `JUDGE`. The view lists, filters, queues and labels only `JUDGE` (`judges()`); the members' verdicts come
with each row of a page (`members` of an item; panels.py).

Status: the store's run metadata says `running`, `finished`, `interrupted` or `failed`. A run whose
metadata still says `running` but that committed nothing for `STALE_S` seconds was killed: it is
shown as `interrupted` (resume it with the same `localjudge run` command).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..conversations.model import Conversation
from ..conversations.stored import get_conversation
from ..conversations.transcript import preview
from ..datasets import Position
from ..errors import InputError
from ..labels.store import Label, label_history, latest_labels
from ..run.record import RunRecord, stored_record
from ..store import queries
from ..store.db import Store
from ..store.indexes import SearchIndex, attach_search, ensure_indexes, has_fts5, search_where
from ..store.pages import count_where, page_rows
from ..store.results import JudgeResult, Record, ResultRow
from ..store.session_labels import SessionLabel, conversation_of_row
from .panels import members_of_page, split_judges
from .rowpage import SORTS, STATUSES, check_page, filter_where, page_item
from .unreadable import STORE_ERRORS, Unreadable, reason_of, store_signature, unreadable_status

if TYPE_CHECKING:
    from ..report.controls import StoredControls

__all__ = [  # SORTS, STATUSES, Unreadable and unreadable_status stay importable from here, where they were defined
    "BUILD_WAIT_S",
    "SORTS",
    "STALE_S",
    "STATUSES",
    "RunHandle",
    "Runs",
    "Unreadable",
    "unreadable_status",
]

STALE_S = 120.0
BUILD_WAIT_S = 10.0  # a search waits this long for the search index being built, then scans


def _parse_time(s: Any) -> float | None:
    try:
        return datetime.strptime(str(s), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


class RunHandle:
    """One run directory, its store opened once (a lock serialises this process's use of the connection)."""

    def __init__(self, rid: str, path: Path):
        self.rid, self.path = rid, path
        self.store = Store(path / "results.sqlite")
        self.lock = threading.RLock()
        self._cache: dict[Any, Any] = {}
        self.indexed = ensure_indexes(self.store.conn)
        self._search: SearchIndex | None = None

    @contextmanager
    def conn(self) -> Iterator[Any]:
        """The store's connection, held alone for the duration."""
        with self.lock:
            yield self.store.conn

    def run_id(self) -> str | None:
        """The run id in the store (the latest run of the directory)."""
        return self.store.latest_run()

    def record(self) -> RunRecord:
        """The run's record from the store (what run.json holds, read as `Store.run_meta` reads it), empty before the
        run registered it."""
        rid = self.run_id()
        if rid is None:
            return RunRecord()
        with self.lock:
            return stored_record(self.store, rid)

    def controls(self) -> dict[str, StoredControls]:
        """Judge → its negative controls as the run directory's summary.json carries them (`localjudge run
        --controls`, `localjudge controls`), read as the report reads them (report/controls.py `stored_controls`);
        empty without any, or when the summary cannot be read (a run in progress has none yet)."""
        from .. import jsonio
        from ..report.controls import stored_controls

        try:
            summary = jsonio.loads((self.path / "summary.json").read_bytes())
        except (OSError, ValueError):
            return {}
        return stored_controls(summary)

    def all_judges(self) -> list[str]:
        """Every judge name with results, panel and cascade members included: the metadata's order, else a scan."""
        named = self.record().judge_names()
        if any(named):  # `localjudge run` always names them: no scan of the results
            return [j for j in dict.fromkeys(named) if j]
        rid = self.run_id()
        with self.conn() as c:
            return queries.result_judges(c, rid)

    def judges(self) -> list[str]:
        """The judges a user reads, queues and labels: a panel's or cascade's `JUDGE`, never its `JUDGE@MEMBER`."""
        return split_judges(self.all_judges())[0]

    def members(self) -> dict[str, list[str]]:
        """Panel or cascade judge -> the judge names of its members' results (in the run's order)."""
        return split_judges(self.all_judges())[1]

    def search_index(self) -> SearchIndex | None:
        """The run's trigram search index (queued for its build in the background on first use), None without
        FTS5 or before the run registered."""
        rid = self.run_id()
        if rid is None or not has_fts5():
            return None
        if self._search is None or self._search.run_id != rid:
            self._search = SearchIndex(self.store.path, rid)
            self._search.build_in_background()
        return self._search

    def status(self) -> dict[str, Any]:
        """Status, counts, progress and ETA (the same pace rule as the CLI: cells judged since the run started)."""
        record = self.record()
        rid = self.run_id()
        judges = self.judges()
        cells_per_row = len(self.all_judges())
        with self.conn() as c:
            done = queries.result_count(c, rid)
            last = queries.last_update(c, rid)  # both read the (run_id, updated) index of migration 002
            n_labels = queries.current_label_count(c, rid)
            started = _parse_time(record.started)
            since = 0
            if started is not None and record.status == "running":
                since = queries.results_since(c, rid, record.started)
        status = str(record.status or ("finished" if done else "unknown"))
        now = time.time()
        last_t = _parse_time(last) or started
        if status == "running" and last_t is not None and now - last_t > STALE_S:
            status = "interrupted"
        rows_total = int(record.rows or 0)
        cells_total = rows_total * max(1, cells_per_row) if rows_total else done
        eta = None
        if status == "running" and started is not None and since > 0 and cells_total > done:
            eta = (cells_total - done) * (now - started) / since
        return {
            "rid": self.rid,
            "run_id": rid,
            "path": str(self.path),
            "status": status,
            "judges": judges,
            "members": self.members(),
            "model": record.model_id if "model_id" in record.model_fields_set else "",
            "data": record.data if "data" in record.model_fields_set else "",
            "started": record.started,
            "finished": record.finished,
            "cells_done": done,
            "cells_total": cells_total,
            "rows_total": rows_total,
            "progress": (done / cells_total) if cells_total else 0.0,
            "eta_s": eta,
            "labels": n_labels,
        }

    # --------------------------------------------------------------------------------------- rows

    def rows(
        self,
        judge: str | None = None,
        status: str | None = None,
        q: str | None = None,
        sort: str = "row",
        page: int = 1,
        per: int = 50,
    ) -> dict[str, Any]:
        """One page of (row, judge) results matching the filters, with their current labels and the total."""
        check_page(sort, status, page, per)
        rid = self.run_id()
        members = self.members()
        # a panel's or cascade's members show beside its verdict, not as rows of their own
        where, args = filter_where(rid, judge, status, self.judges() if members else None)
        searched_by = None
        if q:
            idx = self.search_index()
            use = idx is not None and idx.wait(BUILD_WAIT_S) and idx.sync()
            with self.conn() as c:
                use = use and attach_search(c, idx.path)  # type: ignore[union-attr]
            clause, pat = search_where(q, bool(use))
            where += " AND " + clause
            args.append(pat)
            searched_by = "index" if use else "scan"
        with self.conn() as c:
            total = count_where(c, where, args)
            cur = page_rows(c, where, args, sort, page, per)
            labels = latest_labels(c, rid or "", cells=[(r[0], r[2]) for r in cur]) if cur else {}
            of_members = members_of_page(c, rid or "", members, [(r[0], r[2]) for r in cur]) if members and cur else {}
        items = [page_item(r, labels.get((r[0], r[2])), of_members.get((r[0], r[2]), {})) for r in cur]
        self._conversation_previews(rid or "", cur, items)
        out = {"total": total, "page": page, "per": per, "pages": max(1, -(-total // per)), "items": items}
        if searched_by:
            out["searched_by"] = searched_by
        return out

    def _conversation_previews(self, rid: str, rows: list[Any], items: list[dict[str, Any]]) -> None:
        """A conversation row's inputs as a transcript preview (roles, first words, tool calls of the turns its judge
        saw) instead of its prompt text; a run that did not store its conversations keeps the text."""
        convs: dict[str, Conversation | None] = {}
        opts = self.record().conversation if any(r[12] is not None for r in rows) else None
        for r, item in zip(rows, items, strict=True):
            if r[12] is None:
                continue
            if r[12] not in convs:
                with self.lock:
                    convs[r[12]] = get_conversation(self.store, rid, r[12])
            conv = convs[r[12]]
            if conv is not None:
                item["inputs"] = preview(conv, Position(r[12], r[13], r[14], r[15]), opts if isinstance(opts, dict) else {})
                item["transcript_preview"] = True

    def results_of_row(self, row_index: int) -> list[ResultRow]:
        """Every judge's stored result for one data row."""
        rid = self.run_id()
        with self.conn() as c:
            cur = queries.result_rows_of_row(c, rid, row_index)
        return [_result_row(r) for r in cur]

    def results_of_cells(self, judge: str, row_indexes: list[int]) -> list[ResultRow]:
        """One judge's results for the given rows (in chunks of 500)."""
        rid = self.run_id()
        with self.conn() as c:
            cur = queries.result_rows_of_cells(c, rid, judge, row_indexes)
        return [_result_row(r) for r in cur]

    def labels(self, judge: str | None = None) -> dict[tuple[int, str], Label]:
        """Current labels of the run (of one judge, when given)."""
        with self.conn() as c:
            return latest_labels(c, self.run_id() or "", judge)

    def history(self, row_index: int) -> list[Label]:
        """Every label row of a data row, oldest first."""
        with self.conn() as c:
            return label_history(c, self.run_id() or "", row_index)

    def add_label(
        self,
        row_index: int,
        judge: str,
        value: Any,
        comment: str | None,
        labeller: str,
        sample: str,
        probability: float | None = None,
    ) -> Label:
        """Append a label for a cell that has a result; InputError naming the cell otherwise."""
        rid = self.run_id() or ""
        with self.conn() as c:
            row_id = queries.cell_row_id(c, rid, row_index, judge)
            if row_id is None:
                raise InputError(f"row {row_index} has no result for judge {judge!r}; label a cell the run has judged")
            label = Label(
                run_id=rid,
                row_index=row_index,
                judge=judge,
                row_id=row_id,
                value=value,
                comment=comment or None,
                labeller=labeller,
                sample=sample,
                probability=probability,
            )
            (stored,) = self.store.add_labels([label])
        assert isinstance(stored, Label)
        return stored

    def session_label(
        self, row_index: int, judge: str, value: Any, comment: str | None, labeller: str, sample: str
    ) -> SessionLabel:
        """Append a session label for the conversation of a row (store/session_labels.py); InputError naming the row
        when it has no result for the judge or is not a turn of a conversation."""
        rid = self.run_id() or ""
        with self.conn() as c:
            cid = conversation_of_row(c, rid, row_index, judge)
            lab = SessionLabel(run_id=rid, conversation_id=cid, judge=judge, value=value, comment=comment or None,
                               labeller=labeller, sample=sample)  # fmt: skip
            (stored,) = self.store.add_labels([lab])
        assert isinstance(stored, SessionLabel)
        return stored

    def close(self) -> None:
        """Close the store and the search index."""
        if self._search is not None:
            self._search.close()
        self.store.close()


def _result_row(r: Any) -> ResultRow:
    return ResultRow(
        run_id=r[0],
        row_index=r[1],
        judge=r[2],
        row_id=r[3],
        source=r[4],
        inputs=json.loads(r[5]),
        cache_key=r[6],
        record=Record.model_validate_json(r[7]) if r[7] else None,
        result=JudgeResult.model_validate_json(r[8]),
        error=r[9],
    )


class Runs:
    """The runs on show: the directories named on the command line and those under `--runs-root` (rescanned on
    every listing, so a run started later appears). Each gets a short URL-safe id from its directory name. A run
    whose store cannot be opened is kept as `Unreadable` (listed with its reason; tried again when its file
    changes), so one bad store never hides the others."""

    def __init__(self, run_dirs: list[Path], runs_root: Path | None = None):
        self.fixed = [Path(p) for p in run_dirs]
        self.root = runs_root
        self.handles: dict[str, RunHandle] = {}
        self.bad: dict[str, Unreadable] = {}
        self._by_path: dict[Path, str] = {}
        self._lock = threading.Lock()
        for p in self.fixed:
            if not (p / "results.sqlite").is_file():
                raise InputError(f"{p} has no results.sqlite: pass the --out directory of `localjudge run`")
        self.scan()

    def scan(self) -> list[RunHandle | Unreadable]:
        """Open any new run directory (and any unreadable one whose store changed); the runs in display order."""
        found = list(self.fixed)
        if self.root is not None and self.root.is_dir():
            found += sorted(p for p in self.root.iterdir() if (p / "results.sqlite").is_file())
        with self._lock:
            for p in found:
                key = p.resolve()
                rid = self._by_path.get(key)
                if rid is not None and (rid in self.handles or self.bad[rid].signature == store_signature(p)):
                    continue
                if rid is None:
                    base = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in p.name) or "run"
                    rid, n = base, 2
                    while rid in self.handles or rid in self.bad:
                        rid, n = f"{base}-{n}", n + 1
                sig = store_signature(p)
                try:
                    handle = RunHandle(rid, p)
                except STORE_ERRORS as e:
                    self.bad[rid] = Unreadable(rid, p, reason_of(e), sig)
                    self._by_path[key] = rid
                    continue
                self.bad.pop(rid, None)
                self.handles[rid] = handle
                self._by_path[key] = rid
                handle.search_index()  # queued for its first build (store/indexes.py)
            out: list[RunHandle | Unreadable] = []
            for p in dict.fromkeys(found):
                rid = self._by_path[p.resolve()]
                out.append(self.handles.get(rid) or self.bad[rid])
            return out

    def listing(self) -> list[dict[str, Any]]:
        """Every run's `status()`; a run whose store fails while it is read is listed as unreadable with the reason."""
        out = []
        for h in self.scan():
            try:
                out.append(h.status())
            except STORE_ERRORS as e:
                out.append(unreadable_status(h.rid, h.path, reason_of(e)))
        return out

    def get(self, rid: str) -> RunHandle:
        """The run with this id; KeyError when there is none, InputError naming the reason when it is unreadable."""
        if rid not in self.handles:
            self.scan()
        if rid in self.bad:
            raise InputError(f"run {rid} cannot be read: {self.bad[rid].reason}")
        return self.handles[rid]

    def close(self) -> None:
        """Close every store."""
        for h in self.handles.values():
            h.close()
