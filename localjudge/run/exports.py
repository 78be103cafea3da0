"""A run directory's export files, written atomically from the store: results.jsonl, results.csv,
summary.json and run.json (the run directory is described in docs/batch-runs.md).

results.csv neutralises spreadsheet formulas as OWASP recommends (CSV injection): a text cell that starts
with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`, so a spreadsheet shows it as
text instead of running it (`=1+1` is written `'=1+1`). Numbers are written as they are. `csv_raw=True`
(`localjudge run --csv-raw`) keeps every cell as it is. results.jsonl is always exact.

A reasoning judge's think text (the `<think>` block its raw text begins with) gets its own place: the
`think` column of results.csv and `result.think` in results.jsonl; it stays in `raw_text` too."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StorageError
from ..formats.base import think_text
from ..store.atomic import NotAFileError, replacing, write_atomic
from ..store.db import Store
from ..store.results import ResultRow
from .aggregate import JudgeSummary, Tally
from .record import RunRecord

CSV_COLUMNS = [
    "run_id",
    "row_index",
    "row_id",
    "source",
    "judge",
    "error",
    "value",
    "score",
    "passed",
    "unscored_reason",
    "result_error",
    "rationale",
    "raw_text",
    "expected_score",
    "judge_version",
    "format",
    "model_id",
    "model_sha256",
    "prompt_hash",
    "seed",
    "decode_options",
    "localjudge_version",
    "cache_key",
    "prompt_tokens",
    "output_tokens",
    "total_ms",
    "inputs",
    "think",  # a reasoning judge's think text (its <think> block, markers removed); empty without one
]


def flat_row(r: ResultRow) -> dict[str, Any]:
    """One result as a flat dict (the CSV / DataFrame columns)."""
    res, rec = r.result, r.record
    v = res.value
    return {
        "run_id": r.run_id,
        "row_index": r.row_index,
        "row_id": r.row_id,
        "source": r.source,
        "judge": r.judge,
        "error": r.error,
        "value": v if v is None or isinstance(v, (str, int, float, bool)) else json.dumps(v, ensure_ascii=False),
        "score": res.score,
        "passed": res.passed,
        "unscored_reason": res.unscored_reason,
        "result_error": res.error,
        "rationale": res.rationale,
        "raw_text": res.raw_text,
        "expected_score": res.expected_score,
        "judge_version": res.judge_version,
        "format": res.format,
        "model_id": res.model_id,
        "model_sha256": rec.model_sha256 if rec else None,
        "prompt_hash": rec.prompt_hash if rec else None,
        "seed": rec.seed if rec else None,
        "decode_options": json.dumps(rec.decode_options, sort_keys=True) if rec else None,
        "localjudge_version": rec.localjudge_version if rec else None,
        "cache_key": r.cache_key,
        "prompt_tokens": res.usage.prompt_tokens,
        "output_tokens": res.usage.output_tokens,
        "total_ms": res.timings.total_ms,
        "inputs": json.dumps(r.inputs, ensure_ascii=False),
        "think": think_text(res.raw_text),
    }


def jsonl_line(r: ResultRow) -> str:
    """One line of results.jsonl: the row as stored, plus `result.think` (the think text apart from the raw
    text) when the raw text begins with a think block; other rows are written exactly as before."""
    line = r.model_dump_json()
    think = think_text(r.result.raw_text)
    if think is None:
        return line
    row = json.loads(line)
    row["result"]["think"] = think
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(text: str) -> str:
    """`text` with a leading `'` when a spreadsheet would read it as a formula (OWASP's CSV injection list)."""
    return "'" + text if text.startswith(FORMULA_START) else text


def _csv_cell(v: Any, raw: bool = False) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and not raw:
        return neutralise(v)
    return v


def export(
    store: Store,
    run_id: str,
    judges: list[str],
    n_rows: int,
    out_dir: Path | None,
    record: RunRecord,
    counts: Any,
    csv_raw: bool = False,
) -> dict[str, JudgeSummary]:
    """Stream the run's results once: summaries, and (with a run directory) the four export files (run.json: `record`
    with `counts`).

    `csv_raw`: write results.csv cells as they are, without neutralising formulas (see the module docstring)."""
    tallies = {j: Tally() for j in judges}
    if out_dir is None:
        for r in store.iter_results(run_id, judges, n_rows):
            tallies[r.judge].add(r.result)
        return {j: t.summary() for j, t in tallies.items()}
    with (
        _storage(out_dir / "results.jsonl"),
        replacing(out_dir / "results.jsonl") as tmp_jsonl,
        replacing(out_dir / "results.csv") as tmp_csv,
    ):
        with open(tmp_jsonl, "w", encoding="utf-8") as fj, open(tmp_csv, "w", encoding="utf-8", newline="") as fc:
            writer = csv.writer(fc)
            writer.writerow(CSV_COLUMNS)
            for r in store.iter_results(run_id, judges, n_rows):
                tallies[r.judge].add(r.result)
                fj.write(jsonl_line(r) + "\n")
                flat = flat_row(r)
                writer.writerow([_csv_cell(flat[c], csv_raw) for c in CSV_COLUMNS])
    summaries = {j: t.summary() for j, t in tallies.items()}
    run = record.updated(counts=counts.model_dump()).to_json()
    write_json_atomic(out_dir / "summary.json", {"run": run, "judges": {k: v.model_dump() for k, v in summaries.items()}})
    write_json_atomic(out_dir / "run.json", run)
    return summaries


@contextmanager
def _storage(path: Path) -> Iterator[None]:
    """An OSError while writing an export (disk full, read-only) becomes a one-line StorageError; the
    file being replaced is left as it was (the atomic write removes its temporary file)."""
    try:
        yield
    except NotAFileError as e:
        raise StorageError(
            f"cannot write {str(path)!r}: {e}; move it away (the run writes its export files there), then run the same "
            "command again (finished results are kept in the store)"
        ) from None
    except OSError as e:
        raise StorageError(
            f"cannot write {str(path)!r} ({e.strerror or e}); free disk space or make the run directory "
            "writable, then run the same command again (finished results are kept in the store)"
        ) from None


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON atomically; an OSError becomes a StorageError naming the file. Text that is not valid
    Unicode (a data file name with bytes that are not UTF-8) is written as a JSON `\\udcNN` escape."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"
    with _storage(path):
        write_atomic(path, text.encode("utf-8", "backslashreplace"))
