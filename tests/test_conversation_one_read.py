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
