"""Read a run directory written by `localjudge run` (schema version 1).

    OUT/run.json        run metadata, with `schema_version`
    OUT/results.jsonl   one object per (row, judge): inputs, record, result (a JudgeResult)
    OUT/summary.json    per-judge summary (recomputed from the results when missing)

`load_run(path)` checks the schema version first, so a directory from another localjudge version
fails with one clear line instead of a KeyError half-way through a report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .. import jsonio
from ..errors import InputError
from ..run.record import RunRecord
from ..store.results import ResultRow

SCHEMA_VERSION = 1


class RunDirError(InputError):
    """A path that is not a readable run directory of this localjudge version."""


class Run(BaseModel):
    """A run directory read back: its metadata, summary and result rows."""

    path: str
    meta: dict[str, Any]  # run.json as read (the report lists it as it is); `record` reads it by field
    summary: dict[str, Any]
    rows: list[ResultRow]
    summary_recomputed: bool = False

    @property
    def record(self) -> RunRecord:
        """run.json, typed (run/record.py)."""
        return RunRecord.read(self.meta)

    @property
    def run_id(self) -> str:
        """The `run_id` of run.json, or the directory's name when it has none."""
        return self.record.run_id or Path(self.path).name

    def judges(self) -> list[str]:
        """Judge names in run order (run.json first, then as they appear in the results)."""
        named = self.record.judge_names()
        present = {r.judge for r in self.rows}
        return [j for j in dict.fromkeys(named + [r.judge for r in self.rows]) if j in present]

    def rows_of(self, judge: str) -> list[ResultRow]:
        """This judge's result rows, in results.jsonl order."""
        return [r for r in self.rows if r.judge == judge]


def _read_json(path: Path, what: str) -> Any:
    try:
        return jsonio.loads(path.read_text(encoding="utf-8"), max_depth=jsonio.PARSER_DEPTH)
    except json.JSONDecodeError as e:
        raise RunDirError(
            f"{path} is not valid JSON ({e.msg}, line {e.lineno}): the {what} is damaged; re-run the "
            "evaluation into a fresh --out directory"
        ) from None
    except OSError as e:
        raise RunDirError(f"cannot read {path}: {e.strerror}; check the path and permissions") from None


def check_schema(meta: Any, path: Path) -> None:
    """Refuse run.json written by an older or newer schema than this reader knows."""
    if not isinstance(meta, dict):
        raise RunDirError(f"{path / 'run.json'} is not a JSON object; is {path} a localjudge run directory?")
    version = meta.get("schema_version")
    if version is None:
        raise RunDirError(
            f"run directory {path} has no schema_version: it was written by an older localjudge; "
            f"re-run the evaluation with this version (schema {SCHEMA_VERSION}) to report on it"
        )
    if not isinstance(version, int) or isinstance(version, bool):
        raise RunDirError(f"run directory {path} has schema_version {version!r}, expected an integer; the run.json is damaged")
    if version < SCHEMA_VERSION:
        raise RunDirError(
            f"run directory {path} uses schema {version}, written by an older localjudge; this version reads "
            f"schema {SCHEMA_VERSION}: re-run the evaluation with this version"
        )
    if version > SCHEMA_VERSION:
        raise RunDirError(
            f"run directory {path} uses schema {version}, newer than this localjudge reads ({SCHEMA_VERSION}): upgrade localjudge"
        )


def read_results(path: Path) -> list[ResultRow]:
    """results.jsonl → rows; a later line for the same (row, judge) replaces an earlier one."""
    rows: dict[tuple[int, str], ResultRow] = {}
    try:
        fh = path.open(encoding="utf-8")
    except OSError as e:
        raise RunDirError(f"cannot read {path}: {e.strerror}; the run may not have started") from None
    with fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = ResultRow.model_validate(jsonio.loads(line, max_depth=jsonio.PARSER_DEPTH))
            except json.JSONDecodeError as e:
                raise RunDirError(
                    f"{path}:{n}: not valid JSON ({e.msg}); the results file is damaged: re-run the "
                    "evaluation (a resumed run rewrites it)"
                ) from None
            except ValidationError as e:
                first = e.errors()[0]
                where = ".".join(str(x) for x in first.get("loc", ())) or "line"
                raise RunDirError(
                    f"{path}:{n}: {where}: {first.get('msg')}; the results file is damaged or from another "
                    "version: re-run the evaluation"
                ) from None
            rows[(row.row_index, row.judge)] = row
    return list(rows.values())


def summarise(rows: list[ResultRow]) -> dict[str, Any]:
    """A summary in summary.json's shape, computed from results (used when summary.json is missing)."""
    from ..run.aggregate import summarise as _summarise
    from ..run.aggregate import to_jsonable

    return {"judges": to_jsonable(_summarise(r.result for r in rows))}


def load_run(path: str | Path) -> Run:
    """Read and check a run directory; raise `RunDirError` with the fix when it cannot be used."""
    p = Path(path)
    if not p.exists():
        raise RunDirError(f"run directory {p} does not exist; pass the --out directory of `localjudge run`")
    if not p.is_dir():
        raise RunDirError(f"{p} is a file, not a run directory; pass the --out directory of `localjudge run`")
    if not (p / "run.json").is_file():
        raise RunDirError(f"{p} is not a localjudge run directory (no run.json); pass the --out directory of `localjudge run`")
    meta = _read_json(p / "run.json", "run metadata")
    check_schema(meta, p)
    if not (p / "results.jsonl").is_file():
        raise RunDirError(f"run directory {p} has no results.jsonl; the run did not write results: run it again")
    rows = read_results(p / "results.jsonl")
    recomputed = False
    if (p / "summary.json").is_file():
        summary = _read_json(p / "summary.json", "summary")
        if not isinstance(summary, dict) or not isinstance(summary.get("judges"), dict):
            raise RunDirError(f"{p / 'summary.json'} has no 'judges' object; the summary is damaged: re-run the evaluation")
    else:
        summary, recomputed = summarise(rows), True
    return Run(path=str(p), meta=meta, summary=summary, rows=rows, summary_recomputed=recomputed)
