"""Ollama's API on `localjudge serve`'s app (default model, one thread; the app the CLI builds, in this process:
tests/serve_support.py `serve_inprocess`, each client's own httpx client on the app's transport): the official `ollama`
client on /api/chat and /api/generate (streamed and not) with a schema `format`, LangChain's `ChatOllama`,
DeepEval's `OllamaModel` on a real metric, LiteLLM's `ollama_chat/`; the model routes; every bad input a
400 in Ollama's shape `{"error": "..."}`; docs/serve.md's snippet, run verbatim but for the URL, against the real
`judge_server`. schemathesis fuzzes the /api/ routes on the app in process (test_serve_schemathesis.py)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from serve_support import get, post, serve_inprocess

pytestmark = pytest.mark.system

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["yes", "no"]}, "reason": {"type": "string", "maxLength": 60}},
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
ASK = "Is Paris the capital of France? Answer in JSON with a verdict (yes or no) and a short reason."


@pytest.fixture(scope="module")
def ollama_app(_localjudge_home):
    """The app a server with one thread serving the default model builds, in this process, addressed from its root."""
    with serve_inprocess("--option", "n_threads=1", "--compile-timeout", "20", "--field-tokens", "24") as app:
        yield app.host


def _client(server):
    import ollama

    return ollama.Client(host=server.url, transport=server.transport)


def test_the_ollama_client_chats_under_a_schema_format_streamed_and_not(ollama_app):
    c = _client(ollama_app)
    r = c.chat(model=ollama_app.model, messages=[{"role": "user", "content": ASK}], format=VERDICT, stream=False)
    assert r.done and r.message.role == "assistant" and r.done_reason in ("stop", "length")
    jsonschema.validate(json.loads(r.message.content), VERDICT)
    assert r.eval_count and r.prompt_eval_count
    parts = list(c.chat(model=ollama_app.model, messages=[{"role": "user", "content": ASK}], format=VERDICT, stream=True))
    assert len(parts) > 1 and parts[-1].done and not any(p.done for p in parts[:-1])
    text = "".join(p.message.content or "" for p in parts)
    jsonschema.validate(json.loads(text), VERDICT)
    assert text == r.message.content  # greedy: streamed and whole answers are the same text


def test_the_ollama_client_generates_under_a_schema_format_streamed_and_not(ollama_app):
    c = _client(ollama_app)
    r = c.generate(model=ollama_app.model, prompt=ASK, format=VERDICT, stream=False, options={"seed": 3, "temperature": 0})
    jsonschema.validate(json.loads(r.response), VERDICT)
    parts = list(c.generate(model=ollama_app.model, prompt=ASK, format=VERDICT, stream=True))
    assert parts[-1].done and parts[-1].done_reason in ("stop", "length")
    jsonschema.validate(json.loads("".join(p.response for p in parts)), VERDICT)


def test_format_json_is_any_json_object_and_num_predict_and_stop_bound_free_text(ollama_app):
    c = _client(ollama_app)
    r = c.chat(model=ollama_app.model, messages=[{"role": "user", "content": ASK}], format="json", stream=False)
    assert isinstance(json.loads(r.message.content), dict)
    r = c.generate(model=ollama_app.model, prompt="Count from one to twenty in words.", options={"num_predict": 5}, stream=False)
    assert r.eval_count <= 5 and r.done_reason == "length"
    r = c.generate(
        model=ollama_app.model, prompt="Count from one to twenty in words, separated by commas.", options={"stop": [","]}
    )
    assert "," not in r.response


def test_think_streams_the_thinking_apart_from_a_valid_answer(ollama_app):
    c = _client(ollama_app)
    r = c.chat(model=ollama_app.model, messages=[{"role": "user", "content": ASK}], format=VERDICT, think=True, stream=False)
    jsonschema.validate(json.loads(r.message.content), VERDICT)
    assert r.message.thinking is not None and "<think>" not in r.message.content
    parts = list(
        c.chat(model=ollama_app.model, messages=[{"role": "user", "content": ASK}], format=VERDICT, think=True, stream=True)
    )
    assert "".join(p.message.thinking or "" for p in parts) == r.message.thinking
    assert "".join(p.message.content or "" for p in parts) == r.message.content


def test_model_routes_name_the_served_model(ollama_app):
    c = _client(ollama_app)
    assert [m.model for m in c.list().models] == [ollama_app.model]
    assert [m.model for m in c.ps().models] == [ollama_app.model]
    shown = c.show(ollama_app.model)
    assert "completion" in shown.capabilities
    s, body = get(ollama_app, "/api/version")
    assert s == 200 and body["version"]


BAD = [
    ({"options": {"mirostat": 2}}, "options.mirostat"),
    ({"options": {"temperature": "hot"}}, "temperature"),
    ({"options": {"num_ctx": 10**9}}, "options.num_ctx"),
    ({"options": "fast"}, "options"),
    ({"format": "yaml"}, "format"),
    ({"format": {"type": 12}}, "format"),
    ({"stream": "yes"}, "stream"),
    ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
    ({"think": "very"}, "think"),
    ({"tools": [{"type": "function"}]}, "tools"),
]


@pytest.mark.parametrize(("extra", "names"), BAD, ids=[b[1] for b in BAD])
def test_bad_input_is_a_400_in_ollamas_shape_naming_the_field(ollama_app, extra, names):
    body = {"model": ollama_app.model, "messages": [{"role": "user", "content": "hi"}], "stream": False, **extra}
    s, out, _ = post(ollama_app, body, path="/api/chat")
    assert s == 400, out
    assert list(out) == ["error"] and isinstance(out["error"], str) and "\n" not in out["error"]
    assert names in out["error"]


def test_an_unknown_model_is_a_404_and_a_non_json_post_a_415_in_ollamas_shape(ollama_app):
    s, out, _ = post(ollama_app, {"model": "llama3", "prompt": "hi"}, path="/api/generate")
    assert s == 404 and "llama3" in out["error"]
    s, out, _ = post(ollama_app, "x", headers={"Content-Type": "text/plain"}, path="/api/chat")
    assert s == 415 and isinstance(out["error"], str)
    import ollama

    with pytest.raises(ollama.ResponseError) as e:
        _client(ollama_app).chat(model=ollama_app.model, messages=[{"role": "user", "content": "hi"}], options={"mirostat": 1})
    assert e.value.status_code == 400 and "options.mirostat" in e.value.error


# ------------------------------------------------------------------------------------------ clients

RAG = [
    ("What is the capital of France?", "Paris is the capital of France.", ["Paris is the capital and largest city of France."]),
    ("Who wrote Hamlet?", "Hamlet was written by William Shakespeare.", ["Hamlet is a tragedy written by William Shakespeare."]),
    (
        "What is water made of?",
        "Water is made of hydrogen and oxygen.",
        ["A water molecule has two hydrogen atoms and one oxygen atom."],
    ),
    ("When did the Berlin Wall fall?", "The Berlin Wall fell in 1989.", ["The Berlin Wall fell on 9 November 1989."]),
    ("What is the largest planet?", "Jupiter is the largest planet.", ["Jupiter is the largest planet in the Solar System."]),
]


def test_langchain_chat_ollama_structured_output_parses(ollama_app):
    from langchain_ollama import ChatOllama
    from pydantic import BaseModel, Field

    class Grade(BaseModel):
        verdict: bool = Field(description="whether the answer is supported by the context")
        reason: str = Field(max_length=60)

    llm = ChatOllama(
        model=ollama_app.model,
        base_url=ollama_app.url,
        temperature=0,
        num_predict=120,
        sync_client_kwargs={"transport": ollama_app.transport},
        async_client_kwargs={"transport": ollama_app.async_transport},
    )
    out = llm.with_structured_output(Grade).invoke(f"Context: {RAG[0][2][0]}\nAnswer: {RAG[0][1]}\nIs the answer supported?")
    assert isinstance(out, Grade)
    assert llm.invoke("Say hi.").content  # plain text too


@pytest.mark.slow
def test_deepeval_ollama_model_runs_a_real_metric_on_five_rag_cases(ollama_app, tmp_path, monkeypatch):
    pytest.importorskip("deepeval")
    monkeypatch.chdir(tmp_path)
    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import OllamaModel
    from deepeval.test_case import LLMTestCase

    llm = OllamaModel(model=ollama_app.model, base_url=ollama_app.url, temperature=0, transport=ollama_app.transport)
    scores = []
    for q, a, ctx in RAG:
        metric = FaithfulnessMetric(model=llm, async_mode=False, include_reason=False)
        metric.measure(LLMTestCase(input=q, actual_output=a, retrieval_context=ctx))  # a parse failure raises
        assert metric.error is None
        scores.append(metric.score)
    assert all(0 <= s <= 1 for s in scores)


def test_litellm_ollama_chat_one_call_without_a_content_type_parses(ollama_app):
    import httpx
    import litellm
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    r = litellm.completion(
        model=f"ollama_chat/{ollama_app.model}",
        api_base=ollama_app.url,
        client=HTTPHandler(client=httpx.Client(transport=ollama_app.transport)),
        messages=[{"role": "user", "content": ASK}],
        response_format={"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT}},
        max_tokens=80,
    )
    jsonschema.validate(json.loads(r.choices[0].message.content), VERDICT)


def test_litellm_async_ollama_chat_call_sent_as_octet_stream_parses(ollama_app):
    """LiteLLM's async `ollama_chat/` calls (RAGAS through LiteLLM uses them) send the JSON body as
    application/octet-stream, which Ollama reads as JSON; serve answered 415 before."""
    import asyncio

    import litellm
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    handler = AsyncHTTPHandler()
    handler.client = ollama_app.async_client(timeout=600, follow_redirects=True)  # LiteLLM's own client, on the app

    async def call():
        return await litellm.acompletion(
            model=f"ollama_chat/{ollama_app.model}",
            api_base=ollama_app.url,
            client=handler,
            messages=[{"role": "user", "content": ASK}],
            response_format={"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT}},
            max_tokens=80,
        )

    r = asyncio.run(call())
    jsonschema.validate(json.loads(r.choices[0].message.content), VERDICT)


def test_a_json_body_sent_as_octet_stream_is_read_on_ollama_routes_only(ollama_app):
    octet = {"Content-Type": "application/octet-stream"}
    body = json.dumps({"model": ollama_app.model, "prompt": "Say hi.", "stream": False, "options": {"num_predict": 4}})
    r = ollama_app.client.post("/api/generate", content=body.encode(), headers=octet)
    assert r.status_code == 200 and "response" in json.loads(r.content)
    chat = json.dumps({"model": ollama_app.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    r = ollama_app.client.post("/v1/chat/completions", content=chat.encode(), headers=octet)
    assert r.status_code == 415  # the OpenAI routes keep asking for application/json


def test_the_docs_ollama_snippet_runs_against_a_real_server(judge_server, capsys):
    from docs_snippets import section_snippets

    (code,) = section_snippets("docs/serve.md", "Ollama API")
    host = judge_server.url.removesuffix("/v1")  # the snippet's client is given a URL: a real server
    exec(compile(code.replace("http://127.0.0.1:8000", host), "docs/serve.md", "exec"), {})  # noqa: S102
    import ast

    assert ast.literal_eval(capsys.readouterr().out)["verdict"] in ("yes", "no")


def test_the_openapi_document_lists_the_ollama_routes_with_ollamas_error_body(ollama_app):
    s, doc = get(ollama_app, "/openapi.json")
    assert s == 200
    for path, method in [("/api/chat", "post"), ("/api/generate", "post"), ("/api/tags", "get"), ("/api/show", "post")]:
        op = doc["paths"][path][method]
        assert op["responses"]["400"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/OllamaError"}
    assert "application/x-ndjson" in doc["paths"]["/api/chat"]["post"]["responses"]["200"]["content"]


def test_the_key_and_the_body_limit_apply_to_the_ollama_routes_in_ollamas_shape(ollama_app, keyed_app):
    import ollama

    keyed_host = keyed_app.host
    body = {"model": keyed_app.model, "messages": [{"role": "user", "content": "hi"}], "stream": False}
    s, out, _ = post(keyed_host, body, path="/api/chat")
    assert s == 401 and "API key" in out["error"]
    s, _ = get(keyed_host, "/api/tags")
    assert s == 401
    keyed = ollama.Client(host=keyed_host.url, headers={"Authorization": "Bearer s3cret-key"}, transport=keyed_host.transport)
    assert [m.model for m in keyed.list().models] == [keyed_app.model]
    huge = {"model": ollama_app.model, "prompt": "x" * (5 << 20), "stream": False}
    s, out, _ = post(ollama_app, huge, path="/api/generate")
    assert s == 413 and isinstance(out["error"], str)
