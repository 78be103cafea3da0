"""The view's routes, each a handler `(state, request) -> Response` in the module of what it serves:
`html` (pages), `api` (JSON reads), `labelling` (the queue, labels, alignment), `static`; `base` turns a
blocking handler's failures into error answers. `routes(state)` is the whole table `app.create_app` serves."""

from __future__ import annotations

from functools import partial
from typing import Any

from starlette.routing import Route

from ..state import ViewState
from . import api, html, labelling
from .base import handle
from .static import static


def routes(state: ViewState) -> list[Route]:
    """Every route of the view, bound to `state` (blocking handlers run in the thread pool)."""

    def blocking(fn: Any) -> Any:
        return handle(partial(fn, state))

    return [
        Route("/", blocking(html.index)),
        Route("/runs/{rid}", blocking(html.run_page)),
        Route("/runs/{rid}/rows/{row:int}", blocking(html.row_page)),
        Route("/runs/{rid}/label", blocking(html.label_page)),
        Route("/runs/{rid}/agreement", blocking(html.agreement_page)),
        Route("/compare", blocking(html.compare_page)),
        Route("/api/runs", blocking(api.runs)),
        Route("/api/runs/{rid}/status", blocking(api.status)),
        Route("/api/runs/{rid}/rows", blocking(api.rows)),
        Route("/api/runs/{rid}/row/{row:int}", blocking(api.row)),
        Route("/api/runs/{rid}/queue", blocking(labelling.next_item)),
        Route("/api/runs/{rid}/labels", partial(labelling.add_label, state), methods=["POST"]),
        Route("/api/runs/{rid}/agreement", blocking(api.agreement)),
        Route("/api/runs/{rid}/align", partial(labelling.alignment, state), methods=["GET", "POST"]),
        Route("/api/runs/{rid}/trust", blocking(api.trust)),
        Route("/api/compare", blocking(api.compare)),
        Route("/static/{name}", static),
    ]
