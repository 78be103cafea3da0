"""docs/constraints.md's snippets, run as written: the Python ones each in its own process with the default
model, the judge file through the judge loader, the request body to `localjudge serve`'s app (`judge_app`: the app the
CLI builds, in this process)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from serve_support import post

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "constraints.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_page_has_the_snippets_it_describes():
    assert len(blocks("python")) == 3 and len(blocks("toml")) == 1 and len(blocks("json")) == 1


@pytest.mark.system
@pytest.mark.parametrize("index", [0, 1, 2], ids=["json_schema", "grammar", "think"])
def test_each_python_snippet_runs_with_the_default_model(tmp_path, _localjudge_home, index):
    r = subprocess.run(
        [sys.executable, "-c", blocks("python")[index]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    expect = ("'code'" in last, last.startswith("SELECT ") and last.endswith(";"), last in ("yes", "no"))
    assert expect[index], last


@pytest.mark.system
def test_the_judge_file_with_a_grammar_output_judges(tmp_path, engine):
    from localjudge.judges.registry import load_judge_file

    path = tmp_path / "sql_writer.toml"
    path.write_text(blocks("toml")[0], encoding="utf-8")
    judge = load_judge_file(path)
    result = judge.evaluate(engine, request="list the names of all users")
    assert re.fullmatch(r"SELECT [a-z_]+(, [a-z_]+){0,3} FROM [a-z_]{1,12};", result.raw_text)


@pytest.mark.system
def test_the_grammar_request_body_is_answered_by_the_server(judge_app):
    s, b, _ = post(judge_app, json.loads(blocks("json")[0]))
    assert s == 200 and b["choices"][0]["message"]["content"].startswith("SELECT ")
