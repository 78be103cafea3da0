"""The Starlette app of `localjudge view`: pages, the JSON API, the static files, behind the guard (security.py).

    GET  /                                  runs list            GET /api/runs
    GET  /runs/{rid}                        live rows view       GET /api/runs/{rid}/status, /api/runs/{rid}/rows
    GET  /runs/{rid}/rows/{row}             row detail           GET /api/runs/{rid}/row/{row}
    GET  /runs/{rid}/label                  keyboard labelling   GET /api/runs/{rid}/queue   POST /api/runs/{rid}/labels
    GET  /runs/{rid}/agreement              agreement panel      GET /api/runs/{rid}/agreement
                                                                 POST /api/runs/{rid}/align, GET /api/runs/{rid}/align
    GET  /compare?a=RID&b=RID               two runs side by side GET /api/compare?a=RID&b=RID

The routes live in routes/ (one module per kind of answer), their shared state in `state.ViewState`; this
module only wires them. Bad input answers 400 (unknown run or row: 404) with `{"error": "..."}` naming the
parameter; never 500.
"""

from __future__ import annotations

from typing import Any

from .security import Guard
from .state import MAX_BODY_BYTES, ViewConfig, ViewState

__all__ = ["MAX_BODY_BYTES", "ViewConfig", "create_app"]


def create_app(config: ViewConfig) -> Any:
    """The ASGI app (the guard wrapping Starlette); `app.state_runs` holds the open runs (close them at exit)."""
    from starlette.applications import Starlette

    from .routes import routes

    state = ViewState.open(config)
    guarded = Guard(Starlette(routes=routes(state)), config.allowed_hosts, config.csrf_token, config.api_key)
    guarded.state_runs = state.runs  # type: ignore[attr-defined]
    return guarded
