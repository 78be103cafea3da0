"""serve's endpoints: each a handler `(state, request) -> Response` with the typed bodies it reads and
writes, listed once in `ENDPOINTS`. `app.create_app` routes the table and `openapi.document` describes it,
so adding an endpoint is one entry here (its handler, its `wire` models, its error statuses).

A handler answers an `APIError` as its OpenAI-shaped body; `chat` maps localjudge's own exceptions too
(`errors.from_exception`) and answers a bug 500 with its traceback logged.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..constraints.sandbox import CompileRefused
from ..engine.base import TokenInfo
from ..engine.worker import WorkerBusy
from ..formats import OutputFormat, SchemaError
from ..http_limits import BodyError, ClientGone, loads_strict, read_body
from . import protocol
from .answer import completion, completion_id
from .errors import APIError, bad_request, from_exception
from .openapi import COMMON, Endpoint
from .responses_route import create_response
from .stream import stream_chunks
from .wire import ChatCompletion, ChatCompletionChunk, ChatRequest, Health, ModelCard, ModelList, ServedBy, Wire
from .wire_responses import Response as Response_
from .wire_responses import ResponseEvent, ResponsesRequest

if TYPE_CHECKING:
    from .app import ServerState

log = logging.getLogger("localjudge.serve")


def answer(body: Wire, status: int = 200) -> JSONResponse:
    """A typed answer as a JSON response (Starlette's compact JSON)."""
    return JSONResponse(body.body(), status_code=status)


def error(e: APIError) -> JSONResponse:
    """An error as its OpenAI-shaped answer, with its status and headers."""
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


# ---------------------------------------------------------------------------------------- handlers


async def health(state: ServerState, request: Request) -> Response:
    """Liveness; the counters too, unless the server has a key and the request lacks it."""
    if state.config.api_key is not None:
        try:
            _check_key(state, request)
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
        _check_key(state, request)
    except APIError as e:
        return error(e)
    card = model_card(state)
    return answer(ModelList(data=[card, *(card.model_copy(update={"id": a}) for a in state.config.aliases)]))


async def model(state: ServerState, request: Request) -> Response:
    """The served model by name (404 for any other name)."""
    try:
        _check_key(state, request)
        name = request.path_params["name"]
        if name != state.model_name and name not in state.config.aliases:
            raise APIError(
                404, f"the model {name!r} does not exist; this server serves {state.model_name!r}", code="model_not_found"
            )
    except APIError as e:
        return error(e)
    card = model_card(state)
    return answer(card if name == state.model_name else card.model_copy(update={"id": name}))


async def chat(state: ServerState, request: Request) -> Response:
    """A chat completion (JSON, or SSE chunks when `stream`), every failure an OpenAI-shaped error."""
    try:
        return await _chat(state, request)
    except APIError as e:
        if e.status == 429:
            state.counters.refused_busy += 1
        return error(e)
    except ClientGone:  # a normal event: no traceback, not an error
        state.counters.cancelled += 1
        return Response(status_code=499)
    except Exception as e:  # noqa: BLE001 - mapped, or a bug (500)
        api = from_exception(e)
        if api is not None:
            return error(api)
        state.counters.errors += 1
        log.exception("unexpected error serving a chat completion")
        return error(APIError(500, f"internal error ({type(e).__name__}); see the server log", type="server_error"))


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

# ---------------------------------------------------------------------------------------- helpers


def _check_key(state: ServerState, request: Request) -> None:
    key = state.config.api_key
    if key is None:
        return
    auth = request.headers.get("authorization", "")
    scheme, _, given = auth.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise APIError(
            401,
            "missing API key: send the header 'Authorization: Bearer <key>' (the key given to localjudge serve --api-key)",
            type="invalid_request_error",
            code="invalid_api_key",
        )
    if not hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), key.encode("utf-8")):
        raise APIError(401, "incorrect API key provided", type="invalid_request_error", code="invalid_api_key")


CLOSE = {"Connection": "close"}


async def _body(request: Request, limit: int, timeout: float = 30.0, stopping: asyncio.Event | None = None) -> Any:
    """The parsed JSON body, read within `timeout` seconds and `limit` bytes (413, 408; 503 when the
    server begins shutting down first; `ClientGone` when the client leaves): `http_limits.read_body`."""
    try:
        data = await read_body(request, limit, timeout, stopping)
    except BodyError as e:
        if e.status >= 500:
            raise APIError(e.status, e.message, type="server_error", headers=CLOSE) from None
        raise APIError(e.status, e.message, code=e.code, headers=CLOSE if e.status == 408 else None) from None
    try:
        return loads_strict(data)
    except BodyError as e:
        raise bad_request(f"{e.message}; send a JSON object") from None


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone away (the body must be read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> None:
    loop.call_soon_threadsafe(fn)


async def _chat(state: ServerState, request: Request) -> Response:
    _check_key(state, request)
    body = await _body(request, state.config.max_body_bytes, state.config.body_timeout, state.stopping)
    req = protocol.parse_request(body)
    if req.model != state.model_name and req.model not in state.config.aliases:
        raise APIError(
            404,
            f"the model {req.model!r} does not exist; this server serves {state.model_name!r}",
            param="model",
            code="model_not_found",
        )
    # checking the schemas a request carries is bounded work, but work: never on the event loop
    p = await asyncio.to_thread(
        protocol.plan, req, field_tokens=state.config.field_tokens, catalog=state.catalog, aliases=state.config.aliases
    )
    contract = {"X-Localjudge-Contract": p.contract} if p.contract else {}
    chars = sum(len(m.content) for m in p.messages)
    if chars > state.max_prompt_chars:
        raise APIError(
            400,
            f"the messages are {chars} characters, more than fit this model's {state.engine.n_ctx}-token context; shorten them",
            param="messages",
            code="context_length_exceeded",
        )
    busy = state.worker.pending + state.formats.waiting
    if busy >= state.config.max_pending:  # requests waiting on a compile count toward the limit too
        msg = f"{busy} requests are already queued or compiling (limit {state.config.max_pending})"
        raise from_exception(WorkerBusy(msg)) or APIError(429, msg)
    if p.schema is None:
        fmt: OutputFormat = p.fmt if p.fmt is not None else state.text_format  # a grammar, or free text
    else:
        param = "tools" if p.tool_mode != "none" else "response_format"
        try:
            # expanding a schema is bounded, but it is still work: never on the event loop
            fmt = await asyncio.to_thread(state.formats.get, p.schema, p.schema_name)
            await state.formats.ready(fmt)
        except SchemaError as e:
            raise bad_request(str(e), param=param) from None
        except CompileRefused as e:
            raise bad_request(f"response schema refused: {e}", param=param) from None
    loop = asyncio.get_running_loop()
    cancel = threading.Event()
    accepted = asyncio.Event()
    tokens: asyncio.Queue[list[TokenInfo]] | None = asyncio.Queue() if p.stream else None

    def on_tokens(new: list[TokenInfo]) -> None:
        assert tokens is not None
        loop.call_soon_threadsafe(tokens.put_nowait, new)

    try:
        fut = state.submit(p, fmt, cancel, on_tokens if p.stream else None, lambda: _call_soon(loop, accepted.set))
    except Exception as e:
        raise from_exception(e) or e from None
    afut: asyncio.Future[Any] = asyncio.wrap_future(fut)
    gone: asyncio.Future[Any] = asyncio.ensure_future(_disconnected(request))
    cid = completion_id()
    if not p.stream:
        try:
            await asyncio.wait([afut, gone], return_when=asyncio.FIRST_COMPLETED)
            if not afut.done():  # the client went away: stop its generation, free its slot
                cancel.set()
                state.counters.cancelled += 1
                return Response(status_code=499)
        finally:
            gone.cancel()
        gen = afut.result()  # an exception here is mapped by the caller
        if gen.stop_reason == "cancelled":
            state.counters.cancelled += 1
        else:
            state.counters.completed += 1
        done = answer(completion(p, gen, cid, state.model_name, state.fingerprint_of(p), state.pieces))
        done.headers.update(contract)
        return done
    # streaming: wait until the request is accepted (its errors are still plain JSON answers), then stream
    started: asyncio.Future[Any] = asyncio.ensure_future(accepted.wait())
    try:
        await asyncio.wait([afut, started, gone], return_when=asyncio.FIRST_COMPLETED)
    finally:
        started.cancel()
    if gone.done() and not afut.done():
        cancel.set()
        state.counters.cancelled += 1
        return Response(status_code=499)
    if afut.done() and afut.exception() is not None:
        gone.cancel()
        afut.result()  # raises: mapped by the caller
    assert tokens is not None
    return StreamingResponse(
        stream_chunks(state, p, afut, tokens, cancel, gone, cid),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **contract},
    )


# Ollama's API (serve/ollama.py): the same table, so the OpenAPI document and the fuzzing cover it
def _ollama_endpoints() -> tuple[Endpoint, ...]:
    from . import ollama as o
    from . import ollama_models as om
    from . import wire_ollama as w

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
