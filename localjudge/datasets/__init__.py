"""Datasets in, judge variables out: `readers` (one streaming reader per source, `open_dataset`),
`row` (the `Row` they yield and the checks on a value), `mapping` (column → variable, with aliases)
and `variables` (one row's judge variables, or its row error). Every name is importable from here."""

from .mapping import ALIASES, ColumnSpec, Kind, candidates, parse_mapping, resolve_mapping
from .readers import (
    CSV_FIELD_LIMIT,
    SUFFIXES,
    CSVDataset,
    DataFrameDataset,
    Dataset,
    JSONLDataset,
    ParquetDataset,
    RecordsDataset,
    open_dataset,
)
from .row import Position, Printed, Row, unencodable
from .variables import Problem, coerce, extract

__all__ = [
    "ALIASES",
    "CSV_FIELD_LIMIT",
    "SUFFIXES",
    "CSVDataset",
    "ColumnSpec",
    "DataFrameDataset",
    "Dataset",
    "JSONLDataset",
    "Kind",
    "ParquetDataset",
    "Position",
    "Printed",
    "Problem",
    "RecordsDataset",
    "Row",
    "candidates",
    "coerce",
    "extract",
    "open_dataset",
    "parse_mapping",
    "resolve_mapping",
    "unencodable",
]
