"""The ASGI app: `GET /health`, `GET /v1/models`, `POST /v1/chat/completions` (JSON or SSE).

Built on Starlette alone (see docs/architecture.md for why): each request is read with a size limit,
parsed into a `protocol.Plan`, its format built and compiled (`formats.FormatCache`), then handed to
the one `EngineWorker` that owns the engine. Requests from all clients join the same drain, so they
are decoded side by side (`n_parallel`) with a shared prefix cache. A full queue answers 429 with
`Retry-After`; a client that disconnects sets its request's cancel event, which drops it from the
queue or stops it at its next token. Every error is OpenAI-shaped (`errors.APIError`); a 500 is a
bug, logged with its traceback.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..constraints.sandbox import CompileRefused
from ..engine.base import THINK_CLOSE, THINK_OPEN, Engine, Generation, GenerationCancelled, ModelIdentity, TokenInfo
from ..engine.capabilities import Capability, capabilities_of
from ..engine.worker import EngineWorker, WorkerBusy
from ..errors import PromptTooLongError
from ..formats import OutputFormat, PlainText, SchemaError
from ..formats.text import DEFAULT_TEXT_TOKENS
from ..http_limits import BodyError, ClientGone, loads_strict, read_body
from . import protocol
from .errors import APIError, bad_request, from_exception
from .formats import JSON_OBJECT, FormatCache
from .stream import stream_chunks

log = logging.getLogger("localjudge.serve")


@dataclass
class ServeConfig:
    """What the server enforces (the CLI flags of `localjudge serve`)."""

    model_name: str | None = None  # the name clients put in `model` (default: the model's id)
    api_key: str | None = None  # Bearer key required on /v1 (required to bind beyond loopback)
    max_pending: int = 256  # requests queued or decoding; more get 429
    max_body_bytes: int = 4 << 20
    max_prompt_chars: int | None = None  # all message text together (default: 64 characters per context token)
    field_tokens: int = 80  # token budget of each free-text field of a schema
    text_tokens: int = DEFAULT_TEXT_TOKENS  # default cap of a free-text answer without max_tokens
    compile_seconds: float = 30.0  # limits on building a client schema's automaton (a child process)
    compile_memory_mb: int = 2048
    precompile: bool = True  # build the json_object automaton at start (once per vocabulary, then cached on disk)
    allowed_hosts: tuple[str, ...] = ()  # Host names answered besides the loopback names ("*": any)
    cors_origins: tuple[str, ...] = ()  # web origins allowed to call the server (CORS); none by default
    body_timeout: float = 30.0  # seconds to receive a whole request body
    header_timeout: float = 10.0  # seconds to receive a request's headers
    max_connections: int = 512  # open connections; more are answered 503 at once
    shutdown_timeout: float = 30.0  # seconds SIGTERM waits for requests in flight before cancelling them
    cache_max_mb: float = 1024.0  # on-disk automaton cache cap (least recently used out)
    schema_constraint: str = "llguidance"  # the engine that constrains client schemas ("automaton": outlines-core)


@dataclass
class Counters:
    """What /health reports about requests since start."""

    completed: int = 0
    cancelled: int = 0
    refused_busy: int = 0
    errors: int = 0
    started: float = field(default_factory=time.time)


class ServerState:
    """The engine, its worker, the formats and the counters one app serves."""

    def __init__(self, engine: Engine, config: ServeConfig, identity: ModelIdentity | None = None):
        from ..constraints.sandbox import CompileLimits, save_vocab
        from ..paths import cache_home

        self.engine, self.config = engine, config
        self.identity = identity or engine.identity()
        self.model_name = config.model_name or engine.model_id
        self.worker = EngineWorker(engine, max_pending=config.max_pending, name="localjudge-serve-engine")
        self.capabilities = capabilities_of(engine)
        vocab = engine.vocab if Capability.VOCABULARY in self.capabilities else None  # type: ignore[attr-defined]
        self.pieces: list[bytes] | None = vocab.pieces if vocab is not None else None
        vocab_path = save_vocab(vocab, cache_home() / "serve") if vocab is not None else None
        limits = CompileLimits(config.compile_seconds, config.compile_memory_mb << 20)
        self.formats = FormatCache(
            vocab_path,
            vocab.hash if vocab is not None else None,
            limits,
            config.field_tokens,
            cache_max_bytes=int(config.cache_max_mb * (1 << 20)),
            constraint=config.schema_constraint,
        )
        self.text_format = PlainText(config.text_tokens)
        self.counters = Counters()
        self.fingerprint = "localjudge-" + (self.identity.digest[:12] or "model")
        self.max_prompt_chars = config.max_prompt_chars or 64 * engine.n_ctx
        self.precompile: asyncio.Future[None] | None = None  # the json_object automaton, built at start
        self.stopping: asyncio.Event | None = None  # set when shutdown begins (bodies still arriving get 503)

    # ------------------------------------------------------------------------------ engine side

    def think_cost(self, engine: Engine, p: protocol.Plan, fmt: OutputFormat) -> int:
        """Completion tokens the think block may take: `think_tokens` plus its two markers when the request
        thinks (a constrained answer on an engine that compiles formats), else 0."""
        n = p.options.think_tokens
        if not n or not fmt.constrained or Capability.COMPILE not in self.capabilities:
            return 0
        tokenize = engine.tokenize  # type: ignore[attr-defined]
        return n + len(tokenize(THINK_OPEN)) + len(tokenize(THINK_CLOSE))

    def budget(self, engine: Engine, p: protocol.Plan, fmt: OutputFormat) -> int:
        """Output tokens for this request's answer (runs on the engine thread): the format's budget (free
        text: the text cap), lowered by the client's max_tokens and clamped to the context left; a 400 when
        the prompt leaves no room for the shortest valid answer. As for OpenAI's reasoning models, max_tokens
        bounds every completion token, the think block's included: the answer gets what think_tokens leaves
        (a 400 naming think_tokens when that is less than the answer needs)."""
        n_prompt = engine.count_tokens(p.messages)
        n_ctx = engine.n_ctx
        need = 1
        if fmt.constrained and Capability.COMPILE in self.capabilities:
            need = max(1, int(engine.compile(fmt).shortest))  # type: ignore[attr-defined]
        think = self.think_cost(engine, p, fmt)
        if p.max_tokens is not None:
            if p.max_tokens < need:
                raise bad_request(
                    f"max_tokens: {p.max_tokens} is too few for the shortest answer the schema allows ({need} tokens); raise it",
                    param="max_tokens",
                )
            if p.max_tokens - think < need:
                most = p.max_tokens - need - (think - p.options.think_tokens)  # the largest think_tokens that fits
                lower = f"lower think_tokens to at most {most} or " if most > 0 else ""
                raise bad_request(
                    f"think_tokens: {p.options.think_tokens} (+{think - p.options.think_tokens} for the think markers) leaves "
                    f"{max(0, p.max_tokens - think)} of max_tokens {p.max_tokens} for the answer, which needs at least "
                    f"{need}; {lower}raise max_tokens to at least {think + need}",
                    param="think_tokens",
                )
            # under a schema the format's own budget is the bound by construction; max_tokens can only lower it
            room = p.max_tokens - think
            budget = min(room, max(need, fmt.max_tokens())) if fmt.constrained else room
            if n_prompt + budget + think > n_ctx:
                raise PromptTooLongError(
                    f"this model's context is {n_ctx} tokens; the messages take {n_prompt} and max_tokens asks for "
                    f"{budget + think}: shorten the messages or lower max_tokens",
                    n_prompt=n_prompt,
                    n_ctx=n_ctx,
                    budget=budget + think,
                )
            return budget
        budget = min(fmt.max_tokens(), n_ctx - n_prompt - think)
        if budget < need:
            most = n_ctx - n_prompt - need - (think - p.options.think_tokens)  # the largest think_tokens that fits
            if think and most > 0:  # the thinking, not the messages, leaves no room
                raise bad_request(
                    f"think_tokens: {p.options.think_tokens} (+{think - p.options.think_tokens} for the think markers) "
                    f"leaves {max(0, n_ctx - n_prompt - think)} tokens of this model's context ({n_ctx}, the messages take "
                    f"{n_prompt}) for the answer, which needs at least {need}; lower think_tokens to at most {most}",
                    param="think_tokens",
                )
            raise PromptTooLongError(
                f"this model's context is {n_ctx} tokens; the messages take {n_prompt}, leaving no room for the "
                f"{need}-token answer: shorten the messages",
                n_prompt=n_prompt,
                n_ctx=n_ctx,
                budget=need,
            )
        return budget

    def submit(
        self,
        p: protocol.Plan,
        fmt: OutputFormat,
        cancel: threading.Event,
        on_tokens: Callable[[list[TokenInfo]], None] | None,
        accepted: Callable[[], None],
    ) -> Future[Generation]:
        """Queue the request on the worker (`WorkerBusy` when full); `accepted()` once it passed its checks."""

        def start(engine: Engine, done: Callable[[Any], None]) -> None:
            if cancel.is_set():
                done(GenerationCancelled("the client went away before the request started"))
                return
            budget = self.budget(engine, p, fmt)
            streams = Capability.STREAMING in self.capabilities  # else the whole answer comes in the last chunk
            opts = p.options.model_copy(update={"max_tokens": budget, "on_tokens": on_tokens if streams else None})
            engine.submit([(p.messages, fmt)], opts, lambda gens: done(gens[0]), cancel=cancel)
            accepted()

        return self.worker.call(start)


# ---------------------------------------------------------------------------------------- helpers


def _error(e: APIError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


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


# ---------------------------------------------------------------------------------------- routes


def create_app(state: ServerState) -> Any:
    """The ASGI app serving `state` (the worker is closed when the app shuts down), behind the `Guard`
    (Host allow-list, Origin, JSON-only POSTs)."""
    from .guard import Guard

    async def health(request: Request) -> Response:
        if state.config.api_key is not None:
            try:
                _check_key(state, request)
            except APIError:  # without the key: liveness only
                return JSONResponse({"status": "ok"})
        c = state.counters
        return JSONResponse(
            {
                "status": "ok",
                "model": state.model_name,
                "in_flight": state.worker.pending,
                "completed": c.completed,
                "cancelled": c.cancelled,
                "refused_busy": c.refused_busy,
                "errors": c.errors,
                "schemas_compiled": state.formats.compiled,
                "compiles_waiting": state.formats.waiting,
                "uptime_s": round(time.time() - c.started, 1),
            }
        )

    def model_entry() -> dict[str, Any]:
        from .. import __version__

        ident = state.identity
        return {
            "id": state.model_name,
            "object": "model",
            "created": int(state.counters.started),
            "owned_by": "localjudge",
            "localjudge": {
                "version": __version__,
                "backend": ident.backend,
                "model_id": ident.model_id,
                "digest": ident.digest,
                "settings": ident.settings,
                "n_ctx": state.engine.n_ctx,
            },
        }

    async def models(request: Request) -> Response:
        try:
            _check_key(state, request)
        except APIError as e:
            return _error(e)
        return JSONResponse({"object": "list", "data": [model_entry()]})

    async def model(request: Request) -> Response:
        try:
            _check_key(state, request)
            name = request.path_params["name"]
            if name != state.model_name:
                raise APIError(
                    404, f"the model {name!r} does not exist; this server serves {state.model_name!r}", code="model_not_found"
                )
        except APIError as e:
            return _error(e)
        return JSONResponse(model_entry())

    async def chat(request: Request) -> Response:
        try:
            return await _chat(state, request)
        except APIError as e:
            if e.status == 429:
                state.counters.refused_busy += 1
            return _error(e)
        except ClientGone:  # a normal event: no traceback, not an error
            state.counters.cancelled += 1
            return Response(status_code=499)
        except Exception as e:  # noqa: BLE001 - mapped, or a bug (500)
            api = from_exception(e)
            if api is not None:
                return _error(api)
            state.counters.errors += 1
            log.exception("unexpected error serving a chat completion")
            return _error(APIError(500, f"internal error ({type(e).__name__}); see the server log", type="server_error"))

    async def openapi(request: Request) -> Response:
        from .. import __version__
        from .openapi import document

        return JSONResponse(document(state.model_name, __version__))

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        what = "method not allowed" if status == 405 else "no such endpoint"
        return _error(APIError(status, f"{what}: {request.method} {request.url.path}; see GET /v1/models", code="not_found"))

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error", exc_info=exc)
        return _error(APIError(500, f"internal error ({type(exc).__name__}); see the server log", type="server_error"))

    async def startup() -> None:
        state.stopping = asyncio.Event()
        if state.config.precompile and state.pieces is not None:
            fmt = state.formats.get(JSON_OBJECT, "json_object")
            state.precompile = asyncio.ensure_future(state.formats.ready(fmt, trusted=True))

    async def shutdown() -> None:
        await asyncio.to_thread(state.worker.close, True)

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await startup()
        yield
        await shutdown()

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{name:path}", model, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/models", models, methods=["GET"]),
        Route("/chat/completions", chat, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: not_found, Exception: server_error},
    )
    return Guard(app, state.config.allowed_hosts, state.config.cors_origins)


async def _chat(state: ServerState, request: Request) -> Response:
    _check_key(state, request)
    body = await _body(request, state.config.max_body_bytes, state.config.body_timeout, state.stopping)
    req = protocol.parse_request(body)
    if req.model != state.model_name:
        raise APIError(
            404,
            f"the model {req.model!r} does not exist; this server serves {state.model_name!r}",
            param="model",
            code="model_not_found",
        )
    # checking the schemas a request carries is bounded work, but work: never on the event loop
    p = await asyncio.to_thread(protocol.plan, req, field_tokens=state.config.field_tokens)
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
    cid = protocol.completion_id()
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
        return JSONResponse(protocol.completion(p, gen, cid, state.model_name, state.fingerprint, state.pieces))
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
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
