"""Labelling from the browser: the queue of cells to label (in an order), writing a label, and aligning the
judge on the labels so far (a background thread per run and judge)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...errors import InputError
from ...http import BodyError, ClientGone, loads_bounded, read_body
from ...labels.store import validate_label_fields
from .. import pages
from ..active import active_plan
from ..params import integer
from ..queue import ORDERS, queue
from ..runs import RunHandle
from ..state import ViewConfig, ViewState
from .base import err, handle

MAX_JSON_DEPTH = 32  # a label body is one flat object
LABEL_FIELDS = "{row_index, judge, value, labeller, sample, comment, probability, scope}"


def next_item(state: ViewState, request: Request) -> Response:
    """GET /api/runs/{rid}/queue?judge=J&order=O[&pos=N|next]: the queue's length, how many are labelled,
    and the item at `pos` (default: the first unlabelled one) with its verdict and label."""
    run = state.run_of(request)
    q = request.query_params
    judge, order = q.get("judge", ""), q.get("order", "uncertain")
    if judge not in run.judges():
        raise InputError(f"parameter judge={judge!r} is not a judge of this run ({', '.join(run.judges())})")
    if order not in ORDERS:
        raise InputError(f"parameter order={order!r} is not one of {', '.join(ORDERS)}")
    budget = integer(request, "budget", 0) or None
    order_rows = queue(run, judge, order, integer(request, "seed", 0), budget=budget)
    every = run.labels(judge)
    labels = {k: lab for k, lab in every.items() if not lab.stale}  # a stale label's row asks for a new label
    pos = q.get("pos")
    if pos in (None, "", "next"):  # the first unlabelled row of the queue
        i = next((k for k, ri in enumerate(order_rows) if (ri, judge) not in labels), len(order_rows))
    else:
        i = integer(request, "pos", 0)
    i = max(0, min(i, max(0, len(order_rows) - 1)))
    item = None
    if order_rows:
        ri = order_rows[i]
        res = run.results_of_cells(judge, [ri])[0]
        lab = every.get((ri, judge))
        item = {
            "row_index": ri,
            "row_id": res.row_id,
            "inputs": res.inputs,
            "value": res.result.value,
            "score": res.result.score,
            "expected_score": res.result.expected_score,
            "passed": res.result.passed,
            "verdict": pages.verdict_text(res.result),
            "rationale": res.result.rationale,
            "unscored_reason": res.result.unscored_reason,
            "label": None if lab is None else lab.value,
            "comment": None if lab is None else lab.comment,
            "stale_label": lab is not None and lab.stale,
        }
        members = run.members()
        if judge in members:
            from ..panels import members_of_page

            with run.conn() as c:
                item.update(members_of_page(c, run.run_id() or "", members, [(ri, judge)]).get((ri, judge), {}))
        if order == "active":  # the probability the label stores (the estimates weight it by 1 / probability)
            item["probability"] = active_plan(run, judge, integer(request, "seed", 0), budget).probability[ri]
        from ..transcript import transcript_of

        t = transcript_of(run, ri)
        if t is not None:  # a conversation: the label card shows it as a chat transcript
            item["transcript"] = t.model_dump()
        item.update(_session_of(run, ri, judge))
        if isinstance(res.result.details.get("cascade"), dict):
            item["cascade"] = res.result.details["cascade"]
    n_done = len(labels)  # a label needs a result of this judge: every labelled cell is in the queue
    return JSONResponse({"order": order, "judge": judge, "pos": i, "n": len(order_rows), "n_labelled": n_done, "item": item})


def _session_of(run: RunHandle, row_index: int, judge: str) -> dict[str, Any]:
    """A turn's conversation and its session label (store/session_labels.py) for the label card: `conversation_id`,
    `session_label`, `session_stale`; {} for a row that is not a turn of a conversation (a session-level run's
    row is the conversation itself: its row label is the session's)."""
    from ...store.session_labels import latest_session_labels, row_place

    rid = run.run_id() or ""
    with run.conn() as c:
        place = row_place(c, rid, row_index, judge)
        if place is None or place[0] is None or not place[1]:
            return {}
        conversation = place[0]
        lab = latest_session_labels(c, rid, judge, conversation).get((conversation, judge))
    return {
        "conversation_id": conversation,
        "session_label": None if lab is None else lab.value,
        "session_stale": bool(lab and lab.stale),
    }


async def add_label(state: ViewState, request: Request) -> Response:
    """POST /api/runs/{rid}/labels: one label (the body read within the view's size and time limits); with
    `scope: "session"` the label of the whole conversation of the turn `row_index` (store/session_labels.py)."""
    config = state.config
    try:
        data = await read_body(request, config.max_body_bytes, config.body_timeout)
        body = loads_bounded(data, MAX_JSON_DEPTH)
    except ClientGone:
        return Response(status_code=499)
    except BodyError as e:
        text = e.message if e.code != "invalid_json" else f"body must be JSON: {LABEL_FIELDS} ({e.message})"
        return JSONResponse({"error": text}, status_code=e.status, headers={"Connection": "close"} if e.close else None)
    if not isinstance(body, dict):
        return err(400, "body must be a JSON object: {row_index, judge, value, labeller, sample, comment}")

    def write(request: Request) -> Response:
        run = state.run_of(request)
        judge = body.get("judge")
        if judge not in run.judges():
            raise InputError(f"field judge={judge!r} is not a judge of this run")
        scope = body.get("scope", "row")
        if scope not in ("row", "session"):
            raise InputError(f"field scope={str(scope)[:40]!r} is not 'row' (this row's label) or 'session' (its conversation's)")
        f = validate_label_fields(body, state.domains(run).get(judge), judge)
        ri, value, comment, labeller, sample = f.row_index, f.value, f.comment, f.labeller, f.sample
        if scope == "session":  # the whole conversation of row ri (store/session_labels.py): no sampling probability
            if f.probability is not None:
                raise InputError("field probability is for a row's label only; leave it out of a session label")
            return JSONResponse(run.session_label(ri, judge, value, comment, labeller, sample).model_dump(mode="json"))
        lab = run.add_label(ri, judge, value, comment, labeller, sample, f.probability)
        return JSONResponse(lab.model_dump(mode="json"))

    return await handle(write)(request)


async def alignment(state: ViewState, request: Request) -> Response:
    """GET /api/runs/{rid}/align?judge=J: the alignment's state; POST: start one (409 while one runs)."""

    def go(request: Request) -> Response:
        run = state.run_of(request)
        judge = request.query_params.get("judge", "")
        if judge not in run.judges():
            raise InputError(f"parameter judge={judge!r} is not a judge of this run")
        aligns = state.aligns
        key = (run.rid, judge)
        if request.method == "GET":
            return JSONResponse(aligns.get(key) or {"state": "none"})
        if (aligns.get(key) or {}).get("state") == "running":
            return JSONResponse(aligns[key], status_code=409)
        aligns[key] = {"state": "running"}
        threading.Thread(target=_align_job, args=(run, judge, state.config, aligns, key), daemon=True).start()
        return JSONResponse(aligns[key], status_code=202)

    return await handle(go)(request)


def _align_job(run: RunHandle, judge: str, config: ViewConfig, aligns: dict[Any, Any], key: Any) -> None:
    """`align` on the labels so far (in a thread): the report, or the one-line error, lands in `aligns[key]`."""
    import tempfile

    from ...align.aligner import align
    from ...align.text import render_report
    from ...labels.store import labels_file_for

    try:
        out = run.path / "aligned" / judge
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            labels = labels_file_for(run.path, judge, Path(tmp) / "labels.jsonl")
            model = config.align_model or (run.record().model_id or None)
            # thread settings are llama.cpp options: not for a scripted or server model
            opts = None if model and model.startswith(("scripted:", "server:")) else config.align_options
            rep = align(judge, labels, out=out, model=model, model_options=opts)
        aligns[key] = {"state": "done", "text": render_report(rep), "report": rep.model_dump(mode="json")}
    except Exception as e:  # shown in the panel: the labels, the model or the judge cannot be aligned
        aligns[key] = {"state": "failed", "error": str(e).splitlines()[0] if str(e) else type(e).__name__}
