"""The Starlette app of `localjudge view`: pages, the JSON API, the static files, behind the guard (security.py).

    GET  /                                  runs list            GET /api/runs
    GET  /runs/{rid}                        live rows view       GET /api/runs/{rid}/status, /api/runs/{rid}/rows
    GET  /runs/{rid}/rows/{row}             row detail           GET /api/runs/{rid}/row/{row}
    GET  /runs/{rid}/label                  keyboard labelling   GET /api/runs/{rid}/queue   POST /api/runs/{rid}/labels
    GET  /runs/{rid}/agreement              agreement panel      GET /api/runs/{rid}/agreement
                                                                 POST /api/runs/{rid}/align, GET /api/runs/{rid}/align
    GET  /compare?a=RID&b=RID               two runs side by side

Bad input answers 400 (unknown run or row: 404) with `{"error": "..."}` naming the parameter; never 500.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError, LocalJudgeError
from ..http_limits import BodyError, ClientGone, loads_bounded, read_body
from ..labels.store import Domain, judge_domain, validate_label_fields
from . import pages
from .queue import ORDERS, queue
from .runs import RunHandle, Runs
from .security import Guard

MAX_BODY_BYTES = 256 << 10  # a label body: a 10,000-character comment escaped as \uXXXX is 60 KB
MAX_JSON_DEPTH = 32  # a label body is one flat object


class ViewConfig:
    """What the app serves and how it is guarded."""

    def __init__(
        self,
        run_dirs: list[Path],
        runs_root: Path | None = None,
        api_key: str | None = None,
        allowed_hosts: set[str] | None = None,
        align_model: str | None = None,
        align_options: dict[str, Any] | None = None,
        max_connections: int = 512,
        header_timeout: float = 10.0,
        body_timeout: float = 30.0,
        max_body_bytes: int = MAX_BODY_BYTES,
    ):
        self.run_dirs, self.runs_root, self.api_key = run_dirs, runs_root, api_key
        self.allowed_hosts = allowed_hosts or set()
        self.align_model, self.align_options = align_model, align_options or {"n_threads": 1}
        self.csrf_token = secrets.token_urlsafe(24)
        # what a client may hold (http_limits): open connections, seconds for headers and for a body, body bytes
        self.max_connections, self.header_timeout, self.body_timeout = max_connections, header_timeout, body_timeout
        self.max_body_bytes = max_body_bytes


def create_app(config: ViewConfig) -> Any:
    """The ASGI app (the guard wrapping Starlette); `app.state_runs` holds the open runs (close them at exit)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    runs = Runs(config.run_dirs, config.runs_root)
    csrf = config.csrf_token
    aligns: dict[tuple[str, str], dict[str, Any]] = {}

    def err(status: int, text: str) -> JSONResponse:
        return JSONResponse({"error": text}, status_code=status)

    def handle(fn: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            from starlette.concurrency import run_in_threadpool

            try:
                return await run_in_threadpool(fn, request)
            except KeyError as e:
                return err(404, f"no such run or row: {e.args[0] if e.args else ''}; open / for the list of runs")
            except OverflowError:
                return err(400, "a number in the request is too large (row and page numbers fit in 64 bits)")
            except (InputError, ValueError) as e:
                return err(400, str(e).splitlines()[0] if str(e) else "bad request")
            except LocalJudgeError as e:
                return err(400, str(e))
            except sqlite3.Error as e:  # a store damaged or replaced after the view opened it
                return err(503, f"the run's store cannot be read now ({_first_line(e)}); see / for the runs")

        return endpoint

    def run_of(request: Request) -> RunHandle:
        return runs.get(request.path_params["rid"])

    def int_param(request: Request, name: str, default: int) -> int:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return default
        try:
            return int(raw)
        except ValueError:
            raise InputError(f"parameter {name!r} must be an integer, got {raw!r}") from None

    def domains(run: RunHandle) -> dict[str, Domain]:
        out: dict[str, Domain] = {}
        for j in run.judges():
            key = ("domain", j)
            if key in run._cache:
                out[j] = run._cache[key]
                continue
            with run.conn() as c:
                ris = [
                    r[0]
                    for r in c.execute("SELECT row_index FROM results WHERE run_id = ? AND judge = ? LIMIT 20", (run.run_id(), j))
                ]
            dom = judge_domain(run.results_of_cells(j, ris))
            if dom is not None:
                out[j] = run._cache[key] = dom
        return out

    # ----------------------------------------------------------------------------------------- pages

    def index(request: Request) -> Response:
        if config.api_key and request.query_params.get("key"):
            resp = RedirectResponse("/", status_code=303)
            return resp
        return HTMLResponse(pages.runs_page(csrf, runs.listing()))

    def run_page(request: Request) -> Response:
        from .panels import run_figures

        run = run_of(request)
        run.search_index()  # a run that registered after the view opened it: its index is queued now
        return HTMLResponse(pages.run_page(csrf, run.status(), run_figures(run.meta())))

    def prompts_of(results: list[Any], members: dict[str, list[str]]) -> dict[str, Any]:
        from ..judges import get_judge
        from ..judges.pairwise import BOTH_ORDERS_SUFFIX, BothOrders

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

    def row_page(request: Request) -> Response:
        run = run_of(request)
        ri = int(request.path_params["row"])
        results = run.results_of_row(ri)
        if not results:
            raise KeyError(f"row {ri}")
        return HTMLResponse(
            pages.row_page(
                csrf, run.rid, ri, results, prompts_of(results, run.members()), run.history(ri), domains(run), run.members()
            )
        )

    def label_page(request: Request) -> Response:
        run = run_of(request)
        return HTMLResponse(pages.label_page(csrf, run.rid, run.judges(), domains(run)))

    def agreement_page(request: Request) -> Response:
        run = run_of(request)
        return HTMLResponse(pages.agreement_page(csrf, run.rid, run.judges()))

    def compare_page(request: Request) -> Response:
        from .compare import compare

        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        if not a or not b:
            raise InputError("compare needs ?a=RUN&b=RUN (run ids from the list)")
        deltas, changed, n = compare(runs.get(a), runs.get(b))
        return HTMLResponse(pages.compare_page(csrf, a, b, deltas, changed, n))

    # ------------------------------------------------------------------------------------------ API

    def api_runs(request: Request) -> Response:
        return JSONResponse(runs.listing())

    def api_status(request: Request) -> Response:
        from .panels import run_figures

        run = run_of(request)
        return JSONResponse({**run.status(), "trust": run_figures(run.meta())})

    def api_rows(request: Request) -> Response:
        q = request.query_params
        page = run_of(request).rows(
            judge=q.get("judge") or None,
            status=q.get("status") or None,
            q=q.get("q") or None,
            sort=q.get("sort") or "row",
            page=int_param(request, "page", 1),
            per=int_param(request, "per", 50),
        )
        return JSONResponse(page)

    def api_row(request: Request) -> Response:
        run = run_of(request)
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

    def api_queue(request: Request) -> Response:
        run = run_of(request)
        q = request.query_params
        judge, order = q.get("judge", ""), q.get("order", "uncertain")
        if judge not in run.judges():
            raise InputError(f"parameter judge={judge!r} is not a judge of this run ({', '.join(run.judges())})")
        if order not in ORDERS:
            raise InputError(f"parameter order={order!r} is not one of {', '.join(ORDERS)}")
        order_rows = queue(run, judge, order, int_param(request, "seed", 0))
        every = run.labels(judge)
        labels = {k: lab for k, lab in every.items() if not lab.stale}  # a stale label's row asks for a new label
        pos = q.get("pos")
        if pos in (None, "", "next"):  # the first unlabelled row of the queue
            i = next((k for k, ri in enumerate(order_rows) if (ri, judge) not in labels), len(order_rows))
        else:
            i = int_param(request, "pos", 0)
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
                from .panels import members_of_page

                with run.conn() as c:
                    item.update(members_of_page(c, run.run_id() or "", members, [(ri, judge)]).get((ri, judge), {}))
            if isinstance(res.result.details.get("cascade"), dict):
                item["cascade"] = res.result.details["cascade"]
        n_done = len(labels)  # a label needs a result of this judge: every labelled cell is in the queue
        return JSONResponse({"order": order, "judge": judge, "pos": i, "n": len(order_rows), "n_labelled": n_done, "item": item})

    async def api_label(request: Request) -> Response:
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
            run = run_of(request)
            judge = body.get("judge")
            if judge not in run.judges():
                raise InputError(f"field judge={judge!r} is not a judge of this run")
            f = validate_label_fields(body, domains(run).get(judge), judge)
            ri, value, comment, labeller, sample = f.row_index, f.value, f.comment, f.labeller, f.sample
            lab = run.add_label(ri, judge, value, comment, labeller, sample)
            return JSONResponse(lab.model_dump(mode="json"))

        return await handle(write)(request)

    def api_agreement(request: Request) -> Response:
        from .stats import agreement

        return JSONResponse(agreement(run_of(request), request.query_params.get("judge", "")))

    async def api_align(request: Request) -> Response:
        def go(request: Request) -> Response:
            run = run_of(request)
            judge = request.query_params.get("judge", "")
            if judge not in run.judges():
                raise InputError(f"parameter judge={judge!r} is not a judge of this run")
            key = (run.rid, judge)
            if request.method == "GET":
                return JSONResponse(aligns.get(key) or {"state": "none"})
            if (aligns.get(key) or {}).get("state") == "running":
                return JSONResponse(aligns[key], status_code=409)
            aligns[key] = {"state": "running"}
            threading.Thread(target=_align_job, args=(run, judge, config, aligns, key), daemon=True).start()
            return JSONResponse(aligns[key], status_code=202)

        return await handle(go)(request)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        types = {"view.js": "text/javascript; charset=utf-8", "view.css": "text/css; charset=utf-8"}
        if name not in types:
            return err(404, f"no static file {name!r}")
        text = resources.files("localjudge.view").joinpath("static").joinpath(name).read_text(encoding="utf-8")
        return Response(text, media_type=types[name])

    routes = [
        Route("/", handle(index)),
        Route("/runs/{rid}", handle(run_page)),
        Route("/runs/{rid}/rows/{row:int}", handle(row_page)),
        Route("/runs/{rid}/label", handle(label_page)),
        Route("/runs/{rid}/agreement", handle(agreement_page)),
        Route("/compare", handle(compare_page)),
        Route("/api/runs", handle(api_runs)),
        Route("/api/runs/{rid}/status", handle(api_status)),
        Route("/api/runs/{rid}/rows", handle(api_rows)),
        Route("/api/runs/{rid}/row/{row:int}", handle(api_row)),
        Route("/api/runs/{rid}/queue", handle(api_queue)),
        Route("/api/runs/{rid}/labels", api_label, methods=["POST"]),
        Route("/api/runs/{rid}/agreement", handle(api_agreement)),
        Route("/api/runs/{rid}/align", api_align, methods=["GET", "POST"]),
        Route("/static/{name}", static),
    ]
    app = Starlette(routes=routes)
    guarded = Guard(app, config.allowed_hosts, csrf, config.api_key)
    guarded.state_runs = runs  # type: ignore[attr-defined]
    return guarded


LABEL_FIELDS = "{row_index, judge, value, labeller, sample, comment}"


def _first_line(e: BaseException) -> str:
    return (str(e).splitlines()[0] if str(e) else type(e).__name__)[:200]


def _align_job(run: RunHandle, judge: str, config: ViewConfig, aligns: dict[Any, Any], key: Any) -> None:
    """`align` on the labels so far (in a thread): the report, or the one-line error, lands in `aligns[key]`."""
    import tempfile

    from ..align.aligner import align
    from ..align.text import render_report
    from ..labels.store import labels_file_for

    try:
        out = run.path / "aligned" / judge
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            labels = labels_file_for(run.path, judge, Path(tmp) / "labels.jsonl")
            model = config.align_model or str(run.meta().get("model_id") or "") or None
            # thread settings are llama.cpp options: not for a scripted or server model
            opts = None if model and model.startswith(("scripted:", "server:")) else config.align_options
            rep = align(judge, labels, out=out, model=model, model_options=opts)
        aligns[key] = {"state": "done", "text": render_report(rep), "report": rep.model_dump(mode="json")}
    except Exception as e:  # shown in the panel: the labels, the model or the judge cannot be aligned
        aligns[key] = {"state": "failed", "error": str(e).splitlines()[0] if str(e) else type(e).__name__}
