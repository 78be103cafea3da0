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
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .core.errors import APIError
from .core.schemas import JSON_OBJECT
from .core.state import Counters, ServeConfig, ServerState, log

__all__ = ["Counters", "ServeConfig", "ServerState", "create_app", "log"]


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
            threading.Thread(target=state.guard.warm, name="localjudge-compile-guard-warm", daemon=True).start()
        yield
        await asyncio.to_thread(state.worker.close, True)
        state.guard.close()

    routes = [Route("/openapi.json", openapi, methods=["GET"])]
    for e in ENDPOINTS:
        for path in (e.path, *e.aliases):
            routes.append(Route(e.route(path), partial(e.handler, state), methods=[e.method]))
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: not_found, Exception: server_error})
    return Guard(app, state.config.allowed_hosts, state.config.cors_origins)
