"""The catalog contracts and the model aliases on every generation route (serve/core/generate.py): MLflow's
`is_grounded` prompt sent through the `ollama` client's chat (a free-string schema format) and through
`openai`'s `responses.create` (a json_schema text.format) is answered "yes"|"no" under the groundedness
contract, named by `X-Localjudge-Contract`; an alias of `serve --alias` is a served name on `/api/chat`,
`/api/generate` and `/v1/responses`, constraining a request that sends no format; `--no-catalog-formats`
turns the contracts off there too. The app `localjudge serve` builds (the default model, one thread), in this process
(tests/serve_support.py `serve_inprocess`; the clients' httpx transport on it), real clients."""

from __future__ import annotations

import json

import jsonschema
import pytest
from test_serve_catalog import CASES, MLFLOW_SCHEMA, _grounded_prompt

ALIAS = "grader"


@pytest.fixture(scope="module")
def server(_localjudge_home):
    """The served app, in this process."""
    from serve_support import serve_inprocess

    args = ("--threads", "1", "--compile-timeout", "60", "--alias", f"{ALIAS}=smollm2-135m", "--format", "yes_no_json")
    with serve_inprocess(*args) as app:
        yield app


def _ollama_body(prompt: str, model: str, fmt: dict | None = None) -> dict:
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "stream": False, "options": {"num_predict": 96}}
    return {**body, "format": fmt} if fmt is not None else body


def _responses_text() -> dict:
    return {"format": {"type": "json_schema", "name": "JudgeEvaluation", "schema": MLFLOW_SCHEMA, "strict": True}}


@pytest.mark.system
@pytest.mark.slow
def test_ollama_chat_with_mlflow_is_grounded_and_a_free_string_format_gets_yes_no_and_the_contract(server):
    pytest.importorskip("mlflow")
    import ollama
    from serve_support import post

    prompt = _grounded_prompt(*CASES[1])
    r = ollama.Client(host=server.host.url, transport=server.transport).chat(
        model=server.model, messages=[{"role": "user", "content": prompt}], format=MLFLOW_SCHEMA, options={"num_predict": 96}
    )
    assert json.loads(r.message.content)["result"] in ("yes", "no")
    status, body, headers = post(server.host, _ollama_body(prompt, server.model, MLFLOW_SCHEMA), path="/api/chat")
    assert status == 200, body
    assert "groundedness@" in headers["x-localjudge-contract"]
    jsonschema.validate(json.loads(body["message"]["content"]), MLFLOW_SCHEMA)


@pytest.mark.system
@pytest.mark.slow
def test_openai_responses_create_with_mlflow_is_grounded_gets_yes_no_and_the_contract(server):
    pytest.importorskip("mlflow")
    import openai

    client = openai.OpenAI(base_url=server.url, api_key="unused", timeout=600, max_retries=0, http_client=server.client)
    raw = client.responses.with_raw_response.create(
        model=server.model, input=_grounded_prompt(*CASES[4]), text=_responses_text(), max_output_tokens=96
    )
    assert "groundedness@" in raw.headers["x-localjudge-contract"]
    assert json.loads(raw.parse().output_text)["result"] in ("yes", "no")


@pytest.mark.system
@pytest.mark.slow
def test_an_alias_is_served_and_constrains_ollama_chat_generate_and_responses(server):
    import ollama
    import openai

    ask = "Is the sky blue? Answer yes or no."
    c = ollama.Client(host=server.host.url, transport=server.transport)
    chat = c.chat(model=ALIAS, messages=[{"role": "user", "content": ask}])
    gen = c.generate(model=f"{ALIAS}:latest", prompt=ask)
    resp = openai.OpenAI(
        base_url=server.url, api_key="unused", timeout=600, max_retries=0, http_client=server.client
    ).responses.create(model=ALIAS, input=ask)
    from localjudge.formats import make_format

    for text in (chat.message.content, gen.response, resp.output_text):
        jsonschema.validate(json.loads(text), make_format("yes_no_json").json_schema())


@pytest.mark.system
@pytest.mark.slow
def test_no_catalog_formats_leaves_ollama_and_responses_under_the_clients_schema(_localjudge_home):
    pytest.importorskip("mlflow")
    from serve_support import post, serve_inprocess

    with serve_inprocess("--threads", "1", "--no-catalog-formats", "--no-precompile") as s:
        host = s.host
        prompt = _grounded_prompt(*CASES[1])
        status, body, headers = post(host, _ollama_body(prompt, s.model, MLFLOW_SCHEMA), path="/api/chat")
        body_r = {"model": s.model, "input": prompt, "text": _responses_text(), "max_output_tokens": 96}
        status_r, _, headers_r = post(s, body_r, path="/responses")
    assert status == 200 and status_r == 200, body
    assert "x-localjudge-contract" not in headers and "x-localjudge-contract" not in headers_r
    jsonschema.validate(json.loads(body["message"]["content"]), MLFLOW_SCHEMA)


def test_ollama_names_an_alias_and_its_latest_tag_and_refuses_others_in_its_own_words():
    from types import SimpleNamespace

    from localjudge.serve.core.errors import APIError
    from localjudge.serve.core.generate import CHAT, OLLAMA, check_model

    state = SimpleNamespace(model_name="m", config=SimpleNamespace(aliases={ALIAS: object()}))
    assert check_model(state, f"{ALIAS}:latest", OLLAMA) == ALIAS and check_model(state, "m:latest", OLLAMA) == "m"
    assert check_model(state, ALIAS, CHAT) == ALIAS
    with pytest.raises(APIError) as e:
        check_model(state, "other", OLLAMA)
    assert e.value.status == 404 and e.value.message == "model 'other' not found; this server serves 'm'"
    with pytest.raises(APIError):
        check_model(state, f"{ALIAS}:latest", CHAT)  # only Ollama's names carry a tag
