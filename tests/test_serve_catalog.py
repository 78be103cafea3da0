"""Known judge prompts tightened by the catalog (serve/core/catalog.py): MLflow's own judges pointed at a real
`localjudge serve` (`openai:/` + OPENAI_API_BASE, a sqlite tracking store in tmp: a client library given a URL,
so a real server on loopback) get a usable verdict on every RAG case; on the app the CLI builds, in this process
(tests/serve_support.py `serve_inprocess`), a catalog prompt's answer names its contract, `--no-catalog-formats`
gives back the client's schema only and a prompt one character off a catalog prompt is not tightened; the
intersection never loosens the client's schema."""

from __future__ import annotations

import json
from typing import Literal

import jsonschema
import pytest

from localjudge.engine.base import Message
from localjudge.serve.core.catalog import Catalog, intersect

CASES = [  # (question, answer, retrieved context)
    ("What is the capital of France?", "Paris.", "Paris is the capital and largest city of France."),
    ("How many legs has a spider?", "Six.", "Spiders have eight legs and two body parts."),
    ("When was the Eiffel Tower completed?", "In 1889.", "The Eiffel Tower was completed in 1889 for the World's Fair."),
    ("What do bees make?", "Honey and wax.", "Honey bees produce honey and beeswax in their hives."),
    ("Who wrote Hamlet?", "Charles Dickens.", "Hamlet is a tragedy written by William Shakespeare."),
]
MLFLOW_SCHEMA = {  # what MLflow 3.17's judges send as response_format (captured from the installed package)
    "properties": {
        "result": {"description": "The evaluation rating/result", "title": "Result", "type": "string"},
        "rationale": {"description": "Detailed explanation for the evaluation", "title": "Rationale", "type": "string"},
    },
    "required": ["result", "rationale"],
    "title": "JudgeEvaluation",
    "type": "object",
    "additionalProperties": False,
}


def _grounded_prompt(question: str, answer: str, context: str) -> str:
    from mlflow.genai.judges.prompts.groundedness import GROUNDEDNESS_PROMPT

    return (
        GROUNDEDNESS_PROMPT.replace("{{input}}", question).replace("{{output}}", answer).replace("{{retrieval_context}}", context)
    )


def _body(prompt: str, model: str) -> dict:
    rf = {"type": "json_schema", "json_schema": {"name": "JudgeEvaluation", "schema": MLFLOW_SCHEMA, "strict": True}}
    return {"model": model, "messages": [{"role": "user", "content": prompt}], "response_format": rf, "max_tokens": 96}


# ------------------------------------------------------------------------------------- no model


def test_catalog_recognises_mlflow_groundedness_prompt_and_narrows_result_to_yes_no():
    pytest.importorskip("mlflow")
    hit = Catalog.builtin().tighten([Message(role="user", content=_grounded_prompt(*CASES[0]))], MLFLOW_SCHEMA)
    assert hit is not None and "groundedness" in hit.contract.judge
    assert hit.schema is not None and hit.schema["properties"]["result"]["enum"] == ["yes", "no"]
    for ok in ({"result": "yes", "rationale": "r"}, {"result": "no", "rationale": ""}):
        jsonschema.validate(ok, hit.schema)
        jsonschema.validate(ok, MLFLOW_SCHEMA)  # still valid for what the client asked
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"result": "yes|no", "rationale": "r"}, hit.schema)


def test_catalog_does_not_recognise_a_prompt_one_character_off():
    pytest.importorskip("mlflow")
    text = _grounded_prompt(*CASES[0]).replace("Do not focus", "Do not focuss", 1)
    assert Catalog.builtin().match([Message(role="user", content=text)]) is None


def test_intersection_that_cannot_be_made_keeps_the_client_schema_and_says_why():
    client = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
    contract = {"type": "object", "properties": {"result": {"type": "string", "enum": ["yes", "no"]}}}
    merged, why = intersect(client, contract)
    assert merged is None and "result" in why


def test_intersection_never_widens_client_enum_or_bounds():
    client = {
        "type": "object",
        "properties": {"result": {"type": "string", "enum": ["no", "maybe"]}, "score": {"type": "number", "minimum": 2}},
    }
    contract = {
        "type": "object",
        "properties": {"result": {"enum": ["yes", "no"]}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
    }
    merged, _ = intersect(client, contract)
    assert merged is not None
    assert merged["properties"]["result"]["enum"] == ["no"]
    assert merged["properties"]["score"] == {"type": "integer", "minimum": 2, "maximum": 5}


# ------------------------------------------------------------------------------------- real server


@pytest.fixture(scope="module")
def one_thread_server(_localjudge_home):
    from serve_support import start_server

    server = start_server("--threads", "1", "--compile-timeout", "60")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def one_thread_app(_localjudge_home):
    """`one_thread_server`'s app in this process (the same flags)."""
    from serve_support import serve_inprocess

    with serve_inprocess("--threads", "1", "--compile-timeout", "60") as app:
        yield app


@pytest.mark.system
@pytest.mark.slow
def test_mlflow_is_grounded_correctness_and_make_judge_usable_on_every_rag_case(one_thread_server, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("OPENAI_API_BASE", one_thread_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    from mlflow.genai.judges import is_correct, is_grounded, make_judge

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    model = f"openai:/{one_thread_server.model}"
    concise = make_judge(
        name="concise",
        instructions="Is the answer in {{ outputs }} a concise reply to the question in {{ inputs }}? Answer yes or no.",
        model=model,
        feedback_value_type=Literal["yes", "no"],
    )
    for q, a, ctx in CASES:
        verdicts = {
            "is_grounded": is_grounded(request=q, response=a, context=ctx, model=model),
            "is_correct": is_correct(request=q, response=a, expected_response=ctx, model=model),
            "make_judge": concise(inputs={"question": q}, outputs=a),
        }
        for name, fb in verdicts.items():
            assert fb.error is None, (name, fb.error)
            assert str(getattr(fb.value, "value", fb.value)) in ("yes", "no"), (name, q, fb.value)


@pytest.mark.system
@pytest.mark.slow
def test_catalog_prompt_answer_names_the_contract_and_a_one_character_change_is_not_tightened(one_thread_app):
    pytest.importorskip("mlflow")
    from serve_support import post

    status, body, headers = post(one_thread_app, _body(_grounded_prompt(*CASES[1]), one_thread_app.model))
    assert status == 200, body
    label = headers["x-localjudge-contract"]
    assert "groundedness@" in label and body["system_fingerprint"].endswith("+" + label)
    assert json.loads(body["choices"][0]["message"]["content"])["result"] in ("yes", "no")

    off = _grounded_prompt(*CASES[1]).replace("claim and document", "claim and documents", 1)
    status, body, headers = post(one_thread_app, _body(off, one_thread_app.model))
    assert status == 200, body
    assert "x-localjudge-contract" not in headers and "+" not in body["system_fingerprint"]
    jsonschema.validate(json.loads(body["choices"][0]["message"]["content"]), MLFLOW_SCHEMA)


@pytest.mark.system
@pytest.mark.slow
def test_no_catalog_formats_answers_under_the_client_schema_only(_localjudge_home):
    pytest.importorskip("mlflow")
    from serve_support import post, serve_inprocess

    with serve_inprocess("--threads", "1", "--no-catalog-formats", "--no-precompile") as app:
        status, body, headers = post(app, _body(_grounded_prompt(*CASES[1]), app.model))
    assert status == 200, body
    assert "x-localjudge-contract" not in headers and "+" not in body["system_fingerprint"]
    jsonschema.validate(json.loads(body["choices"][0]["message"]["content"]), MLFLOW_SCHEMA)


def test_docs_serve_lists_exactly_the_catalog():
    from pathlib import Path

    from localjudge.serve.core.catalog import markdown_table

    page = (Path(__file__).resolve().parents[1] / "docs" / "serve.md").read_text("utf-8")
    assert markdown_table(Catalog.builtin()) in page


def test_free_text_request_with_a_catalog_prompt_gets_the_judge_contract():
    pytest.importorskip("mlflow")
    hit = Catalog.builtin().tighten([Message(role="user", content=_grounded_prompt(*CASES[2]))], None)
    assert hit is not None and hit.schema is not None
    assert hit.schema["properties"]["result"]["enum"] == ["yes", "no"] and "not applied" not in hit.header
