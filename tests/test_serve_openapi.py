"""serve's OpenAPI document is generated from its endpoint table and typed bodies: every answer the server
gives validates against the schema the document names for it, and one table entry adds a documented route."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.responses import JSONResponse

GOLDEN = Path(__file__).parent / "golden" / "serve"
INDEX = json.loads((GOLDEN / "index.json").read_text())
PATHS = {"models": "/v1/models", "scripted_models": "/v1/models", "model": "/v1/models/{name}", "health": "/health"}  # else: chat


def _doc():
    from localjudge.serve.openapi import document
    from localjudge.serve.routes import ENDPOINTS

    return document(ENDPOINTS, "smollm2-135m", "0")


def _check(doc, schema, value):
    from jsonschema import Draft202012Validator

    full = {**schema, "components": doc["components"]}
    Draft202012Validator(full).validate(value)


def _schema_of(doc, path, method, status):
    content = doc["paths"][path][method]["responses"][str(status)]["content"]
    return content["application/json"]["schema"]


@pytest.mark.parametrize("name", sorted(INDEX))
def test_every_golden_answer_conforms_to_the_documented_schema(name):
    doc = _doc()
    meta = INDEX[name]
    if meta["content_type"].startswith("text/event-stream"):
        chunks = [
            line[len("data: ") :] for line in (GOLDEN / f"{name}.sse").read_text().splitlines() if line.startswith("data: ")
        ]
        assert chunks[-1] == "[DONE]"
        for c in chunks[:-1]:  # each chunk is the documented chunk model
            _check(doc, {"$ref": "#/components/schemas/ChatCompletionChunk"}, json.loads(c))
        return
    body = json.loads((GOLDEN / f"{name}.json").read_text())
    if meta["status"] != 200:  # every error, routed or not, has the one error body
        _check(doc, {"$ref": "#/components/schemas/ErrorBody"}, body)
        return
    path, method = (PATHS[name], "get") if name in PATHS else ("/v1/chat/completions", "post")
    _check(doc, _schema_of(doc, path, method, 200), body)


def test_the_document_requires_what_every_answer_always_sends():
    doc = _doc()["components"]["schemas"]
    assert doc["AssistantMessage"]["required"] == ["role", "content", "refusal"]  # reasoning_content, tool_calls: only when given
    assert doc["ChatCompletionChunk"]["required"] == ["id", "object", "created", "model", "system_fingerprint", "choices"]
    assert doc["ErrorDetail"]["required"] == ["message", "type", "param", "code"]


def test_one_table_entry_adds_a_routed_and_documented_endpoint(monkeypatch):
    """The seam issue 32 adds routes on: an `Endpoint` with its handler and `wire` models is served by
    create_app and described by the document, its models' schemas included."""
    from starlette.testclient import TestClient

    from localjudge.engine import load_engine
    from localjudge.serve import routes
    from localjudge.serve.app import ServeConfig, ServerState, create_app
    from localjudge.serve.core.wire import Wire
    from localjudge.serve.openapi import COMMON, Endpoint, document

    class Version(Wire):
        """What an added endpoint answers."""

        version: str

    async def version(state, request):
        return JSONResponse(Version(version="1").body())

    extra = Endpoint("GET", "/v1/version", version, "version", "the version", Version, COMMON)
    doc = document((*routes.ENDPOINTS, extra), "m", "0")
    assert doc["paths"]["/v1/version"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Version"
    }
    assert doc["components"]["schemas"]["Version"]["required"] == ["version"]
    assert set(doc["paths"]["/v1/version"]["get"]["responses"]) == {"200", "400", "503"}
    monkeypatch.setattr(routes, "ENDPOINTS", (*routes.ENDPOINTS, extra))
    with TestClient(
        create_app(
            ServerState(load_engine("scripted:", response="x"), ServeConfig(allowed_hosts=("testserver",), precompile=False))
        )
    ) as client:
        assert client.get("/v1/version").json() == {"version": "1"}
        assert "/v1/version" in client.get("/openapi.json").json()["paths"]
