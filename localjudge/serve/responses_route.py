"""`POST /v1/responses`: the handler (the request becomes a chat request, `responses.to_chat`, and takes the
chat pipeline: plan, limits, format compile, the engine worker) and its event stream.

Streamed, it sends OpenAI's events in order: `response.created`, `response.in_progress`; for a reasoning
request the reasoning item (`output_item.added`, `reasoning_text.delta`..., `reasoning_text.done`,
`output_item.done`); then the message (`output_item.added`, `content_part.added`, `output_text.delta` as
tokens arrive, with their logprobs when asked, `output_text.done`, `content_part.done`,
`output_item.done`) or, for a tool answer, the function call whole at the end
(`function_call_arguments.delta`/`.done`); last `response.completed` (or `response.incomplete`). The
concatenated deltas equal the non-streamed response's texts.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..constraints.sandbox import CompileRefused
from ..engine.base import TokenInfo
from ..engine.worker import WorkerBusy
from ..formats import OutputFormat, SchemaError
from ..http_limits import ClientGone
from . import protocol, responses
from .errors import APIError, bad_request, from_exception
from .reasoning import ThinkSplit, split_reasoning
from .wire_responses import FunctionCallOut, MessageOut, OutputText, ReasoningOut, ReasoningText, ResponseEvent

if TYPE_CHECKING:
    from .app import ServerState

log = logging.getLogger("localjudge.serve")


async def create_response(state: ServerState, request: Request) -> Response:
    """A response (JSON, or SSE events when `stream`), every failure an OpenAI-shaped error naming the
    Responses parameter."""
    from .routes import error

    try:
        return await _respond(state, request)
    except APIError as e:
        if e.status == 429:
            state.counters.refused_busy += 1
        return error(responses.renamed(e))
    except ClientGone:
        state.counters.cancelled += 1
        return Response(status_code=499)
    except Exception as e:  # noqa: BLE001 - mapped, or a bug (500)
        api = from_exception(e)
        if api is not None:
            return error(responses.renamed(api))
        state.counters.errors += 1
        log.exception("unexpected error serving a response")
        return error(APIError(500, f"internal error ({type(e).__name__}); see the server log", type="server_error"))


async def _respond(state: ServerState, request: Request) -> Response:
    from .routes import _body, _call_soon, _check_key, _disconnected, answer

    _check_key(state, request)
    body = await _body(request, state.config.max_body_bytes, state.config.body_timeout, state.stopping)
    req = responses.parse(body)
    chat = responses.to_chat(req)
    if chat.model != state.model_name:
        raise APIError(
            404,
            f"the model {chat.model!r} does not exist; this server serves {state.model_name!r}",
            param="model",
            code="model_not_found",
        )
    p = await asyncio.to_thread(protocol.plan, chat, field_tokens=state.config.field_tokens)
    chars = sum(len(m.content) for m in p.messages)
    if chars > state.max_prompt_chars:
        raise APIError(
            400,
            f"input: {chars} characters, more than fit this model's {state.engine.n_ctx}-token context; shorten it",
            param="input",
            code="context_length_exceeded",
        )
    busy = state.worker.pending + state.formats.waiting
    if busy >= state.config.max_pending:
        msg = f"{busy} requests are already queued or compiling (limit {state.config.max_pending})"
        raise from_exception(WorkerBusy(msg)) or APIError(429, msg)
    fmt = await _format(state, p)
    loop = asyncio.get_running_loop()
    cancel, accepted = threading.Event(), asyncio.Event()
    tokens: asyncio.Queue[list[TokenInfo]] = asyncio.Queue()

    def on_tokens(new: list[TokenInfo]) -> None:
        loop.call_soon_threadsafe(tokens.put_nowait, new)

    fut = state.submit(p, fmt, cancel, on_tokens if p.stream else None, lambda: _call_soon(loop, accepted.set))
    afut: asyncio.Future[Any] = asyncio.wrap_future(fut)
    gone: asyncio.Future[Any] = asyncio.ensure_future(_disconnected(request))
    rid = responses.response_id()
    waits: list[asyncio.Future[Any]] = [afut, gone]
    started = asyncio.ensure_future(accepted.wait()) if p.stream else None
    try:
        await asyncio.wait([*waits, started] if started else waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if started is not None:
            started.cancel()
        if not p.stream:
            gone.cancel()
    if gone.done() and not afut.done():
        cancel.set()
        state.counters.cancelled += 1
        return Response(status_code=499)
    if not p.stream or (afut.done() and afut.exception() is not None):
        gone.cancel()
        gen = afut.result()  # an exception here is mapped by the caller
        state.counters.completed += 1
        return answer(responses.response(req, p, gen, rid, state.model_name, state.pieces))
    return StreamingResponse(
        _events(state, req, p, afut, tokens, cancel, gone, rid),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _format(state: ServerState, p: protocol.Plan) -> OutputFormat:
    if p.schema is None:
        return p.fmt if p.fmt is not None else state.text_format
    param = "tools" if p.tool_mode != "none" else "text.format"
    try:
        fmt = await asyncio.to_thread(state.formats.get, p.schema, p.schema_name)
        await state.formats.ready(fmt)
    except SchemaError as e:
        raise bad_request(str(e), param=param) from None
    except CompileRefused as e:
        raise bad_request(f"response schema refused: {e}", param=param) from None
    return fmt


class _Events:
    """Numbers the events of one stream and writes each as SSE (`event:` line, then `data:`)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, type: str, **fields: Any) -> bytes:
        ev = ResponseEvent(type=type, sequence_number=self.n, **fields)
        self.n += 1
        data = json.dumps(ev.body(), ensure_ascii=False)
        return f"event: {type}\ndata: {data}\n\n".encode()


async def _events(
    state: ServerState,
    req: Any,
    p: protocol.Plan,
    afut: asyncio.Future[Any],
    tokens: asyncio.Queue[list[TokenInfo]],
    cancel: threading.Event,
    gone: asyncio.Future[Any],
    rid: str,
) -> AsyncIterator[bytes]:
    ev = _Events()
    resp = responses.shell(req, rid, state.model_name)
    hold = max((len(s) for s in p.options.stop), default=1) - 1
    split = ThinkSplit(hold) if p.options.think_tokens else None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    as_text = p.tool_mode == "none"
    text, said, sent = "", 0, 0
    rs: ReasoningOut | None = ReasoningOut(id=responses.item_id("rs"), content=[]) if split is not None else None
    rs_id = rs.id if rs is not None else ""
    msg = MessageOut(id=responses.item_id("msg"), status="in_progress", content=[])
    index = 0  # the output index of the item being written
    rs_open = msg_open = False
    finished = False
    try:
        yield ev("response.created", response=resp)
        yield ev("response.in_progress", response=resp)
        while True:
            getter: asyncio.Future[Any] = asyncio.ensure_future(tokens.get())
            await asyncio.wait([getter, afut, gone], return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
            if gone.done():
                return
            new = getter.result() if getter.done() and not getter.cancelled() else []
            while not tokens.empty():
                new = new + tokens.get_nowait()
            for t in new:
                text += decoder.decode(state.pieces[t.id] if state.pieces is not None else t.text.encode())
            reasoning, content = split.parts(text) if split is not None else ("", text[: max(0, len(text) - hold)])
            if rs is not None and len(reasoning) > said:
                if not rs_open:
                    rs_open = True
                    yield ev("response.output_item.added", output_index=index, item=rs)
                yield ev(
                    "response.reasoning_text.delta", item_id=rs.id, output_index=index, content_index=0, delta=reasoning[said:]
                )
                said = len(reasoning)
            if as_text and len(content) > sent:
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
                lp = responses.token_logprobs(p, new, state.pieces) if not p.options.think_tokens else []
                yield ev(
                    "response.output_text.delta",
                    item_id=msg.id,
                    output_index=index,
                    content_index=0,
                    delta=content[sent:],
                    logprobs=lp,
                )
                sent = len(content)
            if afut.done() and tokens.empty():
                break
        gen = afut.result()
        reasoning_all, answer = split_reasoning(gen.text) if split is not None else (None, gen.text)
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
                yield ev(
                    "response.content_part.added", item_id=msg.id, output_index=index, content_index=0, part=OutputText(text="")
                )
            if len(answer) > sent:
                yield ev(
                    "response.output_text.delta",
                    item_id=msg.id,
                    output_index=index,
                    content_index=0,
                    delta=answer[sent:],
                    logprobs=[],
                )
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
        finished = True
        state.counters.completed += 1
    except Exception as e:  # noqa: BLE001 - the stream has begun: the error goes into it
        api = from_exception(e) or APIError(500, f"internal error ({type(e).__name__})", type="server_error")
        if api.status >= 500:
            log.exception("error while streaming a response")
        api = responses.renamed(api)
        yield ev("error", code=api.code, message=api.message, param=api.param)
        finished = True
    finally:
        gone.cancel()
        if not finished:
            cancel.set()
            state.counters.cancelled += 1


def _close_reasoning(ev: _Events, rs: ReasoningOut | None, opened: bool, index: int, text: str) -> list[bytes]:
    """The events that end the reasoning item (none when it never opened)."""
    if rs is None or not opened:
        return []
    rs.content = [ReasoningText(text=text)]
    return [
        ev("response.reasoning_text.done", item_id=rs.id, output_index=index, content_index=0, text=text),
        ev("response.output_item.done", output_index=index, item=rs),
    ]
