"""The view's JSON reads: the runs, a run's status with its trust figures, a page of rows, one row (results,
labels, history), the agreement panel's figures."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...errors import InputError
from ..params import integer, real
from ..state import ViewState


def runs(state: ViewState, request: Request) -> Response:
    """GET /api/runs."""
    return JSONResponse(state.runs.listing())


def status(state: ViewState, request: Request) -> Response:
    """GET /api/runs/{rid}/status: counts and progress, with the panel and cascade figures."""
    from ..panels import run_figures

    run = state.run_of(request)
    return JSONResponse({**run.status(), "trust": run_figures(run.record())})


def rows(state: ViewState, request: Request) -> Response:
    """GET /api/runs/{rid}/rows: one page of rows, filtered, searched and sorted."""
    q = request.query_params
    page = state.run_of(request).rows(
        judge=q.get("judge") or None,
        status=q.get("status") or None,
        q=q.get("q") or None,
        sort=q.get("sort") or "row",
        page=integer(request, "page", 1),
        per=integer(request, "per", 50),
    )
    return JSONResponse(page)


def row(state: ViewState, request: Request) -> Response:
    """GET /api/runs/{rid}/row/{row}: the row's results, each judge's label (or null), its history."""
    run = state.run_of(request)
    ri = int(request.path_params["row"])
    results = run.results_of_row(ri)
    if not results:
        raise KeyError(f"row {ri}")
    labels = run.labels()
    return JSONResponse(
        {
            "results": [r.model_dump(mode="json") for r in results],
            "labels": {
                r.judge: (labels[(ri, r.judge)].model_dump(mode="json") if (ri, r.judge) in labels else None) for r in results
            },
            "history": [h.model_dump(mode="json") for h in run.history(ri)],
        }
    )


def agreement(state: ViewState, request: Request) -> Response:
    """GET /api/runs/{rid}/agreement?judge=J: the live agreement figures."""
    from ..stats import agreement

    return JSONResponse(agreement(state.run_of(request), request.query_params.get("judge", "")))


def trust(state: ViewState, request: Request) -> Response:
    """GET /api/runs/{rid}/trust?judge=J[&width=W]: the trust panel (PPI++, interval, labels to reach ±W)."""
    from ..trust import DEFAULT_WIDTH, trust_panel

    judge = request.query_params.get("judge", "")
    return JSONResponse(trust_panel(state.run_of(request), judge, real(request, "width", DEFAULT_WIDTH)))


def compare(state: ViewState, request: Request) -> Response:
    """GET /api/compare?a=BASE&b=NEW: per judge, the human pass rate difference new − base (PPI++ and labels only)."""
    from ..compare_trust import compare_trust_json

    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not a or not b:
        raise InputError("compare needs ?a=BASE_RUN&b=NEW_RUN (run ids from /api/runs)")
    return JSONResponse(compare_trust_json(state.runs.get(a), state.runs.get(b)))
