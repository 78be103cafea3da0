"""The OpenAPI 3.1 document of the endpoints the server implements (`GET /openapi.json`).

Written by hand from `protocol.ChatRequest` and the answers `app` gives, so that it says what the
server does rather than what the OpenAI API allows: every status a route can answer (400 bad input,
401 key, 404 model, 408 slow body, 413 body size, 415 content type, 429 busy, 503 shutting down or too
many connections) with the OpenAI error body. tests/test_hostile_serve.py fuzzes the server from it
with schemathesis and checks every answer against it.
"""

from __future__ import annotations

from typing import Any

from .protocol import MAX_MESSAGES, MAX_STOP, MAX_TOOLS

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"enum": ["system", "developer", "user", "assistant", "tool", "function"]},
        "content": {
            "anyOf": [
                {"type": "string"},
                {"type": "null"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"type": {"type": "string"}, "text": {"type": "string"}},
                    },
                },
            ]
        },
        "name": {"type": ["string", "null"]},
        "tool_call_id": {"type": ["string", "null"]},
    },
}
_TOOL = {
    "type": "object",
    "required": ["type", "function"],
    "properties": {
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"},
                "description": {"type": ["string", "null"]},
                "parameters": {"type": ["object", "null"]},
            },
        },
    },
}
_CHAT_REQUEST = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "messages": {"type": "array", "minItems": 1, "maxItems": MAX_MESSAGES, "items": _MESSAGE},
        "max_tokens": {"type": ["integer", "null"], "minimum": 1},
        "max_completion_tokens": {"type": ["integer", "null"], "minimum": 1},
        "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
        "top_p": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "seed": {"type": ["integer", "null"]},
        "stop": {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "string"}, "maxItems": MAX_STOP},
                {"type": "null"},
            ]
        },
        "n": {"type": ["integer", "null"], "minimum": 1},
        "stream": {"type": ["boolean", "null"]},
        "logprobs": {"type": ["boolean", "null"]},
        "top_logprobs": {"type": ["integer", "null"], "minimum": 0, "maximum": 20},
        "response_format": {"type": ["object", "null"]},
        "tools": {"type": ["array", "null"], "maxItems": MAX_TOOLS, "items": _TOOL},
        "tool_choice": {"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]},
    },
}
_COMPLETION = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices", "usage"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "system_fingerprint": {"type": "string"},
        "choices": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["index", "message", "finish_reason"],
                "properties": {
                    "index": {"type": "integer"},
                    "message": {"type": "object", "required": ["role"]},
                    "finish_reason": {"enum": ["stop", "length", "tool_calls"]},
                },
            },
        },
        "usage": {"type": "object", "required": ["prompt_tokens", "completion_tokens", "total_tokens"]},
    },
}
_MODEL = {"type": "object", "required": ["id", "object", "owned_by"], "properties": {"id": {"type": "string"}}}
_HEALTH = {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}


def _json(schema: dict[str, Any], what: str) -> dict[str, Any]:
    return {"description": what, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    words = {
        400: "bad input (names the parameter)",
        401: "missing or wrong API key",
        404: "no such model",
        408: "the body did not arrive in time",
        413: "the body is too large",
        415: "the body is not application/json",
        429: "busy: retry after Retry-After seconds",
        503: "shutting down, or too many connections",
    }
    return {str(s): _json({"$ref": "#/components/schemas/Error"}, words[s]) for s in statuses}


def document(model_name: str, version: str) -> dict[str, Any]:
    """The OpenAPI document of a server serving `model_name`."""
    common = (400, 503)  # Host check (400) and connection limit (503) apply to every route
    chat = {
        "post": {
            "operationId": "createChatCompletion",
            "summary": "A chat completion: free text, JSON schema (response_format) or a tool call",
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"$ref": "#/components/schemas/ChatRequest"},
                        "example": {"model": model_name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2},
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "the completion (JSON), or server-sent events when stream is true",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletion"}},
                        "text/event-stream": {"schema": {"type": "string"}},
                    },
                },
                **_errors(*common, 401, 404, 408, 413, 415, 429),
            },
        }
    }
    models = {
        "get": {
            "operationId": "listModels",
            "responses": {
                "200": _json(
                    {"type": "object", "required": ["data"], "properties": {"data": {"type": "array", "items": _MODEL}}},
                    "the served model",
                ),
                **_errors(*common, 401),
            },
        }
    }
    model = {
        "get": {
            "operationId": "retrieveModel",
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": _json(_MODEL, "the served model"), **_errors(*common, 401, 404)},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "localjudge serve", "version": version, "description": f"Serving {model_name}"},
        "paths": {
            "/health": {
                "get": {
                    "operationId": "health",
                    "responses": {"200": _json(_HEALTH, "liveness (counters too, with the key)"), **_errors(*common)},
                }
            },
            "/v1/models": models,
            "/v1/models/{name}": model,
            "/v1/chat/completions": chat,
        },
        "components": {
            "schemas": {
                "Error": _ERROR,
                "ChatRequest": _CHAT_REQUEST,
                "ChatCompletion": _COMPLETION,
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
