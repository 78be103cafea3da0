"""`localjudge serve`: the engine behind the OpenAI chat-completions API, structured outputs valid by construction.

    from localjudge.serve import ServeConfig, serve
    serve(load_engine(), host="127.0.0.1", port=8000, config=ServeConfig(api_key=None))

Layout: `wire.py` (request and answer bodies as pydantic models), `protocol.py` (a request as a plan),
`answer.py` (a generation as the answer), `routes.py` (the endpoints: handlers and their table),
`openapi.py` (the document, generated from that table and the models), `formats.py` (schema formats, LRU,
sandboxed compile), the sandboxed compile in `constraints/sandbox.py` (the child process that builds an automaton under limits), `errors.py`
(OpenAI-shaped errors), `app.py` (the server's state, the Starlette app), `run.py` (uvicorn, binding,
clean shutdown).
Needs the `serve` extra (starlette, uvicorn); nothing here is imported by `localjudge --help`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import ServeConfig, ServerState, create_app
    from .run import serve

__all__ = ["ServeConfig", "ServerState", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in ("ServeConfig", "ServerState", "create_app"):
        from . import app

        return getattr(app, name)
    if name == "serve":
        from .run import serve

        return serve
    raise AttributeError(name)
