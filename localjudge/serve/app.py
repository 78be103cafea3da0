"""The ASGI app: the server's state and the wiring of its endpoints (`routes.py`: `GET /health`,
`GET /v1/models`, `POST /v1/chat/completions` as JSON or SSE) and of `GET /openapi.json` (`openapi.py`).

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
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..engine.base import THINK_CLOSE, THINK_OPEN, Engine, Generation, GenerationCancelled, ModelIdentity, TokenInfo
from ..engine.capabilities import Capability, capabilities_of
from ..engine.worker import EngineWorker
from ..errors import PromptTooLongError
from ..formats import OutputFormat, PlainText
from ..formats.text import DEFAULT_TEXT_TOKENS
from . import checked, protocol
from .aliases import Alias
from .catalog import Catalog
from .errors import APIError, bad_request
from .formats import JSON_OBJECT, FormatCache

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
    aliases: dict[str, Alias] = field(default_factory=dict)  # more served names, each with a default output contract
    catalog_formats: bool = True  # known judge prompts answered under their judge's contract too (serve/catalog.py)


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
        self.catalog = Catalog.builtin() if config.catalog_formats else None
        self.counters = Counters()
        self.fingerprint = "localjudge-" + (self.identity.digest[:12] or "model")
        self.max_prompt_chars = config.max_prompt_chars or 64 * engine.n_ctx
        self.precompile: asyncio.Future[None] | None = None  # the json_object automaton, built at start
        self.stopping: asyncio.Event | None = None  # set when shutdown begins (bodies still arriving get 503)

    def fingerprint_of(self, p: protocol.Plan) -> str:
        """`system_fingerprint` of an answer: the server's, plus the catalog contract applied to it (if any)."""
        applied = p.contract is not None and "; not applied" not in p.contract
        return f"{self.fingerprint}+{p.contract}" if applied else self.fingerprint

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
        """Queue the request on the worker (`WorkerBusy` when full); `accepted()` once it passed its checks. A
        format on a relaxed schema is run until an answer validates (`checked.submit`), not streamed."""
        if isinstance(fmt, checked.CheckedFormat):
            return checked.submit(lambda q, ok: self._submit(q, fmt, cancel, None, ok), p, fmt, cancel, accepted)
        return self._submit(p, fmt, cancel, on_tokens, accepted)

    def _submit(
        self,
        p: protocol.Plan,
        fmt: OutputFormat,
        cancel: threading.Event,
        on_tokens: Callable[[list[TokenInfo]], None] | None,
        accepted: Callable[[], None],
    ) -> Future[Generation]:

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


# ---------------------------------------------------------------------------------------- the app


def create_app(state: ServerState) -> Any:
    """The ASGI app serving `state` (the worker is closed when the app shuts down): the routes of
    `routes.ENDPOINTS` (and their aliases) and `GET /openapi.json` describing them, behind the `Guard`
    (Host allow-list, Origin, JSON-only POSTs)."""
    from .guard import Guard
    from .routes import ENDPOINTS, error

    async def openapi(request: Request) -> Response:
        from .. import __version__
        from .openapi import document

        return JSONResponse(document(ENDPOINTS, state.model_name, __version__))

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        what = "method not allowed" if status == 405 else "no such endpoint"
        return error(APIError(status, f"{what}: {request.method} {request.url.path}; see GET /v1/models", code="not_found"))

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error", exc_info=exc)
        return error(APIError(500, f"internal error ({type(exc).__name__}); see the server log", type="server_error"))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.stopping = asyncio.Event()
        if state.config.precompile and state.pieces is not None:
            fmt = state.formats.get(JSON_OBJECT, "json_object")
            state.precompile = asyncio.ensure_future(state.formats.ready(fmt, trusted=True))
        yield
        await asyncio.to_thread(state.worker.close, True)

    routes = [Route("/openapi.json", openapi, methods=["GET"])]
    for e in ENDPOINTS:
        for path in (e.path, *e.aliases):
            routes.append(Route(e.route(path), partial(e.handler, state), methods=[e.method]))
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: not_found, Exception: server_error})
    return Guard(app, state.config.allowed_hosts, state.config.cors_origins)
