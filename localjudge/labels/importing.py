"""`labels import`: a labels file (JSONL, JSON, CSV, Parquet) checked record by record, then appended to a run's store.

Every record passes `labels.validate_label_fields`, the checks of the view's label API, after two steps only a
file needs: the cell is found by `row_index` or by `id` (the row_id) and `judge` (which may be left out when the
run has one judge), and text columns (every CSV value) are read as what they spell: `row_index` "3" is 3 and a
pairwise label "1" is 1, but "x", "1.5" and "1e400" stay text and are refused. A bad record is one line naming
the file, its line (a record's position for JSON and Parquet) and the field. Nothing is written when any record
is bad, unless `skip_bad`: then the good ones are written and the bad ones counted in the report. A record that
`labels export` marked `stale` is bad too: it was given to other content than the row holds now.

A record with `granularity` "session" (a session label `labels export` wrote from a per-turn run, `id` the
conversation id) is a session label (store/session_labels.py) of that conversation when the run holds it as turns or tool
calls; in a session-level run the conversation is a row, so it is that row's label, as any record found by `id`.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .. import jsonio
from ..errors import InputError
from ..store import queries
from ..store.session_labels import SessionLabel
from .store import Domain, Label, judge_domain, store_of, validate_label_fields

MAX_ERRORS_SHOWN = 20  # bad records listed one per line; the rest are counted
_INT = re.compile(r"-?\d{1,19}")


class ImportReport(BaseModel):
    """What `import_labels` did: labels written, bad records skipped (with `skip_bad`), and the first lines."""

    imported: int
    skipped: int = 0
    errors: list[str] = []


def _records(path: Path) -> Iterator[tuple[str, dict[str, Any] | str]]:
    """(where, record or the one-line reason it cannot be read) for each record of a labels file."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        with path.open(encoding="utf-8", errors="surrogateescape") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = jsonio.loads(line)
                except (json.JSONDecodeError, RecursionError) as e:
                    yield f"line {n}", f"not valid JSON ({getattr(e, 'msg', type(e).__name__)})"
                    continue
                yield f"line {n}", obj if isinstance(obj, dict) else f"not a JSON object but {type(obj).__name__}"
    elif suffix == ".csv":
        with path.open(encoding="utf-8", errors="surrogateescape", newline="") as fh:
            reader = csv.DictReader(fh)
            for rec in reader:
                yield f"line {reader.line_num}", dict(rec)
    else:  # a JSON array or Parquet: the reader of `agree`, records numbered from 1
        from .agreement import read_labels

        for n, rec in enumerate(read_labels(path), 1):
            yield f"record {n}", rec


def _from_text(value: Any, domain: Domain | None) -> Any:
    """A text cell as the domain value it spells (CSV has only text), else unchanged."""
    if not isinstance(value, str) or domain is None:
        return value
    if domain.kind == "numeric" and re.fullmatch(r"-?\d{1,19}(\.\d{1,19})?", value.strip()):
        return float(value) if "." in value else int(value)
    if value not in domain.values:
        return next((v for v in domain.values if str(v) == value.strip()), value)
    return value


def import_labels(run_dir: str | Path, path: str | Path, labeller: str | None = None, skip_bad: bool = False) -> ImportReport:
    """Check every record of the labels file `path`, then append the labels to the run directory's store in one
    transaction. InputError (one line per bad record, at most MAX_ERRORS_SHOWN) when any is bad and not `skip_bad`,
    with nothing written; with `skip_bad`, the good ones are written and the report counts the others."""
    from ..store.db import Store

    p = Path(path)
    if not p.is_file():
        raise InputError(f"labels file {p} not found; pass a JSONL, JSON, CSV or Parquet file")
    if p.suffix.lower() not in (".jsonl", ".ndjson", ".json", ".csv", ".parquet", ".pq"):
        raise InputError(f"labels file {p} has extension {p.suffix or '(none)'}; use .jsonl, .json, .csv or .parquet")
    with Store(store_of(run_dir)) as st:
        run_id = st.latest_run()
        if run_id is None:
            raise InputError(f"{run_dir} has no run yet; run the evaluation first")
        cells = queries.cell_row_ids(st.conn, run_id)
        judges = sorted({j for _, j in cells})
        by_id = {(rid, j): ri for (ri, j), rid in cells.items()}
        turns = _conversation_turns(st, run_id)
        domains: dict[str, Domain | None] = {}
        todo: list[Label | SessionLabel] = []
        errors: list[str] = []
        try:
            records = list(_records(p))
        except UnicodeDecodeError as e:
            raise InputError(f"cannot read labels file {p}: {e}; save it as UTF-8") from None
        for where, rec in records:
            try:
                if isinstance(rec, str):
                    raise InputError(rec)
                if rec.get("granularity") == "session" and turns:  # a per-turn run: the conversation's own label
                    todo.append(_session_label(rec, run_id, turns, judges, domains, st, labeller))
                else:
                    todo.append(_label(rec, run_id, cells, judges, by_id, domains, st, labeller))
            except InputError as e:
                errors.append(f"{p}: {where}: {e}")
        if errors and not skip_bad:
            shown = errors[:MAX_ERRORS_SHOWN]
            more = len(errors) - len(shown)
            tail = f"\n... and {more} more bad records" if more else ""
            fix = "; fix them, or pass --skip-bad to import only the good ones (nothing was imported)"
            raise InputError("\n".join(shown) + tail + fix)
        st.add_labels(todo)
    return ImportReport(imported=len(todo), skipped=len(errors), errors=errors[:MAX_ERRORS_SHOWN])


def _conversation_turns(st: Any, run_id: str) -> dict[str, dict[str, int]]:
    """Per conversation the run holds as turns or tool calls (a per-turn run): judge -> its first row there."""
    return queries.conversation_first_rows(st.conn, run_id)


def _conversation_of(rec: dict[str, Any]) -> str | None:
    """The conversation id a session record names (`conversation_id`, else `id`), or None when it names none."""
    cid = rec.get("conversation_id")
    cid = rec.get("id") if cid in (None, "") else cid
    return str(cid) if isinstance(cid, (str, int)) and not isinstance(cid, bool) else None


def _session_label(
    rec: dict[str, Any],
    run_id: str,
    turns: dict[str, dict[str, int]],
    judges: list[str],
    domains: dict[str, Domain | None],
    st: Any,
    labeller: str | None,
) -> SessionLabel:
    """A session record as the session label of its conversation, checked like a turn label (judge, value, comment,
    labeller, sample, time; no sampling probability, as in the view), or InputError naming the bad field."""
    cid = _conversation_of(rec) or ""
    rid = rec.get("id")
    if rid not in (None, "") and str(rid) != cid:
        raise InputError(
            f"field id={str(rid)[:80]!r} is not field conversation_id={cid[:80]!r}; a session row's id is its conversation id"
        )
    judge = rec.get("judge") or (judges[0] if len(judges) == 1 else "")
    if not isinstance(judge, str) or judge not in judges:
        shown = judge if isinstance(judge, (str, int, float)) else type(judge).__name__
        raise InputError(f"field judge={str(shown)[:80]!r} is not a judge of the run (it has {', '.join(judges)}); set `judge`")
    if cid not in turns:
        raise InputError(f"field id={cid[:80]!r} is not a conversation of the run; a session label needs its conversation")
    if judge not in turns[cid]:
        raise InputError(f"field id={cid[:80]!r}: the conversation has no result for judge {judge!r} in the run")
    if judge not in domains:
        domains[judge] = judge_domain(list(itertools.islice(st.iter_results(run_id, [judge]), 20)))
    dom = domains[judge]
    if "label" not in rec:
        raise InputError("no field label")
    if rec.get("stale") is True:  # `labels export` marks a session label whose conversation changed after it was given
        raise InputError("field stale is true: the label was given to a conversation that has changed since; label it again")
    if rec.get("probability") not in (None, ""):
        raise InputError("field probability is for a row's label only; leave it out of a session label")
    fields = {
        "row_index": turns[cid][judge],
        "value": _from_text(rec["label"], dom),
        "comment": None if rec.get("comment") in (None, "") else rec["comment"],
        "labeller": labeller or rec.get("labeller") or "import",
        "sample": rec.get("sample") or "browse",
        "labelled_at": rec.get("labelled_at"),
    }
    f = validate_label_fields(fields, dom, judge)
    return SessionLabel(
        run_id=run_id,
        conversation_id=cid,
        judge=judge,
        value=f.value,
        comment=f.comment,
        labeller=f.labeller,
        sample=f.sample,
        created=f.labelled_at,
    )


def _label(
    rec: dict[str, Any],
    run_id: str,
    cells: dict[tuple[int, str], str],
    judges: list[str],
    by_id: dict[tuple[str, str], int],
    domains: dict[str, Domain | None],
    st: Any,
    labeller: str | None,
) -> Label:
    """One record as the label it gives, or InputError naming the bad field."""
    judge = rec.get("judge") or (judges[0] if len(judges) == 1 else "")
    if not isinstance(judge, str) or judge not in judges:
        shown = judge if isinstance(judge, (str, int, float)) else type(judge).__name__
        raise InputError(f"field judge={str(shown)[:80]!r} is not a judge of the run (it has {', '.join(judges)}); set `judge`")
    if judge not in domains:
        domains[judge] = judge_domain(list(itertools.islice(st.iter_results(run_id, [judge]), 20)))
    dom = domains[judge]
    ri = rec.get("row_index")
    if ri in (None, ""):
        rid = rec.get("id")
        if not isinstance(rid, (str, int)) or isinstance(rid, bool) or (str(rid), judge) not in by_id:
            raise InputError(f"no field row_index, and field id={str(rid)[:80]!r} is not a row of the run")
        ri = by_id[(str(rid), judge)]
    elif isinstance(ri, str) and _INT.fullmatch(ri.strip()):
        ri = int(ri)
    if "label" not in rec:
        raise InputError("no field label")
    if rec.get("stale") is True:  # `labels export` marks a label whose row changed after it was given
        raise InputError("field stale is true: the label was given to a row that has changed since; label the row again")
    fields = {
        "row_index": ri,
        "value": _from_text(rec["label"], dom),
        "comment": None if rec.get("comment") in (None, "") else rec["comment"],
        "labeller": labeller or rec.get("labeller") or "import",
        "sample": rec.get("sample") or "browse",
        "labelled_at": rec.get("labelled_at"),
        "probability": rec.get("probability"),
    }
    f = validate_label_fields(fields, dom, judge)
    if (f.row_index, judge) not in cells:
        raise InputError(f"field row_index={f.row_index} has no result for judge {judge!r} in the run")
    rid = rec.get("id")
    if rec.get("row_index") not in (None, "") and rid not in (None, "") and str(rid) != cells[(f.row_index, judge)]:
        # both given and naming different rows (another run's export, reordered data): never move the label
        raise InputError(
            f"field id={str(rid)[:80]!r} is not the row at row_index={f.row_index} "
            f"(that row is {cells[(f.row_index, judge)][:80]!r}); drop row_index to match the row by id"
        )
    return Label(
        run_id=run_id,
        row_index=f.row_index,
        judge=judge,
        row_id=cells[(f.row_index, judge)],
        value=f.value,
        comment=f.comment,
        labeller=f.labeller,
        sample=f.sample,
        created=f.labelled_at,
        probability=f.probability,
    )
