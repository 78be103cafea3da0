"""A conversation run reads its data file once (issue 44 part 2): the columns, the row count, the conversations
stored for the view and the rows judged all come from one read (there were four)."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import localjudge
from localjudge.engine.base import ScriptedEngine

CHATS = [
    {"id": "c1", "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4."}]},
    {
        "id": "c2",
        "messages": [
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "And of Italy?"},
            {"role": "assistant", "content": "Rome."},
        ],
    },
]


def test_a_per_turn_run_opens_its_conversation_file_once(tmp_path, monkeypatch):
    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in CHATS), encoding="utf-8")
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, str | Path) and Path(file) == data:
            opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    engine = ScriptedEngine([json.dumps({"rationale": "r", "result": "yes"})], cycle=True)
    run = localjudge.evaluate(str(data), ["conversation_completeness"], engine=engine, out=tmp_path / "r", conversation="turn")
    assert [r.row_id for r in run.results] == ["c1:0", "c2:0", "c2:1"]
    assert len(opened) == 1, opened


def test_a_per_turn_run_reads_a_csv_or_parquet_file_once(tmp_path, monkeypatch):
    import csv

    import pandas as pd
    import pyarrow.parquet as pq

    rows = [{"id": c["id"], "messages": json.dumps(c["messages"])} for c in CHATS]
    csv_path, parquet_path = tmp_path / "chats.csv", tmp_path / "chats.parquet"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, ["id", "messages"])
        w.writeheader()
        w.writerows(rows)
    pd.DataFrame(rows).to_parquet(parquet_path)
    opened: list[str] = []
    real_open, real_parquet = builtins.open, pq.ParquetFile

    def counting_open(file, *args, **kwargs):
        if isinstance(file, str | Path) and Path(file) in (csv_path, parquet_path):
            opened.append(Path(file).suffix)
        return real_open(file, *args, **kwargs)

    class CountingParquetFile(real_parquet):
        def __init__(self, source, *args, **kwargs):
            if Path(str(source)) == parquet_path:
                opened.append(".parquet")
            super().__init__(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(pq, "ParquetFile", CountingParquetFile)
    engine = ScriptedEngine([json.dumps({"rationale": "r", "result": "yes"})], cycle=True)
    for path in (csv_path, parquet_path):
        run = localjudge.evaluate(
            str(path), ["conversation_completeness"], engine=engine, out=tmp_path / path.suffix[1:], conversation="turn"
        )
        assert [r.row_id for r in run.results] == ["c1:0", "c2:0", "c2:1"]
    assert opened == [".csv", ".parquet"]  # before: the CSV read a second time to count, the Parquet footer opened twice
