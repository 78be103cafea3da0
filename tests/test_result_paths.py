"""Every path the package's SQL takes into a stored JSON column names a field the typed model stored there has
(issue 44): `json_extract(result, '$.score')` reads `JudgeResult.score`, `json_extract(record, '$.prompt_hash')`
reads `Record.prompt_hash`. A renamed result field then fails this test instead of silently emptying a view page."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from localjudge.store.results import JudgeResult, Record

PACKAGE = Path(__file__).resolve().parent.parent / "localjudge"
PATH = re.compile(r"json_extract\(\s*(?:\w+\.)?(\w+)\s*,\s*'\$\.([A-Za-z_][\w.]*)'\s*\)")
STORED: dict[str, type[BaseModel]] = {"result": JudgeResult, "record": Record}  # column -> the model its JSON is


def unknown_paths(text: str, stored: dict[str, type[BaseModel]] = STORED) -> list[str]:
    """`column $.path` for each json_extract in `text` whose column is not a known JSON column or whose first path
    segment is not a field of that column's model."""
    bad = []
    for column, path in PATH.findall(text):
        model = stored.get(column)
        if model is None or path.split(".")[0] not in model.model_fields:
            bad.append(f"{column} $.{path}")
    return bad


def test_every_json_path_in_the_package_names_a_field_of_the_stored_model():
    found, bad = 0, []
    for f in sorted(PACKAGE.rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        found += len(PATH.findall(text))
        bad += [f"{f.relative_to(PACKAGE)}: {b}" for b in unknown_paths(text)]
    assert found >= 30  # the view's and labels' reads are all seen (a pattern that matched nothing would pass)
    assert bad == []
    every = sum(f.read_text(encoding="utf-8").count("json_extract(") for f in PACKAGE.rglob("*.py"))
    assert every == found, "a json_extract this test cannot read: keep the column and '$.path' literal"


def test_a_renamed_field_is_an_unknown_path():
    class Renamed(BaseModel):
        points: float | None = None  # `score` renamed

    sql = "SELECT json_extract(result, '$.score') FROM results"
    assert unknown_paths(sql) == []
    assert unknown_paths(sql, {"result": Renamed}) == ["result $.score"]
    assert unknown_paths("json_extract(r.result, '$.details.cascade')") == []
    assert unknown_paths("json_extract(meta, '$.x')") == ["meta $.x"]
