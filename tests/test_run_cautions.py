"""Cautions after a run's table (run/cautions.py): a model that is for trying the tool judged, or a judge gave one
verdict to every row. Computed from the summary alone, printed by `localjudge run`, offered as `RunResult.cautions`."""

from __future__ import annotations

import json

from click.testing import CliRunner

from localjudge.cli import main
from localjudge.models.manifest import put_entry
from localjudge.models.registry import registry
from localjudge.run.aggregate import JudgeSummary
from localjudge.run.cautions import cautions
from localjudge.run.record import RunRecord

PIN = registry()["models"]["smollm2-135m"]["sha256"]
MIXED = {"relevance_to_query": JudgeSummary(n=10, n_scored=10, distribution={"yes": 6, "no": 4})}


def test_the_default_model_gets_one_line_saying_it_is_for_trying_and_where_a_capable_one_comes_from():
    (line,) = cautions(RunRecord(model_id="smollm2-135m", model_sha256=PIN), MIXED)
    assert line.startswith("note: smollm2-135m is the small model that ships for trying localjudge")
    assert "judges at chance" in line and "localjudge models pull NAME" in line and "\n" not in line
    # converted for this CPU on first use (engine/layout.py): the same name, this machine's digest
    (converted,) = cautions(RunRecord(model_id="smollm2-135m", model_sha256="a" * 64), MIXED)
    assert converted == line
    (shipped,) = cautions(RunRecord(model_id="smollm2-135m-q4_1", model_sha256=PIN), MIXED)
    assert shipped.startswith("note: smollm2-135m-q4_1 is the small model")


def test_the_same_file_under_another_name_or_converted_from_it_gets_the_line_too(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALJUDGE_MODELS_HOME", str(tmp_path / "models"))  # not the session's shared manifest
    assert cautions(RunRecord(model_id="my-copy.gguf", model_sha256=PIN), MIXED)
    put_entry("smol-q4", {"path": "/nowhere/smol-q4.gguf", "source": "optimize", "optimized_from": {"model": "smollm2-135m"}})
    (line,) = cautions(RunRecord(model_id="smol-q4", model_sha256="0" * 64), MIXED)
    assert line.startswith("note: smol-q4 is the small model")


def test_a_model_the_registry_does_not_mark_gets_no_line():
    assert cautions(RunRecord(model_id="scripted", model_sha256=None), MIXED) == []
    assert cautions(RunRecord(model_id="qwen2.5-1.5b-instruct", model_sha256="1" * 64), MIXED) == []


def test_a_broken_user_registry_gives_no_note_and_no_error(tmp_path, monkeypatch):
    bad = tmp_path / "models.toml"
    bad.write_text("[models.x\n")
    monkeypatch.setenv("LOCALJUDGE_MODELS_TOML", str(bad))
    assert cautions(RunRecord(model_id="smollm2-135m", model_sha256=PIN), MIXED) == []


def test_one_verdict_on_every_row_is_a_warning_from_five_scored_rows():
    run = RunRecord(model_id="scripted")
    same = {"j": JudgeSummary(n=6, n_scored=5, n_unscored=1, distribution={"yes": 5})}
    (line,) = cautions(run, same)
    assert line.startswith("warning: j gave the same verdict (yes) on all 5 scored rows") and "localjudge agree" in line
    assert cautions(run, {"j": JudgeSummary(n=4, n_scored=4, distribution={"no": 4})}) == []
    assert cautions(run, {"j": JudgeSummary(n=9, n_scored=9, distribution={"3": 4, "4": 5})}) == []


def test_the_run_command_prints_the_warning_after_its_table_and_stores_nothing_of_it(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"input": f"q{i}", "output": f"a{i}"}) + "\n" for i in range(6)))
    out = tmp_path / "run"
    r = CliRunner().invoke(
        main,
        ["run", str(data), "-j", "relevance_to_query", "-o", str(out), "-m", "scripted:", "--option"]
        + ['response={"rationale": "r", "result": "yes"}'],
    )
    assert r.exit_code == 0, r.output
    assert "warning: relevance_to_query gave the same verdict (yes) on all 6 scored rows" in r.output
    assert "note:" not in r.output  # a scripted model is not the trial model
    stored = (out / "summary.json").read_text() + (out / "run.json").read_text()
    assert "same verdict" not in stored


def test_after_a_run_that_judged_its_controls_the_cautions_point_at_them_not_at_the_command():
    same = {"j": JudgeSummary(n=6, n_scored=6, distribution={"yes": 6})}
    without = cautions(RunRecord(model_id="smollm2-135m", model_sha256=PIN), same)
    judged = cautions(RunRecord(model_id="smollm2-135m", model_sha256=PIN), same, controls=True)
    assert len(without) == len(judged) == 2
    assert all("localjudge controls RUN_DIR" in line for line in without)
    assert all("its negative controls below" in line and "localjudge controls" not in line for line in judged)
    assert [line.replace("its negative controls below", "localjudge controls RUN_DIR") for line in judged] == without


def test_the_same_verdict_warning_of_a_run_that_judged_its_controls_points_at_them_not_at_the_command(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"input": f"q{i}", "output": f"a{i}"}) + "\n" for i in range(6)))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    args = ["run", str(data), "-j", "relevance_to_query", "-o", str(tmp_path / "run"), *scripted, "--controls", "6"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    (warning,) = [line for line in r.output.splitlines() if "gave the same verdict" in line]
    assert "check it with its negative controls below" in warning and "localjudge controls" not in warning
    assert r.output.index(warning) < r.output.index("negative controls (another row's answer")
