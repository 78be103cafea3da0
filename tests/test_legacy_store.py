"""A store written by an earlier localjudge still resumes: same cache keys, nothing judged again.

The stores in tests/data/legacy/ were written by `localjudge run` before the backend seam existed
(default model, a user judge file whose text never changes). Resuming them with the same command
must find every cell already done: the model identity, the reproducibility record and the engine
settings that enter the cache key are unchanged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from localjudge.cli import main

LEGACY = Path(__file__).parent / "data" / "legacy"
DATA = Path(__file__).parent / "data" / "runner_qa.jsonl"


@pytest.mark.parametrize(
    ("store", "args", "rows"),
    [
        ("default.sqlite", [], 3),
        ("nctx2048_parallel2_probs.sqlite", ["--n-ctx", "2048", "--parallel", "2", "--probs"], 2),
    ],
)
def test_store_written_before_the_backend_seam_resumes_without_judging(tmp_path, store, args, rows):
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(LEGACY / store, out / "results.sqlite")
    res = CliRunner().invoke(
        main,
        [
            "run",
            str(DATA),
            "--judges-dir",
            str(LEGACY / "judges"),
            "--judge",
            "polite",
            "--limit",
            str(rows),
            "--out",
            str(out),
            "-q",
            *args,
        ],
    )
    assert res.exit_code == 0, res.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["evaluated"] == 0 and counts["reused"] == rows and counts["engine_loaded"] is False
