"""`localjudge serve`: the engine behind the OpenAI chat-completions API, structured outputs valid by construction.

    from localjudge.serve import ServeConfig, serve
    serve(load_engine(), host="127.0.0.1", port=8000, config=ServeConfig(api_key=None))

Layout, by endpoint over one core (as vLLM's `entrypoints/openai/<endpoint>/`):
  core/        what every door shares: `wire.py` (the OpenAI chat bodies the doors translate into), `plan.py` (a
               request as a plan), `generate.py` (one generation for every route), `state.py` (the server's
               state and config), `schemas.py` (client schema formats, LRU, sandboxed compile), `validate.py`,
               `checked.py`, `json_mode.py`, `catalog.py`, `aliases.py`, `reasoning.py`, `compile_guard.py`,
               `errors.py` (OpenAI-shaped errors), `handling.py` (the routes' shared HTTP steps)
  chat/        `/v1/chat/completions`: `answer.py` (a generation as the answer), `stream.py` (SSE chunks)
  responses/   `/v1/responses`: `wire.py`, `translate.py` (request -> chat request, answer -> response), `route.py`
  ollama/      `/api/*`: `wire.py`, `translate.py`, `models.py` (the model routes)
  routes.py    the endpoint table; `openapi.py` the document from it; `app.py` the Starlette app; `guard.py`
               connection limits; `server.py` uvicorn, binding, clean shutdown
Needs the `serve` extra (starlette, uvicorn); nothing here is imported by `localjudge --help`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import ServeConfig, ServerState, create_app
    from .server import serve

__all__ = ["ServeConfig", "ServerState", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in ("ServeConfig", "ServerState", "create_app"):
        from . import app

        return getattr(app, name)
    if name == "serve":
        from .server import serve

        return serve
    raise AttributeError(name)
