"""One generation for serve's three generation routes (`/v1/chat/completions`, `/v1/responses`, Ollama's
`/api/chat` and `/api/generate`): the served-name check (aliases too), the plan off the event loop (with
the catalog contracts and the alias contracts: `plan.plan`), the prompt-size and queue limits, the
output format's compile, the submit to the engine worker, the wait for the answer or the client's leaving,
and the counters. Each route keeps only its wire shapes (its request's translation to a `ChatRequest`, its
answer, its stream's events) and its wording (`Route`).

`handle` turns what a route raises into its error answer; `submit`/`run_plan` queue a plan; `Tokens` is the
hold-back loop every stream reads (text that may still begin a stop sequence or a closing think marker is
held back) and `guarded` the counters and cancel around a stream.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from ...constraints import isolation
from ...constraints.sandbox import CompileRefused
from ...engine.base import Generation, TokenInfo
from ...engine.worker import WorkerBusy
from ...formats import OutputFormat, SchemaError
from ...http import ClientGone
from . import plan as protocol
from .errors import APIError, bad_request, from_exception
from .reasoning import ThinkSplit, split_reasoning
from .wire import ChatRequest

if TYPE_CHECKING:
    from .state import ServerState

log = logging.getLogger("localjudge.serve")
CONTRACT = "X-Localjudge-Contract"


@dataclass(frozen=True)
class Route:
    """How one route words its errors (each keeps its own bytes on the wire). The templates are filled with
    `str.format`: `unknown` with {name} and {served}, `too_long` with {chars} and {n_ctx}, `bad_schema` and
    `refused` with {e}."""

    what: str  # for the server log: "a chat completion"
    unknown: str
    model_param: str | None
    too_long: str
    prompt_param: str
    format_param: str
    bad_schema: str = "{e}"
    refused: str = "response schema refused: {e}"
    tools_prefix: str = ""  # set: the words of a schema error when the constraint holds the request's tools
    latest: bool = False  # NAME:latest names NAME (Ollama's tags)


CHAT = Route(
    "a chat completion",
    "the model {name!r} does not exist; this server serves {served!r}",
    "model",
    "the messages are {chars} characters, more than fit this model's {n_ctx}-token context; shorten them",
    "messages",
    "response_format",
)
RESPONSES = Route(
    "a response",
    CHAT.unknown,
    "model",
    "input: {chars} characters, more than fit this model's {n_ctx}-token context; shorten it",
    "input",
    "text.format",
)
OLLAMA = Route(
    "an Ollama request",
    "model {name!r} not found; this server serves {served!r}",
    None,
    "messages: {chars} characters, more than fit this model's {n_ctx}-token context; shorten them",
    "messages",
    "format",
    bad_schema="format: {e}",
    refused="format: the schema is refused: {e}",
    tools_prefix="tools (or format): ",
    latest=True,
)


async def handle(state: ServerState, route: Route, serve: Awaitable[Response], error: Callable[[APIError], Response]) -> Response:
    """`serve`'s response; what it raises as `error` renders it (a bug: a 500, its traceback logged); a
    client that left: 499."""
    try:
        return await serve
    except APIError as e:
        if e.status == 429:
            state.counters.refused_busy += 1
        return error(e)
    except ClientGone:  # a normal event: no traceback, not an error
        state.counters.cancelled += 1
        return Response(status_code=499)
    except Exception as e:  # noqa: BLE001 - mapped, or a bug (500)
        api = from_exception(e)
        if api is not None:
            return error(api)
        state.counters.errors += 1
        log.exception("unexpected error serving %s", route.what)
        return error(APIError(500, f"internal error ({type(e).__name__}); see the server log", type="server_error"))


def check_model(state: ServerState, name: str | None, route: Route) -> str:
    """The served name `name` stands for (the model's, or an alias of `serve --alias`); a 404 otherwise."""
    given = name[: -len(":latest")] if route.latest and name and name.endswith(":latest") else name
    if given == state.model_name or given in state.config.aliases:
        assert given is not None
        return given
    msg = route.unknown.format(name=name, served=state.model_name)
    raise APIError(404, msg, param=route.model_param, code="model_not_found" if route.model_param else None)


async def plan(state: ServerState, req: ChatRequest) -> protocol.Plan:
    """`protocol.plan` with the server's catalog contracts and aliases, off the event loop (checking the schemas
    a request carries is bounded work, but work)."""

    def planned() -> protocol.Plan:
        with isolation.using(state.guard):  # a Lark grammar the request carries is read by llguidance in a child
            return protocol.plan(req, field_tokens=state.config.field_tokens, catalog=state.catalog, aliases=state.config.aliases)

    return await asyncio.to_thread(planned)


def headers(p: protocol.Plan) -> dict[str, str]:
    """An answer's `X-Localjudge-Contract` header (the catalog contract applied to `p`), or none."""
    return {CONTRACT: p.contract} if p.contract else {}


@dataclass
class Job:
    """One plan queued on the worker: its generation, its tokens as they arrive, its cancel, the client's leaving."""

    plan: protocol.Plan
    result: asyncio.Future[Generation]
    tokens: asyncio.Queue[list[TokenInfo]]
    cancel: threading.Event
    gone: asyncio.Future[Any]


async def _format(state: ServerState, p: protocol.Plan, route: Route) -> OutputFormat:
    if p.schema is None:
        return p.fmt if p.fmt is not None else state.text_format  # a grammar, or free text
    param = "tools" if p.tool_mode != "none" else route.format_param
    tools = p.tool_mode != "none" and bool(route.tools_prefix)
    bad_schema, refused = (
        (route.tools_prefix + "{e}", route.tools_prefix + "refused: {e}") if tools else (route.bad_schema, route.refused)
    )
    try:
        fmt = await asyncio.to_thread(state.formats.get, p.schema, p.schema_name)
        await state.formats.ready(fmt)
    except SchemaError as e:
        raise bad_request(bad_schema.format(e=e), param=param) from None
    except CompileRefused as e:
        raise bad_request(refused.format(e=e), param=param) from None
    return fmt


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone away (the body must be read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def submit(state: ServerState, request: Request, p: protocol.Plan, route: Route) -> Job:
    """Queue `p` under the server's limits (prompt size, queue, format compile) and wait until it is answered
    (streamed: until it is accepted, so its errors are still plain answers). Raises the generation's error,
    or `ClientGone` (its generation cancelled) when the client leaves first."""
    chars = sum(len(m.content) for m in p.messages)
    if chars > state.max_prompt_chars:
        msg = route.too_long.format(chars=chars, n_ctx=state.engine.n_ctx)
        raise APIError(400, msg, param=route.prompt_param, code="context_length_exceeded")
    busy = state.worker.pending + state.formats.waiting
    if busy >= state.config.max_pending:  # requests waiting on a compile count toward the limit too
        msg = f"{busy} requests are already queued or compiling (limit {state.config.max_pending})"
        raise from_exception(WorkerBusy(msg)) or APIError(429, msg)
    fmt = await _format(state, p, route)
    loop = asyncio.get_running_loop()
    cancel, accepted = threading.Event(), asyncio.Event()
    tokens: asyncio.Queue[list[TokenInfo]] = asyncio.Queue()

    def on_tokens(new: list[TokenInfo]) -> None:
        loop.call_soon_threadsafe(tokens.put_nowait, new)

    def on_accepted() -> None:
        loop.call_soon_threadsafe(accepted.set)

    try:
        fut = state.submit(p, fmt, cancel, on_tokens if p.stream else None, on_accepted)
    except Exception as e:
        raise from_exception(e) or e from None
    result: asyncio.Future[Generation] = asyncio.wrap_future(fut)
    gone: asyncio.Future[Any] = asyncio.ensure_future(_disconnected(request))
    started: asyncio.Future[Any] = asyncio.ensure_future(accepted.wait())
    try:
        await asyncio.wait([result, gone, started] if p.stream else [result, gone], return_when=asyncio.FIRST_COMPLETED)
    finally:
        started.cancel()
    if gone.done() and not result.done():  # the client went away: stop its generation, free its slot
        cancel.set()
        raise ClientGone()
    if not p.stream or (result.done() and result.exception() is not None):
        gone.cancel()
    if result.done():
        result.result()  # an error raises here: the route's handler maps it
    return Job(p, result, tokens, cancel, gone)


async def run_plan(state: ServerState, request: Request, p: protocol.Plan, route: Route) -> Generation:
    """`p` (not streamed) answered whole, counted; `ClientGone` when the client left first."""
    assert not p.stream, "a streamed plan goes through submit and Tokens"
    gen = (await submit(state, request, p, route)).result.result()
    if gen.stop_reason == "cancelled":
        state.counters.cancelled += 1
    else:
        state.counters.completed += 1
    return gen


# ---------------------------------------------------------------------------------------- streams


@dataclass
class Step:
    """What one wait of a stream brought: the new tokens, and the reasoning and answer text now certain."""

    tokens: list[TokenInfo]
    reasoning: str
    content: str


@dataclass
class Tokens:
    """A streamed job's text as it becomes certain: iterate for each `Step` until the generation ends (raises
    `ClientGone` when the client leaves), then `final()`. With `as_text` false (a tool answer, sent whole at
    the end) no content is given out while streaming."""

    job: Job
    pieces: list[bytes] | None  # the server's token pieces (`ServerState.pieces`)
    as_text: bool = True
    said: int = 0  # reasoning characters given out
    sent: int = 0  # content characters given out
    _text: str = field(default="", init=False)

    async def __aiter__(self) -> AsyncIterator[Step]:
        p, job, pieces = self.job.plan, self.job, self.pieces
        hold = max((len(s) for s in p.options.stop), default=1) - 1
        split = ThinkSplit(hold) if p.options.think_tokens else None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            getter: asyncio.Future[Any] = asyncio.ensure_future(job.tokens.get())
            await asyncio.wait([getter, job.result, job.gone], return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
            if job.gone.done():
                raise ClientGone()
            new = getter.result() if getter.done() and not getter.cancelled() else []
            while not job.tokens.empty():
                new = new + job.tokens.get_nowait()
            for t in new:
                self._text += decoder.decode(pieces[t.id] if pieces is not None else t.text.encode())
            reasoning, content = split.parts(self._text) if split else ("", self._text[: max(0, len(self._text) - hold)])
            step = Step(new, reasoning[self.said :], content[self.sent :] if self.as_text else "")
            self.said += len(step.reasoning)
            self.sent += len(step.content)
            yield step
            if job.result.done() and job.tokens.empty():
                return

    def final(self) -> tuple[Generation, str | None, str]:
        """The generation, its whole reasoning (None unless a reasoning request) and its whole answer."""
        gen = self.job.result.result()
        reasoning, answer = split_reasoning(gen.text) if self.job.plan.options.think_tokens else (None, gen.text)
        return gen, reasoning, answer


async def guarded(
    state: ServerState, job: Job, body: AsyncIterator[bytes], error: Callable[[APIError], bytes]
) -> AsyncIterator[bytes]:
    """`body`'s bytes, counted completed when it ends; an error once the stream has begun goes into it as
    `error` writes it; a client that leaves (or a stream cut short) cancels the generation, counted."""
    finished = False
    try:
        async for chunk in body:
            yield chunk
        finished = True
        state.counters.completed += 1
    except ClientGone:
        return
    except Exception as e:  # noqa: BLE001 - the stream has begun: the error goes into it
        api = from_exception(e) or APIError(500, f"internal error ({type(e).__name__})", type="server_error")
        if api.status >= 500:
            log.exception("error while streaming")
        yield error(api)
        finished = True
    finally:
        job.gone.cancel()
        if not finished:  # the client went away mid-stream (or the stream was cancelled)
            job.cancel.set()
            state.counters.cancelled += 1
