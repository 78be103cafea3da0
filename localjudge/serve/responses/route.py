"""`POST /v1/responses`: the handler (the request becomes a chat request, `responses.to_chat`, and takes the
chat pipeline, `generate`: served name and aliases, plan with the catalog contracts, limits, format compile,
the engine worker) and its event stream.

Streamed, it sends OpenAI's events in order: `response.created`, `response.in_progress`; for a reasoning
request the reasoning item (`output_item.added`, `reasoning_text.delta`..., `reasoning_text.done`,
`output_item.done`); then the message (`output_item.added`, `content_part.added`, `output_text.delta` as
tokens arrive, with their logprobs when asked, `output_text.done`, `content_part.done`,
`output_item.done`) or, for a tool answer, the function call whole at the end
(`function_call_arguments.delta`/`.done`); last `response.completed` (or `response.incomplete`). The
concatenated deltas equal the non-streamed response's texts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..core import generate
from ..core.errors import APIError
from . import translate as responses
from .wire import FunctionCallOut, MessageOut, OutputText, ReasoningOut, ReasoningText, ResponseEvent

if TYPE_CHECKING:
    from ..core.state import ServerState


async def create_response(state: ServerState, request: Request) -> Response:
    """A response (JSON, or SSE events when `stream`), every failure an OpenAI-shaped error naming the
    Responses parameter."""
    from ..core.handling import error

    return await generate.handle(state, generate.RESPONSES, _respond(state, request), lambda e: error(responses.renamed(e)))


async def _respond(state: ServerState, request: Request) -> Response:
    from ..core.handling import answer, check_key, request_body

    check_key(state, request)
    body = await request_body(request, state.config.max_body_bytes, state.config.body_timeout, state.stopping)
    req = responses.parse(body)
    chat = responses.to_chat(req)
    generate.check_model(state, chat.model, generate.RESPONSES)
    p = await generate.plan(state, chat)
    rid = responses.response_id()
    if not p.stream:
        gen = await generate.run_plan(state, request, p, generate.RESPONSES)
        done = answer(responses.response(req, p, gen, rid, state.model_name, state.pieces))
        done.headers.update(generate.headers(p))
        return done
    job = await generate.submit(state, request, p, generate.RESPONSES)
    ev = _Events()
    return StreamingResponse(
        generate.guarded(state, job, _events(state, req, job, rid, ev), lambda e: _error(ev, e)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **generate.headers(p)},
    )


def _error(ev: _Events, e: APIError) -> bytes:
    api = responses.renamed(e)
    return ev("error", code=api.code, message=api.message, param=api.param)


class _Events:
    """Numbers the events of one stream and writes each as SSE (`event:` line, then `data:`)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, type: str, **fields: Any) -> bytes:
        ev = ResponseEvent(type=type, sequence_number=self.n, **fields)
        self.n += 1
        data = json.dumps(ev.body(), ensure_ascii=False)
        return f"event: {type}\ndata: {data}\n\n".encode()


async def _events(state: ServerState, req: Any, job: generate.Job, rid: str, ev: _Events) -> AsyncIterator[bytes]:
    p = job.plan
    resp = responses.shell(req, rid, state.model_name)
    as_text = p.tool_mode == "none"
    text = generate.Tokens(job, state.pieces, as_text)
    thinks = bool(p.options.think_tokens)
    rs: ReasoningOut | None = ReasoningOut(id=responses.item_id("rs"), content=[]) if thinks else None
    rs_id = rs.id if rs is not None else ""
    msg = MessageOut(id=responses.item_id("msg"), status="in_progress", content=[])
    index = 0  # the output index of the item being written
    rs_open = msg_open = False
    reasoning = ""  # the reasoning text given out so far
    yield ev("response.created", response=resp)
    yield ev("response.in_progress", response=resp)
    async for step in text:
        reasoning += step.reasoning
        if rs is not None and step.reasoning:
            if not rs_open:
                rs_open = True
                yield ev("response.output_item.added", output_index=index, item=rs)
            yield ev("response.reasoning_text.delta", item_id=rs.id, output_index=index, content_index=0, delta=step.reasoning)
        if step.content:
            if not msg_open:
                for chunk in _close_reasoning(ev, rs, rs_open, index, reasoning):
                    yield chunk
                index += rs is not None
                rs = None
                msg_open = True
                yield ev("response.output_item.added", output_index=index, item=msg)
                yield ev(
                    "response.content_part.added",
                    item_id=msg.id,
                    output_index=index,
                    content_index=0,
                    part=OutputText(text=""),
                )
            lp = responses.token_logprobs(p, step.tokens, state.pieces) if not thinks else []
            yield _text_delta(ev, msg.id, index, step.content, lp)
    gen, reasoning_all, answer = text.final()
    said, sent = len(reasoning), text.sent
    items = responses.output(p, gen, reasoning_all, answer, state.pieces)
    if isinstance(items[0], ReasoningOut):
        items[0].id = rs_id  # the completed response names the items the events named
    if rs is not None:
        if not rs_open:
            rs_open = True
            yield ev("response.output_item.added", output_index=index, item=rs)
        if len(reasoning_all or "") > said:
            rest = (reasoning_all or "")[said:]
            yield ev("response.reasoning_text.delta", item_id=rs.id, output_index=index, content_index=0, delta=rest)
        for chunk in _close_reasoning(ev, rs, rs_open, index, reasoning_all or ""):
            yield chunk
        index += 1
    last = items[-1]
    if isinstance(last, FunctionCallOut):
        last.id = msg.id.replace("msg_", "fc_")
        yield ev(
            "response.output_item.added",
            output_index=index,
            item=last.model_copy(update={"status": "in_progress", "arguments": ""}),
        )
        yield ev("response.function_call_arguments.delta", item_id=last.id, output_index=index, delta=last.arguments)
        yield ev("response.function_call_arguments.done", item_id=last.id, output_index=index, arguments=last.arguments)
    else:
        assert isinstance(last, MessageOut)
        last.id = msg.id
        if not msg_open:
            yield ev("response.output_item.added", output_index=index, item=msg)
            yield ev("response.content_part.added", item_id=msg.id, output_index=index, content_index=0, part=OutputText(text=""))
        if len(answer) > sent:
            yield _text_delta(ev, msg.id, index, answer[sent:], [])
        part = last.content[0]
        yield ev(
            "response.output_text.done",
            item_id=msg.id,
            output_index=index,
            content_index=0,
            text=part.text,
            logprobs=part.logprobs,
        )
        yield ev("response.content_part.done", item_id=msg.id, output_index=index, content_index=0, part=part)
    yield ev("response.output_item.done", output_index=index, item=last)
    done = responses.finish(resp, gen, items)
    yield ev("response.completed" if done.status == "completed" else "response.incomplete", response=done)


def _text_delta(ev: _Events, item_id: str, index: int, delta: str, logprobs: list[Any]) -> bytes:
    return ev("response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=delta, logprobs=logprobs)


def _close_reasoning(ev: _Events, rs: ReasoningOut | None, opened: bool, index: int, text: str) -> list[bytes]:
    """The events that end the reasoning item (none when it never opened)."""
    if rs is None or not opened:
        return []
    rs.content = [ReasoningText(text=text)]
    return [
        ev("response.reasoning_text.done", item_id=rs.id, output_index=index, content_index=0, text=text),
        ev("response.output_item.done", output_index=index, item=rs),
    ]
