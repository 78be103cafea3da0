"""The `server:` backend: judges through an OpenAI-compatible server (here a real `localjudge serve` on
loopback), each JSON format sent as response_format json_schema, every answer through the same parse
layer, probability-weighted scores from top_logprobs, and an identity from what the server reports."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from localjudge import evaluate
from localjudge.cli import main
from localjudge.engine import DecodeOptions, ModelRef, load_engine
from localjudge.engine.base import Message
from localjudge.engine.server import ServerEngine
from localjudge.errors import ModelError, ModelNotFoundError
from localjudge.formats import FourLine, YesNoJSON
from localjudge.judges import get_judge

pytestmark = pytest.mark.system

ROWS = [
    {"input": "What is the capital of France?", "output": "Paris.", "context": "Paris is the capital of France."},
    {"input": "How many legs has a spider?", "output": "Six.", "context": "Spiders have eight legs."},
    {"input": "Who wrote Hamlet?", "output": "Shakespeare.", "context": "Hamlet is a play by William Shakespeare."},
]


@pytest.fixture(scope="module")
def spec(judge_server):
    return f"server:{judge_server.url}#{judge_server.model}"


def test_identity_names_the_url_the_model_and_the_remote_gguf_digest(spec, judge_server, engine):
    ident = ModelRef(spec).identity()
    assert ident.backend == "server" and ident.model_id == "smollm2-135m"
    assert ident.digest == engine.identity().digest  # a localjudge server reports its GGUF's sha256
    assert ident.settings["url"] == judge_server.url and ident.settings["server"]["localjudge"]["settings"] == {"n_parallel": 4}
    assert ModelRef(f"server:{judge_server.url}").identity() == ident  # one model served: the name may be left out


def test_each_json_format_goes_out_as_its_json_schema_and_line_formats_as_plain_text(spec):
    eng = load_engine(spec)
    assert isinstance(eng, ServerEngine)
    body = eng.request_body([], YesNoJSON(), options=DecodeOptions())
    assert body["response_format"]["json_schema"]["schema"] == YesNoJSON().json_schema()
    assert body["max_tokens"] == YesNoJSON().max_tokens() and "logprobs" not in body
    assert "response_format" not in eng.request_body([], FourLine(), options=DecodeOptions())


@pytest.mark.slow
def test_a_run_through_the_server_scores_every_row_and_a_rerun_is_all_cache(spec, tmp_path):
    run = evaluate(ROWS, ["groundedness"], model=spec, out=tmp_path / "r", mapping={"retrieval_context": "context"})
    assert run.counts.evaluated == 3 and run.counts.unscored == 0
    assert all(r.result.value in ("yes", "no") and r.result.model_id == "smollm2-135m" for r in run.results)
    again = evaluate(ROWS, ["groundedness"], model=spec, out=tmp_path / "r", mapping={"retrieval_context": "context"})
    assert again.counts.evaluated == 0
    manifest = json.loads((tmp_path / "r" / "run.json").read_text())
    assert "server" in json.dumps(manifest)


@pytest.mark.slow
def test_probs_give_an_expected_score_from_the_servers_top_logprobs(spec):
    res = CliRunner().invoke(
        main,
        [
            "judge",
            "correctness",
            "--model",
            spec,
            "--probs",
            "--field",
            "input=2+2?",
            "--field",
            "output=4",
            "--field",
            "ground_truth=4",
        ],
    )
    assert res.exit_code in (0, 1), res.output
    out = json.loads(res.output)
    assert out["value"] in ("yes", "no") and 0.0 <= out["expected_score"] <= 1.0


@pytest.mark.slow
def test_a_line_format_answer_is_parsed_by_the_same_layer_scored_or_unscored_with_a_reason(spec):
    eng = load_engine(spec)
    judge = get_judge("advanced_relevance")  # four_line: plain text, no schema to send
    assert judge.output_formats[0].json_schema() is None
    res = judge.evaluate(eng, question="What is the capital of France?", answer="Paris is the capital.")
    assert res.scored or res.unscored_reason


def test_an_unreachable_server_is_a_one_line_model_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ModelError, match=rf"cannot reach the server at http://127.0.0.1:{port}/v1"):
        ModelRef(f"server:http://127.0.0.1:{port}/v1#m").identity()
    res = CliRunner().invoke(
        main, ["judge", "correctness", "--model", f"server:http://127.0.0.1:{port}/v1#m", "--field", "input=a"]
    )
    assert res.exit_code == 3 and "cannot reach the server" in res.output


def test_a_model_the_server_does_not_serve_is_named(judge_server):
    with pytest.raises(ModelNotFoundError, match="does not serve 'gpt-4o'; it serves: smollm2-135m"):
        ModelRef(f"server:{judge_server.url}#gpt-4o").identity()


def test_a_reasoning_request_reports_the_servers_reasoning_tokens_as_the_local_engine_counts_them(spec, engine):
    """The remote's `completion_tokens_details.reasoning_tokens` is the generation's `n_reasoning_tokens`:
    the same count the local engine gives for the same think block (8 tokens and its two markers)."""
    msgs = [Message(role="user", content="Is Paris the capital of France? Answer yes or no.")]
    opts = DecodeOptions(think_tokens=8)
    remote = load_engine(spec).generate(msgs, YesNoJSON(), opts)
    local = engine.generate(msgs, YesNoJSON(), opts)
    assert remote.n_reasoning_tokens == local.n_reasoning_tokens > 8
    assert remote.n_reasoning_tokens < remote.n_output_tokens
