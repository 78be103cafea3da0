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


def test_store_with_built_in_judges_written_before_the_public_source_citations_resumes_without_judging(tmp_path):
    """builtin_fast.sqlite: `run --judge relevance_to_query --judge safety --limit 2 --fast` by the
    version before the built-in judges' attribution text was rewritten; their versions are kept."""
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(LEGACY / "builtin_fast.sqlite", out / "results.sqlite")
    args = ["run", str(DATA), "-j", "relevance_to_query", "-j", "safety", "--limit", "2", "--fast", "--out", str(out), "-q"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["evaluated"] == 0 and counts["reused"] == 4 and counts["engine_loaded"] is False


def test_built_in_judges_keep_the_versions_they_had_before_the_attribution_rewrite():
    from localjudge.judges import get_judge

    before = json.loads((LEGACY / "builtin_versions.json").read_text())
    assert {name: get_judge(name).version for name in before} == before


def test_a_resumed_run_keeps_the_shipped_file_only_when_that_file_judged_it(tmp_path, monkeypatch, capfd):
    from localjudge.engine.model_spec import ModelSpec
    from localjudge.models.registry import resolve_model
    from localjudge.run.resumed_model import resumed_model
    from localjudge.store.db import Store

    pin = resolve_model().sha256
    out = tmp_path / "run"
    out.mkdir()
    default = ModelSpec.given(None, {"n_threads": 1})
    assert resumed_model(default, out) is default  # nothing to resume
    with Store(out / "results.sqlite") as store:
        rid = store.new_run()
        store.set_run_meta(rid, {"model_id": "smollm2-135m", "model_sha256": pin})
    kept = resumed_model(default, out)
    assert kept.options == {"n_threads": 1, "layout": "shipped"}
    assert "was judged by smollm2-135m's shipped file" in capfd.readouterr().err
    chosen = ModelSpec.given(None, {"layout": "auto"})
    assert resumed_model(chosen, out) is chosen  # the user's own choice wins
    assert resumed_model(ModelSpec.given("gemma3-270m"), out).options == {}  # another model: nothing to keep
    monkeypatch.setenv("LOCALJUDGE_LAYOUT", "auto")
    assert resumed_model(default, out) is default
    monkeypatch.delenv("LOCALJUDGE_LAYOUT")
    with Store(out / "results.sqlite") as store:  # judged by the converted file: it resumes with that one
        store.set_run_meta(rid, {"model_id": "smollm2-135m", "model_sha256": "a" * 64})
    assert resumed_model(default, out) is default
