"""The backend seam: model specs by scheme, typed options from `--option`, identities without loading,
canned answers from the command line (`scripted:`), and the real model through `llama:`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from localjudge.cli import main
from localjudge.engine import ModelRef, ScriptedEngine, parse_spec, register_backend
from localjudge.engine.backends import Backend, BackendOptions, get_backend
from localjudge.engine.base import ModelIdentity
from localjudge.errors import InputError, ModelNotFoundError

YES = '{"rationale": "canned", "result": "yes"}'
NO = '{"rationale": "canned", "result": "no"}'
QA = ["--field", "input=What is 2+2?", "--field", "output=4", "--field", "ground_truth=4"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, ("llama", None)),
        ("smollm2-135m", ("llama", "smollm2-135m")),
        ("llama:smollm2-135m", ("llama", "smollm2-135m")),
        ("/models/judge.gguf", ("llama", "/models/judge.gguf")),
        ("c:/models/judge.gguf", ("llama", "c:/models/judge.gguf")),  # a drive letter is not a scheme
        ("scripted:answers.jsonl", ("scripted", "answers.jsonl")),
        ("server:http://127.0.0.1:8000/v1#judge", ("server", "http://127.0.0.1:8000/v1#judge")),
    ],
)
def test_a_spec_names_its_backend_by_scheme_and_llama_is_the_default(spec, expected):
    assert parse_spec(spec) == expected


def test_an_unknown_scheme_names_the_known_ones():
    with pytest.raises(InputError, match=r"unknown model backend 'hf'; known: llama, scripted, server"):
        parse_spec("hf:org/repo/file.gguf")


def test_options_are_validated_by_the_backend_with_the_valid_keys_in_one_line():
    ref = ModelRef(None, {"n_ctx": "2048", "n_parallel": "2"})  # strings from the CLI are coerced
    assert (ref.options.n_ctx, ref.options.n_parallel) == (2048, 2)  # type: ignore[attr-defined]
    with pytest.raises(InputError) as e:
        ModelRef(None, {"no_such_key": 1})
    assert "\n" not in str(e.value) and "valid keys: n_ctx, n_threads" in str(e.value)
    with pytest.raises(InputError, match=r"--option n_parallel=0: Input should be greater than or equal to 1"):
        ModelRef(None, {"n_parallel": 0})


def test_llama_identity_without_loading_names_the_file_digest_and_only_output_changing_settings():
    ident = ModelRef(None, {"n_threads": 1, "n_ctx": 2048, "n_parallel": 1}).identity()
    assert ident.backend == "llama" and ident.model_id == "smollm2-135m" and len(ident.digest) == 64
    assert ident.settings == {"n_ctx": 2048}  # threads and one sequence do not change outputs
    assert ModelRef(None, {"n_parallel": 4}).identity().settings == {"n_parallel": 4}


def test_a_physical_batch_over_32_tokens_enters_the_identity_because_its_prompts_round_differently():
    assert ModelRef(None, {"n_ubatch": 32}).identity().settings == {}  # any split at or below 32 rounds alike
    assert ModelRef(None, {"n_ubatch": 512}).identity().settings == {"n_ubatch": 512}
    assert ModelRef(None, {"n_ubatch": 512, "n_batch": 64}).identity().settings == {"n_ubatch": 64}  # what llama.cpp gets


@pytest.mark.system
def test_a_loaded_llama_engine_reports_the_identity_its_spec_promised(engine):
    assert engine.identity() == ModelRef(None).identity()


def test_cli_option_no_such_key_exits_2_naming_the_valid_keys():
    res = CliRunner().invoke(main, ["judge", "correctness", *QA, "--option", "no_such_key=1"])
    assert res.exit_code == 2
    line = res.output.strip()
    assert "\n" not in line and "no_such_key" in line and "valid keys: n_ctx, n_threads, n_batch" in line


def test_cli_alias_and_option_that_disagree_exit_2():
    res = CliRunner().invoke(main, ["judge", "correctness", *QA, "--n-ctx", "1024", "--option", "n_ctx=2048"])
    assert res.exit_code == 2 and "--n-ctx 1024 and --option n_ctx=2048 disagree" in res.output


@pytest.mark.system
def test_cli_judges_with_the_real_model_and_an_option(engine):
    res = CliRunner().invoke(main, ["judge", "correctness", *QA, "--option", "n_ctx=2048"])
    assert res.exit_code in (0, 1), res.output
    out = json.loads(res.output)
    assert out["judge"] == "correctness" and (out["value"] in ("yes", "no") or out["unscored_reason"])


def test_cli_runs_a_judge_with_canned_answers_from_a_file(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(YES + "\n" + NO + "\n")
    res = CliRunner().invoke(main, ["judge", "correctness", *QA, "--model", f"scripted:{answers}"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["value"], out["score"], out["model_id"]) == ("yes", 1.0, "scripted:answers.jsonl")


def test_cli_runs_a_dataset_with_one_canned_answer_and_caches_it(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"input": f"q{i}", "output": f"a{i}"}) + "\n" for i in range(3)))
    args = [
        "run",
        str(data),
        "-j",
        "relevance_to_query",
        "--model",
        "scripted:",
        "--option",
        f"response={NO}",
        "--out",
        str(tmp_path / "run"),
        "-q",
    ]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["result"]["value"] for r in rows] == ["no"] * 3
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["backend"] == "scripted" and meta["counts"]["evaluated"] == 3
    res = CliRunner().invoke(main, args)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["counts"]["reused"] == 3
    other = [
        "run",
        str(data),
        "-j",
        "relevance_to_query",
        "--model",
        "scripted:",
        "--option",
        f"response={YES}",
        "--out",
        str(tmp_path / "run"),
        "-q",
    ]
    CliRunner().invoke(main, other)  # other canned answers are another model: every cell judged again
    assert json.loads((tmp_path / "run" / "run.json").read_text())["counts"]["evaluated"] == 3


def test_scripted_backend_errors_are_one_line_with_the_fix(tmp_path):
    with pytest.raises(InputError, match=r"scripted: needs a file of answers"):
        ModelRef("scripted:").identity()
    with pytest.raises(ModelNotFoundError, match=r"cannot be read"):
        ModelRef(f"scripted:{tmp_path / 'missing.jsonl'}").identity()
    bad = tmp_path / "a.json"
    bad.write_text('{"not": "a list"}')
    with pytest.raises(InputError, match=r"must be a JSON array of answer strings"):
        ModelRef(f"scripted:{bad}").identity()
    res = CliRunner().invoke(main, ["judge", "correctness", *QA, "--model", f"scripted:{bad}"])
    assert res.exit_code == 2 and res.output.count("\n") == 1


def test_models_options_lists_each_backend_and_its_options():
    res = CliRunner().invoke(main, ["models", "options"])
    assert res.exit_code == 0
    assert "llama:" in res.output and "n_parallel" in res.output and "scripted:" in res.output and "response" in res.output


def test_a_registered_backend_is_used_by_its_scheme(tmp_path):
    class EchoOptions(BackendOptions):
        answer: str = "yes"

    class EchoBackend(Backend):
        scheme = "echo"
        Options = EchoOptions

        def identity(self, target, options):
            return ModelIdentity(backend="echo", model_id=f"echo:{options.answer}", digest="0" * 64)

        def load(self, target, options):
            return ScriptedEngine([json.dumps({"rationale": "echo", "result": options.answer})], model_id="echo", cycle=True)

    register_backend("echo", EchoBackend())
    try:
        res = CliRunner().invoke(main, ["judge", "correctness", *QA, "--model", "echo:", "--option", "answer=no"])
        assert res.exit_code == 0 and json.loads(res.output)["value"] == "no"
        assert get_backend("echo").options({"answer": "x"}).answer == "x"  # type: ignore[attr-defined]
    finally:
        from localjudge.engine import backends

        backends._REGISTRY.pop("echo", None)
