"""The run record: what run.json holds and the store keeps as the run's metadata, typed.

`RunRecord` is written by the run (run/plain.py) and by panels and cascades (ensembles/members.py), always through
`to_json`, and read by field everywhere a run's record is read (the CLI, the report, the view, the cautions, a
resumed run's model). Its JSON is what the dict it replaces wrote, byte for byte: the same keys in the same order
(the fields' order below), no key that was not set (`conversation` only in a conversation run, `counts` once the
run ends, a panel's `panel`, a cascade's `cascade`), and the keys this version does not know (whatever a newer
writer adds) kept after them, in the order they came.

Reading (`RunRecord.read`) takes every record an earlier release wrote: any field may be missing (a store written
before the backend seam has no `backend`; a store that never registered its run holds `{}`), and a value of the
wrong type (a damaged or hand-edited file) reads as missing rather than failing a page or a report. The run
directory's `schema_version` is checked by report/rundir.py before a record is read.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..store.db import Store


class JudgeRef(BaseModel):
    """One judge of the run as run.json names it: its name and the version of its judge file."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = ""
    version: str = ""


class RunRecord(BaseModel):
    """run.json, typed (see the module docstring). Every field is optional: records of earlier releases lack some."""

    model_config = ConfigDict(extra="allow", frozen=True)

    run_id: str | None = None
    data: str | None = None  # the data file, or the label of in-memory rows ("records")
    judges: list[JudgeRef | str] | None = None  # a bare name in records of early releases
    model_id: str | None = None
    model_sha256: str | None = None
    backend: str | None = None  # missing in records written before the backend seam
    options: dict[str, Any] | None = None  # the decoding options (engine/options.py), as dumped
    engine: dict[str, Any] | None = None  # the engine settings that change outputs (part of every cache key)
    mapping: dict[str, dict[str, str]] | None = None  # judge -> variable -> column[:kind]
    localjudge_version: str | None = None
    schema_version: int | None = None  # of the run directory (report/rundir.py checks it)
    store_schema_version: int | None = None
    started: str | None = None  # local time, %Y-%m-%dT%H:%M:%S%z
    finished: str | None = None  # None while the run is running
    status: str | None = None  # running, finished, interrupted or failed
    rows: int | None = None  # rows of the data the run evaluates
    conversation: dict[str, Any] | None = None  # a conversation run's options (how its rows were cut)
    counts: dict[str, Any] | None = None  # run/types.py `RunCounts`, dumped, once the run ended
    conversations: dict[str, Any] | None = None  # a conversation run's per-conversation aggregation (run/turns.py)
    panel: dict[str, Any] | None = None  # a panel's figures (ensembles/panel.py)
    cascade: dict[str, Any] | None = None  # a cascade's figures (ensembles/cascade.py), after a panel's first stage

    @classmethod
    def read(cls, obj: Any) -> RunRecord:
        """The record of a parsed run.json or stored metadata: anything that is not an object reads as an empty record,
        and a field whose value has the wrong type as missing (see the module docstring)."""
        if not isinstance(obj, dict):
            return cls()
        try:
            return cls.model_validate(obj)
        except ValidationError as e:
            bad = {str(err["loc"][0]) for err in e.errors() if err.get("loc")}
            return cls.model_validate({k: v for k, v in obj.items() if k not in bad})

    def to_json(self) -> dict[str, Any]:
        """The record as run.json and the store hold it: the set fields in their order, then the unknown keys."""
        return self.model_dump(exclude_unset=True)

    def updated(self, **changes: Any) -> RunRecord:
        """This record with `changes` (validated): a field keeps its place, a new unknown key goes last."""
        return type(self).model_validate({**self.to_json(), **changes})

    def judge_names(self) -> list[str]:
        """The judges' names in the run's order (an empty name where a record named none)."""
        return [j if isinstance(j, str) else j.name for j in self.judges or []]

    def extra(self, key: str) -> Any:
        """A key this version does not type (a newer writer's), None without it."""
        return (self.model_extra or {}).get(key)


def stored_record(store: Store, run_id: str) -> RunRecord:
    """The run's record as its store keeps it (`Store.run_meta`); empty before the run registered it."""
    return RunRecord.read(store.run_meta(run_id))


__all__ = ["JudgeRef", "RunRecord", "stored_record"]
