"""The OpenAPI 3.1 document of the endpoints the server implements (`GET /openapi.json`), generated from
the table of endpoints (`routes.ENDPOINTS`) and their `wire` models, so that it says what the server does
rather than what the OpenAI API allows: each body's schema is its model's, and every status a route can
answer (400 bad input, 401 key, 404 model, 408 slow body, 413 body size, 415 content type, 429 busy, 503
shutting down or too many connections) comes with the OpenAI error body. tests/test_hostile_serve.py fuzzes
the server from it with schemathesis and checks every answer against it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .core.wire import ErrorBody

COMMON = (400, 503)  # the Host check (400) and the connection limit (503) apply to every route
ERRORS = {
    400: "bad input (names the parameter)",
    401: "missing or wrong API key",
    404: "no such model",
    408: "the body did not arrive in time",
    413: "the body is too large",
    415: "the body is not application/json",
    429: "busy: retry after Retry-After seconds",
    503: "shutting down, or too many connections",
}
REF = "#/components/schemas/{model}"
example_messages = [{"role": "user", "content": "Hi"}]


@dataclass(frozen=True)
class Endpoint:
    """One documented route: its handler `(state, request) -> Response`, the model of its 200 body, the
    statuses of its errors, the model of its request body (if any) and of its streamed chunks (if it streams)."""

    method: Literal["GET", "POST"]
    path: str  # OpenAPI's template: a parameter as {name}, one path segment
    handler: Callable[..., Any]
    operation_id: str
    summary: str  # what the 200 answer is
    answer: type[BaseModel]
    errors: tuple[int, ...]
    request: type[BaseModel] | None = None
    stream: type[BaseModel] | None = None  # the chunk of `text/event-stream` answers (the request's `stream`)
    path_param: str | None = None  # a {name} in `path` that may hold slashes (a model name)
    aliases: tuple[str, ...] = ()  # the same route without /v1 (clients that add it themselves)
    error: type[BaseModel] = ErrorBody  # the body of its errors (Ollama's routes: `{"error": "..."}`)
    ndjson: bool = False  # streams NDJSON lines of `answer` (Ollama) rather than SSE chunks of `stream`

    def route(self, path: str) -> str:
        """Starlette's template of `path`: a path parameter may span segments."""
        return path.replace(f"{{{self.path_param}}}", f"{{{self.path_param}:path}}") if self.path_param else path


def schemas(endpoints: Iterable[Endpoint]) -> tuple[dict[Any, Any], dict[str, Any]]:
    """The `$ref` of each model the endpoints use, and the component schemas they point to."""
    models: list[type[BaseModel]] = [ErrorBody]
    for e in endpoints:
        models += [m for m in (e.answer, e.request, e.stream, e.error) if m is not None and m not in models]
    refs, defs = models_json_schema([(m, "validation") for m in models], ref_template=REF)
    return refs, defs.get("$defs", {})


def _json(ref: dict[str, Any], what: str) -> dict[str, Any]:
    return {"description": what, "content": {"application/json": {"schema": ref}}}


def _operation(e: Endpoint, refs: dict[Any, Any], model_name: str) -> dict[str, Any]:
    ok = _json(refs[e.answer, "validation"], e.summary)
    if e.stream is not None:
        ok["description"] += "; server-sent events of chunks when stream is true"
        ok["content"]["text/event-stream"] = {
            "schema": {"type": "string", "description": f"`data: <{e.stream.__name__}>` events, then `data: [DONE]`"}
        }
    if e.ndjson:
        ok["content"]["application/x-ndjson"] = {
            "schema": {"type": "string", "description": f"one <{e.answer.__name__}> per line, the last with done true"}
        }
    op: dict[str, Any] = {"operationId": e.operation_id, "summary": e.summary}
    if e.path_param:
        op["parameters"] = [{"name": e.path_param, "in": "path", "required": True, "schema": {"type": "string"}}]
    if e.request is not None:
        example: dict[str, Any] = {"model": model_name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
        if e.ndjson:
            example = {"model": model_name, "stream": False, "options": {"num_predict": 2}}
            example.update({"messages": example_messages} if "messages" in e.request.model_fields else {"prompt": "Hi"})
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": refs[e.request, "validation"], "example": example}},
        }
    error = refs[e.error, "validation"]
    # the connection limit answers before any route: the OpenAI shape on every path
    busy = error if e.error is ErrorBody else {"anyOf": [error, refs[ErrorBody, "validation"]]}
    op["responses"] = {"200": ok, **{str(s): _json(busy if s == 503 else error, ERRORS[s]) for s in e.errors}}
    return op


def document(endpoints: Iterable[Endpoint], model_name: str, version: str) -> dict[str, Any]:
    """The OpenAPI document of `endpoints` on a server serving `model_name`."""
    endpoints = list(endpoints)
    refs, components = schemas(endpoints)
    paths: dict[str, dict[str, Any]] = {}
    for e in endpoints:
        paths.setdefault(e.path, {})[e.method.lower()] = _operation(e, refs, model_name)
    return {
        "openapi": "3.1.0",
        "info": {"title": "localjudge serve", "version": version, "description": f"Serving {model_name}"},
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
