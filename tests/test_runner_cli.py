"""`localjudge run`: exit codes for input and model errors, the progress line, a short real-model run."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from localjudge.cli import main
from localjudge.cli.run import ProgressLine
from localjudge.run.types import Progress

DATA = Path(__file__).parent / "data"
MIXED = str(DATA / "runner_mixed30.jsonl")


def test_missing_mapped_column_exits_2_listing_columns_before_loading_anything(tmp_path):
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", MIXED, "-j", "correctness", "--map", "ground_truth=truth", "--out", str(out)])
    assert r.exit_code == 2
    assert "no column 'truth' in the data; columns: id, question, answer, ground_truth, context, label" in r.output
    assert not out.exists()


def test_unknown_judge_and_unreadable_data_exit_2(tmp_path):
    r = CliRunner().invoke(main, ["run", MIXED, "-j", "corectness", "--out", str(tmp_path / "a")])
    assert r.exit_code == 2 and "corectness" in r.output
    r = CliRunner().invoke(main, ["run", str(tmp_path / "missing.jsonl"), "-j", "correctness", "--out", str(tmp_path / "b")])
    assert r.exit_code == 2 and "not found" in r.output
    (tmp_path / "data.xlsx").write_text("x")
    r = CliRunner().invoke(main, ["run", str(tmp_path / "data.xlsx"), "-j", "correctness", "--out", str(tmp_path / "c")])
    assert r.exit_code == 2 and "use a .jsonl, .csv, .tsv or .parquet file" in r.output


def test_a_model_that_cannot_be_found_exits_3(tmp_path):
    r = CliRunner().invoke(
        main, ["run", MIXED, "-j", "correctness", "--model", str(tmp_path / "nope.gguf"), "--out", str(tmp_path / "run")]
    )
    assert r.exit_code == 3 and "does not exist" in r.output


def test_progress_line_shows_rows_rate_eta_and_pass_rates():
    buf = io.StringIO()
    line = ProgressLine(buf, enabled=True, interval_s=0, width=200)
    line(
        Progress(
            rows_done=3,
            rows_total=6,
            cells_done=6,
            cells_total=12,
            evaluated=4,
            cached=1,
            reused=1,
            elapsed_s=60.0,
            pass_rates={"correctness": (1, 2), "groundedness": (0, 0)},
        )
    )
    line.close()
    text = buf.getvalue()
    assert text.startswith(
        "\r[##########..........] rows 3/6 (6/12 judgements, 2 cached) 3.0 rows/min ETA 1m30s"
    )  # 6 left at 15 s per judgement run
    assert text.rstrip().endswith("pass: correctness 50% groundedness -") and text.endswith("\n")
    quiet = io.StringIO()
    ProgressLine(quiet, enabled=False)(Progress(1, 1, 1, 1, 1, 0, 0, 1.0, {}))
    assert quiet.getvalue() == ""
    narrow = io.StringIO()
    ProgressLine(narrow, enabled=True, width=40)(Progress(1, 1, 1, 1, 1, 0, 0, 1.0, {"j": (1, 1)}))
    assert len(narrow.getvalue()) == 40  # "\r" + 39 characters: never wraps the terminal


@pytest.mark.model
def test_short_real_run_prints_the_summary_and_exits_0(tmp_path):
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", MIXED, "-j", "relevance_to_query", "--limit", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].split()[:4] == ["judge", "n", "scored", "mean"]
    assert "relevance_to_query  2  2" in r.output and "2 judged now" in r.output
    meta = json.loads((out / "run.json").read_text())
    assert meta["model_id"] == "smollm2-135m" and meta["counts"]["evaluated"] == 2 and meta["counts"]["engine_loaded"]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["result"]["value"] in ("yes", "no") for r in rows] == [True, True]
