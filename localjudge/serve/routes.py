"""serve's endpoints: each a handler `(state, request) -> Response` with the typed bodies it reads and
writes, listed once in `ENDPOINTS`. `app.create_app` routes the table and `openapi.document` describes it,
so adding an endpoint is one entry here (its handler, its `wire` models, its error statuses).

The handlers of the three doors live with their door (chat/route.py, responses/route.py, ollama/); the models'
and health's are here. A handler answers an `APIError` as its OpenAI-shaped body; the doors map localjudge's own
exceptions too (`errors.from_exception`) and answer a bug 500 with its traceback logged.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from .chat.route import chat
from .core.errors import APIError
from .core.handling import answer, check_key, error
from .core.wire import ChatCompletion, ChatCompletionChunk, ChatRequest, Health, ModelCard, ModelList, ServedBy
from .openapi import COMMON, Endpoint
from .responses.route import create_response
from .responses.wire import Response as Response_
from .responses.wire import ResponseEvent, ResponsesRequest

if TYPE_CHECKING:
    from .core.state import ServerState

log = logging.getLogger("localjudge.serve")


# ---------------------------------------------------------------------------------------- handlers


async def health(state: ServerState, request: Request) -> Response:
    """Liveness; the counters too, unless the server has a key and the request lacks it."""
    if state.config.api_key is not None:
        try:
            check_key(state, request)
        except APIError:  # without the key: liveness only
            return answer(Health())
    c = state.counters
    return answer(
        Health(
            model=state.model_name,
            in_flight=state.worker.pending,
            completed=c.completed,
            cancelled=c.cancelled,
            refused_busy=c.refused_busy,
            errors=c.errors,
            schemas_compiled=state.formats.compiled,
            compiles_waiting=state.formats.waiting,
            uptime_s=round(time.time() - c.started, 1),
        )
    )


def model_card(state: ServerState) -> ModelCard:
    """The served model, with what exactly is served (version, backend, digest, settings, context)."""
    from .. import __version__

    ident = state.identity
    served = ServedBy(
        version=__version__,
        backend=ident.backend,
        model_id=ident.model_id,
        digest=ident.digest,
        settings=ident.settings,
        n_ctx=state.engine.n_ctx,
    )
    return ModelCard(id=state.model_name, created=int(state.counters.started), owned_by="localjudge", localjudge=served)


async def models(state: ServerState, request: Request) -> Response:
    """The served model, then its aliases (`serve --alias`), as a list."""
    try:
        check_key(state, request)
    except APIError as e:
        return error(e)
    card = model_card(state)
    return answer(ModelList(data=[card, *(card.model_copy(update={"id": a}) for a in state.config.aliases)]))


async def model(state: ServerState, request: Request) -> Response:
    """The served model by name (404 for any other name)."""
    try:
        check_key(state, request)
        name = request.path_params["name"]
        if name != state.model_name and name not in state.config.aliases:
            raise APIError(
                404, f"the model {name!r} does not exist; this server serves {state.model_name!r}", code="model_not_found"
            )
    except APIError as e:
        return error(e)
    card = model_card(state)
    return answer(card if name == state.model_name else card.model_copy(update={"id": name}))


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/health", health, "health", "liveness (counters too, with the key)", Health, COMMON),
    Endpoint("GET", "/v1/models", models, "listModels", "the served model", ModelList, (*COMMON, 401), aliases=("/models",)),
    Endpoint(
        "GET", "/v1/models/{name}", model, "retrieveModel", "the served model", ModelCard, (*COMMON, 401, 404), path_param="name"
    ),
    Endpoint(
        "POST",
        "/v1/chat/completions",
        chat,
        "createChatCompletion",
        "A chat completion: free text, JSON schema (response_format) or a tool call",
        ChatCompletion,
        (*COMMON, 401, 404, 408, 413, 415, 429),
        request=ChatRequest,
        stream=ChatCompletionChunk,
        aliases=("/chat/completions",),
    ),
    Endpoint(
        "POST",
        "/v1/responses",
        create_response,
        "createResponse",
        "A response (OpenAI's Responses API): free text, text.format json_schema, or a function call",
        Response_,
        (*COMMON, 401, 404, 408, 413, 415, 429),
        request=ResponsesRequest,
        stream=ResponseEvent,
        aliases=("/responses",),
    ),
)


# Ollama's API (serve/ollama/translate.py): the same table, so the OpenAPI document and the fuzzing cover it
def _ollama_endpoints() -> tuple[Endpoint, ...]:
    from .ollama import models as om
    from .ollama import translate as o
    from .ollama import wire as w

    common = (*COMMON, 401, 404, 408, 413, 415)
    return (
        Endpoint(
            "POST",
            "/api/chat",
            o.chat,
            "ollamaChat",
            "Ollama chat: NDJSON lines unless stream is false",
            w.OllamaChatResponse,
            (*common, 429),
            request=w.OllamaChatRequest,
            error=w.OllamaError,
            ndjson=True,
        ),
        Endpoint(
            "POST",
            "/api/generate",
            o.generate,
            "ollamaGenerate",
            "Ollama generate: NDJSON lines unless stream is false",
            w.OllamaGenerateResponse,
            (*common, 429),
            request=w.OllamaGenerateRequest,
            error=w.OllamaError,
            ndjson=True,
        ),
        Endpoint(
            "GET",
            "/api/tags",
            om.tags,
            "ollamaTags",
            "the served model (Ollama)",
            w.OllamaTags,
            (*COMMON, 401),
            error=w.OllamaError,
        ),
        Endpoint(
            "GET",
            "/api/ps",
            om.ps,
            "ollamaPs",
            "the served model, loaded (Ollama)",
            w.OllamaRunning,
            (*COMMON, 401),
            error=w.OllamaError,
        ),
        Endpoint(
            "POST",
            "/api/show",
            om.show,
            "ollamaShow",
            "the served model's details (Ollama)",
            w.OllamaShowResponse,
            common,
            request=w.OllamaShowRequest,
            error=w.OllamaError,
        ),
        Endpoint(
            "GET",
            "/api/version",
            om.version,
            "ollamaVersion",
            "the server's version (Ollama)",
            w.OllamaVersion,
            COMMON,
            error=w.OllamaError,
        ),
    )


ENDPOINTS = (*ENDPOINTS, *_ollama_endpoints())
