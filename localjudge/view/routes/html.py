"""The view's pages: the runs list, a run's live rows, a row's detail (with each judge's prompt re-rendered),
keyboard labelling, the agreement panel, two runs compared. Each renders `view.pages` HTML."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ...errors import InputError
from .. import pages
from ..state import ViewState


def index(state: ViewState, request: Request) -> Response:
    """GET /: the runs (a `?key=` in the address is dropped by a redirect once the cookie is set)."""
    if state.config.api_key and request.query_params.get("key"):
        return RedirectResponse("/", status_code=303)
    return HTMLResponse(pages.runs_page(state.csrf, state.runs.listing()))


def run_page(state: ViewState, request: Request) -> Response:
    """GET /runs/{rid}: the live rows view."""
    from ..panels import run_figures

    run = state.run_of(request)
    run.search_index()  # a run that registered after the view opened it: its index is queued now
    return HTMLResponse(pages.run_page(state.csrf, run.status(), run_figures(run.record()), run.controls()))


def prompts_of(results: list[Any], members: dict[str, list[str]]) -> dict[str, Any]:
    """Each result's prompt re-rendered from its stored inputs, with a note saying whether it is exactly what
    was sent (its hash matches the record's) or the judge changed since."""
    from ...judges import get_judge
    from ...judges.pairwise import BOTH_ORDERS_SUFFIX, BothOrders

    parent = {m: j for j, ms in members.items() for m in ms}  # a member is prompted as its panel's judge
    out: dict[str, Any] = {}
    for r in results:
        try:
            j: Any = get_judge(parent.get(r.judge, r.judge))
            both = r.record is not None and r.record.judge_version.endswith(BOTH_ORDERS_SUFFIX)
            if both:
                j = BothOrders(j)
            msgs = j.render(**r.inputs)
            same = r.record is not None and j.fingerprint(**r.inputs) == r.record.prompt_hash
            note = (
                "re-rendered from the stored inputs; its hash matches the record's prompt_hash: exactly as sent"
                + (" (judged in both orders: the second prompt swaps the two answers)" if both else "")
                if same
                else "re-rendered from the stored inputs by the judge as it is now; it differs from the record's "
                "prompt_hash (the judge changed since), so it may not be exactly what was sent"
            )
            out[r.judge] = {"messages": [m.model_dump() for m in msgs], "note": note}
        except Exception as e:  # a judge file that is not on this machine, or inputs it refuses
            out[r.judge] = {
                "messages": [],
                "note": f"cannot re-render the prompt here: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
            }
    return out


def row_page(state: ViewState, request: Request) -> Response:
    """GET /runs/{rid}/rows/{row}: one row's results, prompts, history and labels."""
    run = state.run_of(request)
    ri = int(request.path_params["row"])
    results = run.results_of_row(ri)
    if not results:
        raise KeyError(f"row {ri}")
    members = run.members()
    from ..params import integer
    from ..transcript import transcript_html, transcript_of

    t = transcript_of(run, ri, integer(request, "expand", 0))
    conv = "" if t is None else transcript_html(t, request.url.path)
    return HTMLResponse(
        pages.row_page(
            state.csrf, run.rid, ri, results, prompts_of(results, members), run.history(ri), state.domains(run), members, conv
        )
    )


def label_page(state: ViewState, request: Request) -> Response:
    """GET /runs/{rid}/label: keyboard labelling."""
    run = state.run_of(request)
    return HTMLResponse(pages.label_page(state.csrf, run.rid, run.judges(), state.domains(run)))


def agreement_page(state: ViewState, request: Request) -> Response:
    """GET /runs/{rid}/agreement: the agreement panel."""
    run = state.run_of(request)
    return HTMLResponse(pages.agreement_page(state.csrf, run.rid, run.judges()))


def compare_page(state: ViewState, request: Request) -> Response:
    """GET /compare?a=RID&b=RID: two runs side by side, with the human pass rate difference (view/compare_trust.py)."""
    from ..compare import compare

    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not a or not b:
        raise InputError("compare needs ?a=RUN&b=RUN (run ids from the list)")
    from ..compare_trust import compare_trust, difference_html

    base, new = state.runs.get(a), state.runs.get(b)
    deltas, changed, n = compare(base, new)
    return HTMLResponse(pages.compare_page(state.csrf, a, b, deltas, changed, n, difference_html(compare_trust(base, new))))
