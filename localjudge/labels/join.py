"""Human labels against a run's results: reading a labels file, normalising label values to what the judge
can produce, and joining labels to results by `row_id` (the data's `id` column), by position, or by a key column.

A join that matches nothing, duplicate keys, or label values the judge cannot produce are errors that say what
was found. `agreement.py` computes the statistics on the joined pairs.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .. import jsonio
from ..errors import InputError
from ..formats.base import LabelKind
from ..formats.facts import label_kind
from ..store.format_spec import FormatSpec, legacy_format_spec

if TYPE_CHECKING:
    from ..store.results import ResultRow

# The one "kind" type of results (how they compare with labels): the formats' own; "none" (a statement list)
# never reaches the statistics (`judge_kind` refuses it).
Kind = LabelKind
# ----------------------------------------------------------------------------------- judge kinds
# Each format says how its results compare with labels (`OutputFormat.label_kind`); formats that do not say,
# and results whose format is not installed, are judged by their values.


def row_format(row: ResultRow) -> FormatSpec | list[Any] | None:
    """The format a row was judged with, typed: its record's (a list for a judge with several formats), else
    its result's; None when neither names one. A record from before the typed spec (a `describe()` string) is
    read by the store's legacy reader."""
    rec = row.record_fields().get("format")
    if isinstance(rec, list):
        return rec
    spec = FormatSpec.from_flat(rec) if isinstance(rec, dict) else legacy_format_spec(rec) if isinstance(rec, str) else None
    return spec or row.result.format_spec


def judge_kind(rows: Sequence[ResultRow]) -> tuple[Kind, list[Any] | None]:
    """How a judge's results compare with labels, and the values it can produce (None: not known)."""
    fmt: FormatSpec | list[Any] | None = None
    for r in rows:
        fmt = row_format(r)
        if fmt is not None:
            break
    name = rows[0].judge if rows else "?"
    fact = label_kind(fmt) if isinstance(fmt, FormatSpec) else None
    if fact is not None:
        if fact[0] == "none":
            raise InputError(
                f"judge {name!r} produces a statement list, not a verdict: agreement needs a yes/no, choice, score or pairwise judge"
            )
        return fact[0], fact[1]
    values = [r.result.value for r in rows if r.result.scored]
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "numeric", None
    return "categorical", None


def _key_str(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


_YES = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}


def normalise_label(v: Any, kind: Kind, allowed: list[Any] | None) -> Any:
    """A label value in the judge's own terms, or None when the judge cannot produce it."""
    if kind == "numeric":
        if isinstance(v, bool):
            return None
        try:
            x = float(v)
        except (TypeError, ValueError):
            return None
        return x if math.isfinite(x) else None
    if kind == "pairwise":
        s = _key_str(v).lower()
        return {"1": 1, "2": 2, "tie": "tie"}.get(s)
    if isinstance(v, bool):
        v = "yes" if v else "no"
    s = _key_str(v)
    if allowed is None:
        return s
    if s in allowed:
        return s
    low = {str(a).lower(): a for a in allowed}
    if allowed == ["yes", "no"]:
        return _YES.get(s.lower())
    return low.get(s.lower())


def judge_value(row: ResultRow, kind: Kind) -> Any:
    """The comparable value of a scored result: a label, a score, or the winning answer."""
    r = row.result
    if kind == "numeric":
        return r.score if r.score is not None else (float(r.value) if isinstance(r.value, (int, float)) else None)
    if kind == "pairwise":
        from ..judges.pairwise import winner_of

        return winner_of(r)
    if isinstance(r.value, bool):
        return "yes" if r.value else "no"
    return None if r.value is None else _key_str(r.value)


# ----------------------------------------------------------------------------------------- labels


def read_labels(path: str | Path) -> list[dict[str, Any]]:
    """Label rows from JSONL, a JSON array, CSV or Parquet (by extension)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"labels file {p} not found; pass a JSONL, JSON, CSV or Parquet file")
    suffix = p.suffix.lower()
    try:
        if suffix in (".jsonl", ".ndjson"):
            out = []
            with p.open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if line.strip():
                        try:
                            obj = jsonio.loads(line)
                        except json.JSONDecodeError as e:
                            raise InputError(f"{p}:{n}: not valid JSON ({e.msg}); fix or remove that line") from None
                        if not isinstance(obj, dict):
                            raise InputError(f"{p}:{n}: expected a JSON object per line, got {type(obj).__name__}")
                        out.append(obj)
            return out
        if suffix == ".json":
            data = jsonio.loads(p.read_text(encoding="utf-8"))
            if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
                raise InputError(f"{p}: a JSON labels file must be an array of objects")
            return data
        if suffix == ".csv":
            with p.open(encoding="utf-8", newline="") as fh:
                return [dict(r) for r in csv.DictReader(fh)]
        if suffix in (".parquet", ".pq"):
            import pandas as pd

            return pd.read_parquet(p).to_dict(orient="records")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read labels file {p}: {e}; check that it is UTF-8 {suffix[1:]}") from None
    raise InputError(f"labels file {p} has extension {suffix or '(none)'}; use .jsonl, .json, .csv or .parquet")


class Join(BaseModel):
    """How labels were joined to results: the rule used, the counts, and up to 5 unmatched keys of each side."""

    how: str
    n_results: int
    n_labels: int
    n_matched: int
    unmatched_label_keys: list[str]
    unmatched_result_keys: list[str]


def _run_side(rows: Sequence[ResultRow], field: str) -> list[str | None]:
    if field == "row_id":
        return [r.row_id for r in rows]
    if field == "row_index":
        return [str(r.row_index) for r in rows]
    return [None if field not in r.inputs else _key_str(r.inputs[field]) for r in rows]


def join_labels(
    rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], key: str | None = None
) -> tuple[list[tuple[ResultRow, dict[str, Any]]], Join]:
    """Pair each result with its label row.

    key None: the labels' `id` column against row_id if it has one, else by position (label i ↔ row i).
    key "COL": labels[COL] against the input variable COL when the results have it, else against row_id.
    key "COL=FIELD": labels[COL] against FIELD: `row_id`, `row_index` or an input variable.
    """
    if not labels:
        raise InputError("the labels file has no rows")
    columns = list(dict.fromkeys(k for lab in labels for k in lab))
    if key is None:
        if "id" in columns:
            col, field = "id", "row_id"
        else:
            col, field = None, "row_index"
    elif "=" in key:
        col, field = (s.strip() for s in key.split("=", 1))
    else:
        col = key
        field = key if rows and all(key in r.inputs for r in rows) else "row_id"
    if col is not None and col not in columns:
        raise InputError(f"labels have no key column {col!r}; columns: {', '.join(columns)}")
    run_keys = _run_side(rows, field)
    if field not in ("row_id", "row_index") and all(k is None for k in run_keys):
        raise InputError(
            f"results have no input variable {field!r}; use row_id, row_index or one of: "
            f"{', '.join(sorted({k for r in rows for k in r.inputs}))}"
        )
    label_keys = [
        str(i) if col is None else (None if is_missing(lab.get(col)) else _key_str(lab.get(col))) for i, lab in enumerate(labels)
    ]
    how = "by position (label row i = data row i)" if col is None else f"labels[{col!r}] = results' {field}"
    index: dict[str, dict[str, Any]] = {}
    dups: list[str] = []
    for k, lab in zip(label_keys, labels, strict=True):
        if k is None:
            continue
        if k in index:
            dups.append(k)
        index[k] = lab
    if dups:
        raise InputError(
            f"label key {col!r} is not unique: {len(dups)} duplicate(s), e.g. {dups[:3]}; choose a key "
            "column with one label per result (--key)"
        )
    pairs = [(r, index[k]) for r, k in zip(rows, run_keys, strict=True) if k is not None and k in index]
    matched_keys = {k for k in run_keys if k is not None and k in index}
    info = Join(
        how=how,
        n_results=len(rows),
        n_labels=len(labels),
        n_matched=len(pairs),
        unmatched_label_keys=[k for k in index if k not in matched_keys][:5],
        unmatched_result_keys=[str(k) for k in run_keys if k is None or k not in index][:5],
    )
    if not pairs:
        variables = sorted({k for r in rows for k in r.inputs})
        raise InputError(
            f"labels do not join to the run: 0 of {len(rows)} results matched {len(labels)} labels "
            f"({how}); unmatched label keys e.g. {info.unmatched_label_keys}, result keys e.g. "
            f"{info.unmatched_result_keys}; pick the matching column with --key COL or --key COL=FIELD "
            f"(FIELD: row_id, row_index or an input variable: {', '.join(variables) or 'none'})"
        )
    return pairs, info
