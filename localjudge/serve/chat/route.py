"""`POST /v1/chat/completions`: the handler. The request is parsed and planned once (`core.plan`, `core.generate`:
served name and aliases, the catalog contracts, limits, format compile) and run on the engine worker; the answer is
one `ChatCompletion` (chat/answer.py), or SSE chunks as tokens arrive when `stream` (chat/stream.py).

Every failure is an OpenAI-shaped error (`core.handling.error`; localjudge's own exceptions mapped by
`core.errors.from_exception`, a bug a 500 with its traceback logged: `core.generate.handle`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..core import generate
from ..core import plan as protocol
from ..core.handling import answer, check_key, error, request_body
from .answer import completion, completion_id
from .stream import sse, stream_chunks

if TYPE_CHECKING:
    from ..core.state import ServerState


async def chat(state: ServerState, request: Request) -> Response:
    """A chat completion (JSON, or SSE chunks when `stream`), every failure an OpenAI-shaped error."""
    return await generate.handle(state, generate.CHAT, _chat(state, request), error)


async def _chat(state: ServerState, request: Request) -> Response:
    check_key(state, request)
    body = await request_body(request, state.config.max_body_bytes, state.config.body_timeout, state.stopping)
    req = protocol.parse_request(body)
    generate.check_model(state, req.model, generate.CHAT)
    p = await generate.plan(state, req)
    if not p.stream:
        gen = await generate.run_plan(state, request, p, generate.CHAT)
        done = answer(completion(p, gen, completion_id(), state.model_name, state.fingerprint_of(p), state.pieces))
        done.headers.update(generate.headers(p))
        return done
    job = await generate.submit(state, request, p, generate.CHAT)
    return StreamingResponse(
        generate.guarded(state, job, stream_chunks(state, job, completion_id()), lambda e: sse(e.wire())),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **generate.headers(p)},
    )
