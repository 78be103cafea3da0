"""The run bundle is declared once (localjudge/run/spec.py `RunSpec`): every run option of `localjudge run` lands in
exactly one of its fields, it survives the pickle Ray workers get and JSON, and the model's `ModelRef` is built once."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from click.testing import CliRunner

from localjudge.cli import main
from localjudge.run.spec import RunSpec

# a run option of `localjudge run` -> the one RunSpec field it sets (the others are the command's own: output,
# labels, MLflow logging)
RUN_OPTIONS: dict[tuple[str, ...], str] = {
    ("-j", "faithfulness"): "judges",
    ("--trace-instructions", "check it"): "judges",
    ("--trace-instructions", "check it", "--trace-result", "bool", "--trace-max-iterations", "3"): "judges",
    ("--map", "output=answer"): "mapping",
    ("--judges-dir", str(Path(__file__).parent)): "judges_dir",
    ("--limit", "3"): "limit",
    ("--temperature", "0.5"): "decode",
    ("--seed", "7"): "decode",
    ("--field-tokens", "9"): "decode",
    ("--fast",): "decode",
    ("--probs",): "decode",
    ("--think-tokens", "4"): "decode",
    ("--both-orders",): "both_orders",
    ("--csv-raw",): "csv_raw",
    ("--out", "elsewhere"): "out",
    ("--model", "llama:other.gguf"): "model",
    ("--option", "n_batch=64"): "model",
    ("--n-ctx", "512"): "model",
    ("--threads", "1"): "model",
    ("--gpu-layers", "1"): "model",
    ("--n-batch", "64"): "model",
    ("--chat-template", "raw"): "model",
    ("--parallel", "2"): "model",
    ("--panel", "a.gguf,b.gguf"): "trust",
    ("--panel", "a.gguf,b.gguf", "--panel-aggregate", "mean", "--panel-weights", "1,2"): "trust",
    ("--escalate-to", "big.gguf", "--escalate-below", "0.5"): "trust",
    ("--engine", "ray"): "executor",
    ("--engine", "ray", "--ray-address", "auto", "--workers", "2"): "executor",
    ("--granularity", "turn"): "conversation",
    ("--window", "3"): "conversation",
    ("--truncate-conversation",): "conversation",
    ("--controls", "5"): "controls",
    ("--controls-seed", "2"): "controls_seed",
    ("--control-kind", "context"): "control_kinds",  # without --controls the run is refused before any call
}
# --mlflow-sessions replaces DATA (test_mlflow_sessions_option_sets_the_data below); --log-assessments acts after the run
NOT_RUN_OPTIONS = {"quiet", "mlflow_log", "experiment", "tracking_uri", "labels_file", "label_column", "help"}
NOT_RUN_OPTIONS |= {"mlflow_sessions", "log_assessments"}
NOT_RUN_OPTIONS |= {"otel_traces"}  # replaces DATA (tests/test_otel_run.py)


class _Stop(Exception):
    pass


def _spec_of(monkeypatch: pytest.MonkeyPatch, tmp_path, *extra: str) -> RunSpec:
    import localjudge.api as runner

    got: list[RunSpec] = []

    def fake_execute(spec: RunSpec, progress=None):
        got.append(spec)
        raise _Stop

    monkeypatch.setattr(runner, "execute", fake_execute)
    data = tmp_path / "data.jsonl"
    data.write_text('{"input": "q", "output": "a"}\n', encoding="utf-8")
    r = CliRunner().invoke(main, ["run", str(data), "-j", "correctness", "--out", str(tmp_path / "out"), *extra])
    assert isinstance(r.exception, _Stop), r.output
    return got[0]


def _fields(spec: RunSpec) -> dict[str, object]:
    return {f: (getattr(spec, f).model_dump() if f == "model" else getattr(spec, f)) for f in RunSpec.model_fields}


def test_every_run_option_of_the_cli_sets_exactly_one_runspec_field(monkeypatch, tmp_path):
    import click

    cmd = main.commands["run"]
    declared = {o for opts in RUN_OPTIONS for o in opts if o.startswith("-")}
    for p in cmd.params:
        if isinstance(p, click.Option) and p.name not in NOT_RUN_OPTIONS:
            assert declared & set(p.opts), f"run option {p.opts} is not mapped onto a RunSpec field in this test"
    base = _fields(_spec_of(monkeypatch, tmp_path))
    for argv, field in RUN_OPTIONS.items():
        changed = _fields(_spec_of(monkeypatch, tmp_path, *argv))
        differ = {f for f in base if changed[f] != base[f]}
        assert differ == {field}, f"{' '.join(argv)} changed {sorted(differ)}, expected only {field!r}"


def test_runspec_round_trips_through_pickle_and_json_as_ray_workers_and_stores_see_it(tmp_path):
    spec = RunSpec.build(
        str(tmp_path / "data.jsonl"),
        ["correctness"],
        model="scripted:answers.jsonl",
        model_options={"response": "yes", "n_ctx": "512"},
        mapping=["output=answer"],
        options={"temperature": 0.5, "probs": True},
        out=tmp_path / "run",
        panel=["a.gguf", "b.gguf"],
        aggregation="mean",
        executor="ray",
    )
    assert spec.model.ref().options.model_dump(exclude_unset=True) == {"response": "yes", "n_ctx": 512}
    back = pickle.loads(pickle.dumps(spec))
    assert back.model_dump() == spec.model_dump()
    assert RunSpec.model_validate_json(spec.model_dump_json()).model_dump() == spec.model_dump()
    assert json.loads(spec.model_dump_json())["model"] == {
        "spec": "scripted:answers.jsonl",
        "options": {"response": "yes", "n_ctx": "512"},
    }
    assert back.model.ref().options == spec.model.ref().options  # a worker builds its own reference from the data


def test_engine_kwargs_still_work_for_one_release_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="engine_kwargs"):
        spec = RunSpec.build("data.jsonl", ["correctness"], model="scripted:x.jsonl", engine_kwargs={"response": "no"})
    assert spec.model.options == {"response": "no"}


def test_a_cli_run_builds_the_model_reference_once(monkeypatch, tmp_path):
    from localjudge.engine import backends

    built: list[object] = []
    init = backends.ModelRef.__init__

    def counting(self, *a, **kw):
        built.append(a[0] if a else kw.get("spec"))
        init(self, *a, **kw)

    monkeypatch.setattr(backends.ModelRef, "__init__", counting)
    data = tmp_path / "data.jsonl"
    data.write_text('{"input": "2+2?", "output": "4", "ground_truth": "4"}\n', encoding="utf-8")
    r = CliRunner().invoke(
        main,
        [
            "run",
            str(data),
            "-j",
            "correctness",
            "--model",
            "scripted:",
            "--option",
            "response=yes",
            "-q",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert r.exit_code in (0, 1), r.output
    assert built == ["scripted:"]


def test_mlflow_sessions_option_sets_the_data_and_nothing_else(monkeypatch, tmp_path):
    import localjudge.api as runner
    from localjudge.conversations.dataset import MlflowSessions

    got: list[RunSpec] = []

    def fake_execute(spec: RunSpec, progress=None):
        got.append(spec)
        raise _Stop

    monkeypatch.setattr(runner, "execute", fake_execute)
    argv = ["run", "--mlflow-sessions", "sqlite:///x.db", "--experiment", "chats", "-j", "correctness"]
    r = CliRunner().invoke(main, [*argv, "--out", str(tmp_path / "out")])
    assert isinstance(r.exception, _Stop), r.output
    assert got[0].data == MlflowSessions(tracking_uri="sqlite:///x.db", experiment="chats")
    both = CliRunner().invoke(main, ["run", str(tmp_path / "d.jsonl"), *argv[1:]])
    assert both.exit_code == 2 and "give DATA or --mlflow-sessions" in both.output
