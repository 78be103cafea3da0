"""CONTRIBUTING's recipes "How to add a model backend" and "How to add a CLI command", followed step by step: a
backend registered by scheme runs a real `localjudge run` end to end, and a command added the recipe's way is
routed, prints, and turns a library error into one line and its exit code."""

from __future__ import annotations

import hashlib
import json

import click
import pytest
from click.testing import CliRunner
from pydantic import Field

from localjudge.engine import backends
from localjudge.engine.backends import Backend, BackendOptions, register_backend
from localjudge.engine.base import Engine, ModelIdentity, ScriptedEngine
from localjudge.errors import InputError


class MyOptions(BackendOptions):  # the recipe's options class: unknown keys refused, --option strings coerced
    verdict: str = Field("yes", description="what every judgement says")


class MyBackend(Backend):
    """The recipe's backend: an engine that answers every yes/no judgement with its `verdict` option."""

    scheme = "my"
    Options = MyOptions
    summary = "the recipe's backend (tests/test_recipes_run.py)"

    def identity(self, target: str | None, options: BackendOptions) -> ModelIdentity:
        assert isinstance(options, MyOptions)
        digest = hashlib.sha256(f"my:{target}".encode()).hexdigest()
        return ModelIdentity(backend="my", model_id=f"my:{target}", digest=digest, settings={"verdict": options.verdict})

    def load(self, target: str | None, options: BackendOptions) -> Engine:
        assert isinstance(options, MyOptions)
        answer = json.dumps({"rationale": "recipe", "result": options.verdict})
        return ScriptedEngine([answer], model_id=f"my:{target}", cycle=True)


@pytest.fixture
def my_backend():
    register_backend("my", MyBackend())
    yield
    backends._REGISTRY.pop("my", None)


def test_a_backend_added_by_the_recipe_runs_a_real_cli_run_end_to_end(my_backend, tmp_path):
    from localjudge.cli import main

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": "What is 2+2?", "output": "4"}) + "\n")
    out = tmp_path / "run"
    args = ["run", str(data), "--judge", "relevance_to_query", "--model", "my:x", "--option", "verdict=no", "--out", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["judge"], r["result"]["value"]) for r in rows] == [("relevance_to_query", "no")]
    run = json.loads((out / "run.json").read_text())
    assert run["backend"] == "my" and run["engine"] == {"verdict": "no"}  # identity().settings enter the record
    bad = CliRunner().invoke(main, [*args[:-2], "--option", "colour=red", "--out", str(tmp_path / "r2")])
    assert bad.exit_code != 0 and "colour" in bad.output  # an unknown option is refused by the options class


@click.command(name="shout")
@click.argument("text")
def shout_cmd(text: str) -> None:
    """The recipe's command: a library call, printed."""
    if not text.strip():
        raise InputError("TEXT is empty; give some text to shout")
    click.echo(text.upper())


def test_a_command_added_by_the_recipe_prints_and_maps_library_errors_to_one_line_and_an_exit_code():
    from localjudge.cli import main

    main.add_command(shout_cmd)
    try:
        ok = CliRunner().invoke(main, ["shout", "hello"])
        assert ok.exit_code == 0 and ok.output == "HELLO\n"
        bad = CliRunner().invoke(main, ["shout", " "])
        assert bad.exit_code == InputError.exit_code
        assert bad.output.strip().splitlines() == ["Error: TEXT is empty; give some text to shout"]
    finally:
        main.commands.pop("shout", None)
