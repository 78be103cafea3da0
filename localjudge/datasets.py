"""Datasets in, judge variables out: streaming readers and the column → variable mapping.

Readers yield one `Row` at a time and never hold a whole file: JSONL line by line, CSV record by
record, Parquet by batches of a row group (`iter_batches`), a pandas DataFrame by `itertuples`.
A row that cannot be read (a malformed JSONL line, a CSV record with too many fields) is still
yielded, with `error` set, so it gets an error result and the other rows run.

Where a row comes from (`Row.source`): `data.jsonl:line 12` / `data.csv:line 7` name the 1-based
physical line a record starts on (what an editor shows); `data.parquet:row 5` / `DataFrame:row 5`
name the 0-based position in a table (what pandas shows). `Row.index` is always the 0-based
position of the row in the data, counting malformed rows.

Mapping: a judge variable takes its value from a column. Explicit `var=column` entries win;
otherwise the variable's own name, then its aliases, are looked up among the columns:

    input    ↔ question          output ↔ answer ↔ response
    expected ↔ ground_truth      context ↔ retrieval_context

Value types. A judge variable takes text: a string, or a number (written as text). A list of
strings/numbers stays a list (e.g. several retrieved documents). Anything else (an object, a
boolean, a list holding objects or lists) is a wrong-type row error. Empty values (null, NaN, "",
whitespace, []) are a row error for a required variable and are left out for an optional one.
CSV cells are always text: a cell holding `["a", "b"]` stays that string, unless the mapping says
`var=column:list`, which parses the cell as a JSON list (and makes anything else a row error).
`var=column:text` refuses lists. `var=column:json` passes any value through unchanged (an agent
trace object, a dict of context fields) for judges that take structured values; a text cell that
starts like JSON (`{`, `[`, `"`) is parsed first (a CSV cell cannot hold an object otherwise), other
text (a path to a trace file) stays text.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import InputError

ALIASES: tuple[tuple[str, ...], ...] = (
    ("input", "question"),
    ("output", "answer", "response"),
    ("expected", "ground_truth"),
    ("context", "retrieval_context"),
)
Kind = Literal["auto", "text", "list", "json"]
CSV_FIELD_LIMIT = 1 << 30
_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what errors="surrogateescape" makes of bytes that are not UTF-8


@dataclass(frozen=True)
class Row:
    """One data row: its position, where it came from, its values, or why it cannot be read."""

    index: int
    source: str
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the whole row is unreadable (malformed line, misaligned record)
    missing: tuple[str, ...] = ()  # columns this record lacks (a short CSV record)

    @property
    def row_id(self) -> str:
        """The row's `id` value as text, or its 0-based index when it has none (or an empty one)."""
        v = self.values.get("id")
        return str(self.index) if _is_empty(v) or unencodable(v) else _text(v)


# ------------------------------------------------------------------------------------------ readers


class Dataset:
    """A re-iterable stream of rows with known columns. Subclasses implement `_rows` and `_scan`."""

    label: str = "data"
    path: str | None = None

    def __init__(self) -> None:
        self._columns: list[str] | None = None
        self._count: int | None = None

    @property
    def columns(self) -> list[str]:
        """Every column the data has (JSONL: the union of keys over every valid line)."""
        if self._columns is None:
            self._scan()
        assert self._columns is not None
        return self._columns

    def count(self) -> int:
        """Number of rows (malformed ones included), found without holding the data."""
        if self._count is None:
            self._scan()
        assert self._count is not None
        return self._count

    def __iter__(self) -> Iterator[Row]:
        return self._rows()

    def _rows(self) -> Iterator[Row]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _scan(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class JSONLDataset(Dataset):
    """JSON Lines: one object per non-blank line."""

    def __init__(self, path: str | Path):
        super().__init__()
        self.path = str(path)
        self.label = _label(self.path)

    def _parse(self, raw: bytes, lineno: int) -> tuple[dict[str, Any] | None, str | None]:
        where = f"{self.label}:line {lineno}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return None, f"{where}: not valid UTF-8 at byte {e.start}; save the file as UTF-8"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            return None, f"{where}: malformed JSON ({e.msg} at column {e.colno}); fix or remove the line"
        if not isinstance(obj, dict):
            return None, f"{where}: expected a JSON object, got {_type_name(obj)}; write one object per line"
        bad = unencodable(obj)
        if bad:
            return None, f"{where}: {bad}; fix the text (a \\ud800-\\udfff escape must be half of a valid pair)"
        return obj, None

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        assert self.path is not None
        with open(self.path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                if raw.strip():
                    yield lineno, raw

    def _rows(self) -> Iterator[Row]:
        for index, (lineno, raw) in enumerate(self._lines()):
            obj, err = self._parse(raw, lineno)
            yield Row(index, f"{self.label}:line {lineno}", obj or {}, err)

    def _scan(self) -> None:
        cols: dict[str, None] = {}
        n = 0
        for lineno, raw in self._lines():
            n += 1
            obj, _ = self._parse(raw, lineno)
            if obj:
                cols.update(dict.fromkeys(obj))
        self._columns, self._count = list(cols), n


class CSVDataset(Dataset):
    """CSV with a header line (UTF-8, an Excel BOM is skipped). Every cell is text."""

    def __init__(self, path: str | Path, delimiter: str = ","):
        super().__init__()
        self.path = str(path)
        self.label = _label(self.path)
        self.delimiter = delimiter

    def _records(self) -> Iterator[tuple[int, list[str] | None, str | None]]:
        """(start line, fields, problem) per non-blank record, the header first.

        A record the csv module rejects (strict quoting: `"a"b` is an error, not silently `ab`), or
        one with bytes that are not UTF-8, comes back as a problem and reading goes on."""
        if csv.field_size_limit() < CSV_FIELD_LIMIT:
            csv.field_size_limit(CSV_FIELD_LIMIT)  # default 128 KiB: too small for long contexts
        assert self.path is not None
        with open(self.path, newline="", encoding="utf-8-sig", errors="surrogateescape") as f:
            reader = csv.reader(f, delimiter=self.delimiter, strict=True)
            start = 1
            while True:
                try:
                    rec = next(reader)
                except StopIteration:
                    return
                except csv.Error as e:
                    yield start, None, f"unreadable CSV record ({e}); fix its quoting"
                else:
                    if any(_NOT_UTF8.search(c) for c in rec):
                        yield start, None, "not valid UTF-8; save the file as UTF-8"
                    elif rec and any(c.strip() for c in rec):
                        yield start, rec, None
                start = reader.line_num + 1

    def _header(self, recs: Iterator[tuple[int, list[str] | None, str | None]]) -> list[str]:
        first = next(recs, None)
        if first is None:
            raise InputError(f"{self.label}: empty CSV file; a header line naming the columns is needed")
        if first[1] is None:
            raise InputError(f"{self.label}:line {first[0]}: header is {first[2]}")
        header = [h.strip() for h in first[1]]
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup or "" in header:
            raise InputError(
                f"{self.label}: header has {'duplicate columns ' + ', '.join(dup) if dup else 'an empty column name'}; "
                "give every column a unique name"
            )
        return header

    def _rows(self) -> Iterator[Row]:
        recs = self._records()
        header = self._header(recs)
        for index, (line, rec, problem) in enumerate(recs):
            src = f"{self.label}:line {line}"
            if rec is None:
                yield Row(index, src, {}, f"{src}: {problem}")
            elif len(rec) > len(header):
                err = (
                    f"{src}: record has {len(rec)} fields, the header has {len(header)} "
                    "(an unquoted comma?); quote cells that contain commas"
                )
                yield Row(index, src, {}, err)
            else:
                yield Row(index, src, dict(zip(header, rec, strict=False)), None, tuple(header[len(rec) :]))

    def _scan(self) -> None:
        recs = self._records()
        self._columns = self._header(recs)
        self._count = sum(1 for _ in recs)


class ParquetDataset(Dataset):
    """Parquet, read in batches (`ParquetFile.iter_batches`): memory bounded by the batch size."""

    def __init__(self, path: str | Path, batch_size: int = 1024):
        super().__init__()
        self.path = str(path)
        self.label = _label(self.path)
        self.batch_size = batch_size

    def _file(self) -> Any:
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(self.path)
        except Exception as e:  # pyarrow raises ArrowInvalid / OSError variants
            raise InputError(f"{self.label}: cannot read as Parquet ({e}); check the file") from None

    def _rows(self) -> Iterator[Row]:
        index = 0
        for batch in self._file().iter_batches(batch_size=self.batch_size):
            for values in batch.to_pylist():
                yield Row(index, f"{self.label}:row {index}", values)
                index += 1

    def _scan(self) -> None:
        f = self._file()
        self._columns, self._count = list(f.schema_arrow.names), f.metadata.num_rows


class DataFrameDataset(Dataset):
    """A pandas DataFrame, one row at a time."""

    label = "DataFrame"

    def __init__(self, df: Any):
        super().__init__()
        self.df = df
        self._columns = [str(c) for c in df.columns]
        self._count = len(df)

    def _rows(self) -> Iterator[Row]:
        cols = self._columns or []
        for index, tup in enumerate(self.df.itertuples(index=False, name=None)):
            yield Row(index, f"DataFrame:row {index}", {c: _plain(v) for c, v in zip(cols, tup, strict=True)})


class RecordsDataset(Dataset):
    """A list of dicts (Python API and tests)."""

    label = "records"

    def __init__(self, records: Sequence[Mapping[str, Any]]):
        super().__init__()
        self.records = records

    def _rows(self) -> Iterator[Row]:
        for index, rec in enumerate(self.records):
            if not isinstance(rec, Mapping):
                yield Row(index, f"records:row {index}", {}, f"records:row {index}: expected a dict, got {_type_name(rec)}")
            else:
                yield Row(index, f"records:row {index}", {str(k): _plain(v) for k, v in rec.items()})

    def _scan(self) -> None:
        cols: dict[str, None] = {}
        for rec in self.records:
            if isinstance(rec, Mapping):
                cols.update(dict.fromkeys(str(k) for k in rec))
        self._columns, self._count = list(cols), len(self.records)


SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}


def open_dataset(data: Any, fmt: str | None = None) -> Dataset:
    """A `Dataset` for a path (JSONL, CSV, TSV, Parquet by suffix or `fmt`), a DataFrame or a list of dicts."""
    if isinstance(data, Dataset):
        return data
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if not path.is_file():
            raise InputError(f"data file {str(path)!r} not found; check the path")
        kind = fmt or SUFFIXES.get(path.suffix.lower())
        if kind == "jsonl":
            return JSONLDataset(path)
        if kind in ("csv", "tsv"):
            return CSVDataset(path, delimiter="\t" if kind == "tsv" else ",")
        if kind == "parquet":
            return ParquetDataset(path)
        raise InputError(f"cannot tell the format of {path.name!r}; use a .jsonl, .csv, .tsv or .parquet file")
    if type(data).__name__ == "DataFrame" and hasattr(data, "itertuples"):
        return DataFrameDataset(data)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return RecordsDataset(data)
    raise InputError(f"cannot read data of type {type(data).__name__}; pass a file path, a pandas DataFrame or a list of dicts")


# ------------------------------------------------------------------------------------------ mapping


@dataclass(frozen=True)
class ColumnSpec:
    """Where a judge variable's value comes from: a column, and how to read it (`auto`, `text`, `list`, `json`)."""

    column: str
    kind: Kind = "auto"


def parse_mapping(mapping: Mapping[str, str] | Iterable[str] | None) -> dict[str, ColumnSpec]:
    """`{"var": "col"}` or `["var=col", "ctx=docs:list"]` → {var: ColumnSpec}."""
    if not mapping:
        return {}
    items = mapping.items() if isinstance(mapping, Mapping) else (_split_item(s) for s in mapping)
    out: dict[str, ColumnSpec] = {}
    for var, col in items:
        kind: Kind = "auto"
        for suffix in ("list", "text", "json"):
            if col.endswith(":" + suffix):
                col, kind = col[: -len(suffix) - 1], suffix
        if not var or not col:
            raise InputError(f"bad mapping {var}={col}; write judge_variable=column")
        out[var] = ColumnSpec(col, kind)
    return out


def _split_item(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise InputError(f"bad mapping {item!r}; write judge_variable=column (e.g. --map expected=ground_truth)")
    var, col = item.split("=", 1)
    return var.strip(), col.strip()


def candidates(var: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Columns tried for a variable: its own name, the judge's aliases for it (`extra`), then ours."""
    out = [var, *extra]
    for group in ALIASES:
        if var in group:
            out += group
    return tuple(dict.fromkeys(out))


def resolve_mapping(
    judge: str,
    required: Sequence[str],
    optional: Sequence[str],
    columns: Sequence[str],
    explicit: Mapping[str, ColumnSpec],
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, ColumnSpec]:
    """{var: ColumnSpec} for one judge, or `InputError` listing the columns that exist.

    `aliases`: the judge's own alternative names per variable (tried before ours)."""
    aliases = aliases or {}
    have = set(columns)
    listing = ", ".join(columns) if columns else "(none)"
    for var, spec in explicit.items():
        if spec.column not in have:
            raise InputError(f"--map {var}={spec.column}: no column {spec.column!r} in the data; columns: {listing}")
    out: dict[str, ColumnSpec] = {}
    for var in list(required) + [v for v in optional if v not in required]:
        if var in explicit:
            out[var] = explicit[var]
            continue
        names = candidates(var, aliases.get(var, ()))
        found = next((c for c in names if c in have), None)
        if found is not None:
            out[var] = ColumnSpec(found)
        elif var in required:
            tried = "/".join(names)
            raise InputError(
                f"judge {judge!r} needs {var!r} but the data has no {tried} column; "
                f"columns: {listing}; map one with --map {var}=COLUMN"
            )
    return out


Problem = tuple[str, str]  # (unscored_reason, one-line message naming source, column and reason)


def extract(
    row: Row, plan: Mapping[str, ColumnSpec], required: Sequence[str], allow_empty: Sequence[str] = ()
) -> tuple[dict[str, Any], Problem | None]:
    """Judge variables for one row, or a problem: bad_row, missing_value, empty_value or wrong_type.

    Variables in `allow_empty` take an empty string as a value."""
    if row.error:
        return {}, ("bad_row", row.error)
    out: dict[str, Any] = {}
    for var, spec in plan.items():
        col = spec.column
        where = f"{row.source}: column {col!r} (variable {var!r})"
        if col in row.missing or col not in row.values:
            if var in required:
                return {}, ("missing_value", f"{where}: missing in this row; fill it in or drop the row")
            continue
        value, problem = coerce(row.values[col], spec.kind)
        if problem == "empty":
            if var in allow_empty and isinstance(row.values[col], str):
                out[var] = row.values[col]
            elif var in required:
                return {}, ("empty_value", f"{where}: empty value; fill it in or drop the row")
            continue
        if problem:
            return {}, ("wrong_type", f"{where}: {problem}")
        bad = unencodable(value)
        if bad:
            return {}, ("bad_text", f"{where}: {bad}; fix the text")
        out[var] = value
    return out, None


def coerce(value: Any, kind: Kind = "auto") -> tuple[Any, str | None]:
    """(value, None), (None, "empty") or (None, reason) for one cell under a column kind."""
    value = _plain(value)
    if _is_empty(value):
        return None, "empty"
    if kind == "json":  # structured values (an agent trace, a dict of context fields) pass through as they are;
        if isinstance(value, str) and value.lstrip()[:1] in ("{", "[", '"'):  # a CSV cell holding JSON is parsed
            try:
                value = json.loads(value)
            except json.JSONDecodeError as e:
                return None, f"the mapping says json but the cell is not valid JSON ({e.msg} at char {e.pos}); fix the cell"
            if _is_empty(value):
                return None, "empty"
        return value, None
    if kind == "list" and isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None, 'the mapping says list but the cell is not a JSON list; write it as ["...", "..."]'
        if not isinstance(value, list):
            return None, f"the mapping says list but the cell holds {_type_name(value)}; write it as a JSON list"
        if not value:
            return None, "empty"
    if isinstance(value, list):
        if kind == "text":
            return None, "wrong type: a list, but the mapping says text; map it without :text"
        bad = next((x for x in value if not _is_scalar(x)), None)
        if bad is not None:
            return None, f"wrong type: a list holding {_type_name(bad)}; items must be strings"
        return [_text(x) for x in value], None
    if kind == "list":
        return None, f"wrong type: {_type_name(value)}, but the mapping says list"
    if _is_scalar(value):
        return _text(value), None
    return None, f"wrong type: {_type_name(value)}; a judge variable takes text or a list of strings"


# ------------------------------------------------------------------------------------------ helpers


def unencodable(value: Any, _depth: int = 0) -> str | None:
    """What in a value (text, or lists/dicts of it, keys included) cannot be written as UTF-8, or None.

    A lone surrogate (JSON `"\\ud800"`, or a byte that is not UTF-8 in a command-line argument, which
    Python decodes to U+DC80..U+DCFF) would make hashing, the store and every export fail; callers make
    it a one-line row or input error instead."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return f"text holds a lone surrogate U+{ord(value[e.start]):04X} at character {e.start}, which is not valid Unicode"
        return None
    if _depth > 100:
        return None
    if isinstance(value, dict):
        items: Iterable[Any] = (x for kv in value.items() for x in kv)
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for x in items:
        bad = unencodable(x, _depth + 1)
        if bad:
            return bad
    return None


def _label(path: str) -> str:
    """The file name as UTF-8 text for messages and `Row.source`: bytes that are not UTF-8 become `\\xNN`."""
    return os.fsencode(os.path.basename(path)).decode("utf-8", "backslashreplace")


def _plain(v: Any) -> Any:
    """numpy scalars/arrays → Python; NaN/NA → None."""
    if v is None or isinstance(v, (str, bool, int, dict, list)):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if hasattr(v, "tolist") and not isinstance(v, (bytes, bytearray)):  # numpy scalar or array
        return _plain(v.tolist())
    if type(v).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(v, tuple):
        return list(v)
    return v


def _is_empty(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip()) or (isinstance(v, list) and not v)


def _is_scalar(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _text(v: Any) -> str:
    return v if isinstance(v, str) else str(v)


def _type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, (int, float)):
        return "a number"
    if v is None:
        return "null"
    return f"a {type(v).__name__}"
