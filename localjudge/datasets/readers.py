"""Datasets in, rows out: one streaming reader per source (JSONL, CSV/TSV, Parquet, DataFrame, records).

Readers yield one `Row` at a time and never hold a whole file: JSONL line by line, CSV record by
record, Parquet by batches of a row group (`iter_batches`), a pandas DataFrame by `itertuples`.
A row that cannot be read (a malformed JSONL line, a CSV record with too many fields) is still
yielded, with `error` set, so it gets an error result and the other rows run.

Where a row comes from (`Row.source`): `data.jsonl:line 12` / `data.csv:line 7` name the 1-based
physical line a record starts on (what an editor shows); `data.parquet:row 5` / `DataFrame:row 5`
name the 0-based position in a table (what pandas shows). `Row.index` is always the 0-based
position of the row in the data, counting malformed rows.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import JSONBoundsError, loads
from .row import Row, plain, type_name, unencodable

CSV_FIELD_LIMIT = 1 << 30
_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what errors="surrogateescape" makes of bytes that are not UTF-8


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
            obj = loads(text)
        except JSONBoundsError as e:
            if e.parser is None:  # nested too deep: refused before the parser saw it
                return None, f"{where}: {e}; fix or remove the line"
            return None, f"{where}: malformed JSON ({e.parser.msg} at column {e.parser.colno}); fix or remove the line"
        if not isinstance(obj, dict):
            return None, f"{where}: expected a JSON object, got {type_name(obj)}; write one object per line"
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
        track = self._columns is None  # not scanned yet: this read finds what `_scan` would, once it reaches the end
        cols: dict[str, None] = {}
        n = 0
        for index, (lineno, raw) in enumerate(self._lines()):
            obj, err = self._parse(raw, lineno)
            n += 1
            if track and obj:
                cols.update(dict.fromkeys(obj))
            yield Row(index, f"{self.label}:line {lineno}", obj or {}, err)
        if track and self._columns is None:
            self._columns, self._count = list(cols), n

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
        if self._columns is None:  # the header is the columns: no second read to find them
            self._columns = header
        index = -1
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
        if self._count is None:  # read to its end: the count is known without a scan of its own
            self._count = index + 1

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
        f = self._file()
        if self._columns is None:  # the footer read to open it holds both: no second open to find them
            self._columns, self._count = list(f.schema_arrow.names), f.metadata.num_rows
        for batch in f.iter_batches(batch_size=self.batch_size):
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
            yield Row(index, f"DataFrame:row {index}", {c: plain(v) for c, v in zip(cols, tup, strict=True)})


class RecordsDataset(Dataset):
    """A list of dicts (Python API and tests)."""

    label = "records"

    def __init__(self, records: Sequence[Mapping[str, Any]]):
        super().__init__()
        self.records = records

    def _rows(self) -> Iterator[Row]:
        for index, rec in enumerate(self.records):
            if not isinstance(rec, Mapping):
                yield Row(index, f"records:row {index}", {}, f"records:row {index}: expected a dict, got {type_name(rec)}")
            else:
                yield Row(index, f"records:row {index}", {str(k): plain(v) for k, v in rec.items()})

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


def _label(path: str) -> str:
    """The file name as UTF-8 text for messages and `Row.source`: bytes that are not UTF-8 become `\\xNN`."""
    return os.fsencode(os.path.basename(path)).decode("utf-8", "backslashreplace")
