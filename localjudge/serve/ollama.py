"""Ollama's API on `localjudge serve`: `/api/chat` and `/api/generate` (NDJSON lines by default, one JSON
body with `stream: false`), and the model routes of `ollama_models.py` (`/api/tags`, `/api/show`, `/api/version`, `/api/ps`).

A chat or generate request is translated into the OpenAI request (`wire.ChatRequest`) and planned by
`protocol.plan`, so `format` (`"json"`: any JSON object; a JSON schema) is constrained exactly as
`response_format` is (the same checks, compile path, sandbox, bounds and automaton cache), and `think`
is `think_tokens`. The same guard (Host, Origin, Content-Type), body limits, API key, queue limit and
connection limit apply (`routes` and `run` own them). Errors are Ollama's shape, `{"error": "..."}`.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..constraints.sandbox import CompileRefused
from ..engine.base import Generation, TokenInfo
from ..engine.worker import WorkerBusy
from ..formats import OutputFormat, SchemaError
from ..http_limits import ClientGone
from . import protocol
from .errors import APIError, bad_request, from_exception
from .reasoning import ThinkSplit, split_reasoning
from .validate import check_schema, check_text
from .wire import Wire
from .wire_ollama import (
    OPTIONS,
    RUNTIME_OPTIONS,
    THINK_TOKENS,
    OllamaChatRequest,
    OllamaChatResponse,
    OllamaError,
    OllamaGenerateRequest,
    OllamaGenerateResponse,
    OllamaMessageOut,
    OllamaOptions,
)

if TYPE_CHECKING:
    from .app import ServerState


def error(e: APIError) -> JSONResponse:
    """An error as Ollama answers it: `{"error": message}` with its status (and headers)."""
    return JSONResponse(OllamaError(error=e.message).body(), status_code=e.status, headers=e.headers)


def _answer(body: Wire) -> JSONResponse:
    return JSONResponse(body.body())


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _validate(model: type[BaseModel], data: Any) -> Any:
    if not isinstance(data, dict):
        raise bad_request(f"the request body must be a JSON object, got {type(data).__name__}")
    check_text(data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err.get("loc", ())).lstrip(".")
        raise bad_request(f"{loc or 'body'}: {err.get('msg', 'invalid value')}", param=loc or None) from None


async def _read(state: ServerState, request: Request, model: type[BaseModel]) -> Any:
    from .routes import _body, _check_key

    _check_key(state, request)
    body = await _body(request, state.config.max_body_bytes, state.config.body_timeout, state.stopping)
    return _validate(model, body)


def _check_model(state: ServerState, name: str | None) -> None:
    if name not in (state.model_name, f"{state.model_name}:latest"):
        raise APIError(404, f"model {name!r} not found; this server serves {state.model_name!r}")


# ------------------------------------------------------------------------------------------ the plan


def check_options(raw: dict[str, Any] | None, n_ctx: int) -> OllamaOptions:
    """`options` checked: the implemented ones typed, the runtime ones ignored, any other a 400 naming it."""
    raw = raw or {}
    for key in raw:
        if key not in OPTIONS and key not in RUNTIME_OPTIONS:
            raise bad_request(
                f"options.{key}: not supported by this server (it implements {', '.join(sorted(OPTIONS))}); leave it out",
                param=f"options.{key}",
            )
    opts: OllamaOptions = _validate(OllamaOptions, {k: v for k, v in raw.items() if k in OPTIONS})
    if opts.num_ctx is not None and opts.num_ctx > n_ctx:
        raise bad_request(
            f"options.num_ctx: {opts.num_ctx} is more than this server's context of {n_ctx} tokens; send at most "
            f"{n_ctx} (or restart serve with a larger --option n_ctx=...)",
            param="options.num_ctx",
        )
    return opts


def _format(fmt: Any) -> dict[str, Any] | None:
    """`format` as an OpenAI `response_format` (None: free text)."""
    if fmt is None or fmt == "":
        return None
    if fmt == "json":
        return {"type": "json_object"}
    check_schema(fmt, "format")
    return {"type": "json_schema", "json_schema": {"name": "format", "schema": fmt}}


def plan(
    req: OllamaChatRequest | OllamaGenerateRequest, messages: list[dict[str, Any]], n_ctx: int, field_tokens: int
) -> protocol.Plan:
    """The request as the OpenAI request `protocol.plan` checks and plans (a 400 naming the field otherwise).
    `num_ctx` up to the server's context is accepted (the context is fixed when serve starts; a smaller
    num_ctx does not shrink it); more is a 400."""
    if req.tools:
        raise bad_request("tools: not supported on the Ollama API of this server; send format (a JSON schema)", param="tools")
    opts = check_options(req.options, n_ctx)
    num_predict = opts.num_predict if opts.num_predict is not None and opts.num_predict > 0 else None
    if opts.num_predict == 0:
        raise bad_request("options.num_predict: 0 leaves no room for an answer; send a positive number or -1", param="options")
    think = THINK_TOKENS.get(req.think, 0) if req.think not in (None, False) else 0
    chat = {
        "model": req.model,
        "messages": messages,
        "max_tokens": num_predict,
        "temperature": opts.temperature,
        "top_p": opts.top_p,
        "seed": None if opts.seed is None else opts.seed % (1 << 63),
        "stop": opts.stop,
        "stream": req.stream is not False,
        "response_format": _format(req.format),
        "think_tokens": think,
    }
    p = protocol.plan(protocol.parse_request(chat), field_tokens=field_tokens)
    if opts.top_k:
        p.options = p.options.model_copy(update={"top_k": opts.top_k})
    return p


def _chat_messages(req: OllamaChatRequest) -> list[dict[str, Any]]:
    if not req.messages:
        raise bad_request("messages: empty; send at least one message", param="messages")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(req.messages):
        if m.images:
            raise bad_request(f"messages[{i}].images: not supported (this server runs a text-only model)", param="messages")
        if m.role == "tool":
            out.append({"role": "tool", "content": m.content, "name": m.tool_name})
        elif m.tool_calls:
            calls = [
                {"type": "function", "function": {"name": c.function.name, "arguments": json.dumps(c.function.arguments)}}
                for c in m.tool_calls
            ]
            out.append({"role": m.role, "content": m.content, "tool_calls": calls})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _generate_messages(req: OllamaGenerateRequest) -> list[dict[str, Any]]:
    given = {"suffix": req.suffix, "context": req.context, "images": req.images, "template": req.template}
    for key, value in given.items():
        if value:
            raise bad_request(f"{key}: not supported by this server; leave it out", param=key)
    if req.raw:
        raise bad_request("raw: not supported (the model's chat template is always applied); leave it out", param="raw")
    if not req.prompt:
        raise bad_request("prompt: empty; send the text to answer", param="prompt")
    system = [{"role": "system", "content": req.system}] if req.system else []
    return [*system, {"role": "user", "content": req.prompt}]


# ---------------------------------------------------------------------------------------- running


async def _submit(
    state: ServerState, request: Request, p: protocol.Plan
) -> tuple[asyncio.Future[Any], asyncio.Queue[list[TokenInfo]], threading.Event, asyncio.Future[Any]]:
    """Queue the plan on the worker under the OpenAI route's limits (prompt size, queue, compile); returns
    the generation's future, its token queue, its cancel event and the client-gone future."""
    from .routes import _call_soon, _disconnected

    chars = sum(len(m.content) for m in p.messages)
    if chars > state.max_prompt_chars:
        raise bad_request(
            f"messages: {chars} characters, more than fit this model's {state.engine.n_ctx}-token context; shorten them"
        )
    busy = state.worker.pending + state.formats.waiting
    if busy >= state.config.max_pending:
        msg = f"{busy} requests are already queued or compiling (limit {state.config.max_pending})"
        raise from_exception(WorkerBusy(msg)) or APIError(429, msg)
    if p.schema is None:
        fmt: OutputFormat = p.fmt if p.fmt is not None else state.text_format
    else:
        try:
            fmt = await asyncio.to_thread(state.formats.get, p.schema, p.schema_name)
            await state.formats.ready(fmt)
        except SchemaError as e:
            raise bad_request(f"format: {e}", param="format") from None
        except CompileRefused as e:
            raise bad_request(f"format: the schema is refused: {e}", param="format") from None
    loop = asyncio.get_running_loop()
    cancel = threading.Event()
    accepted = asyncio.Event()
    tokens: asyncio.Queue[list[TokenInfo]] = asyncio.Queue()

    def on_tokens(new: list[TokenInfo]) -> None:
        loop.call_soon_threadsafe(tokens.put_nowait, new)

    try:
        fut = state.submit(p, fmt, cancel, on_tokens if p.stream else None, lambda: _call_soon(loop, accepted.set))
    except Exception as e:
        raise from_exception(e) or e from None
    afut: asyncio.Future[Any] = asyncio.wrap_future(fut)
    gone: asyncio.Future[Any] = asyncio.ensure_future(_disconnected(request))
    waits: list[asyncio.Future[Any]] = [afut, gone]
    started: asyncio.Future[Any] = asyncio.ensure_future(accepted.wait())
    if p.stream:
        waits.append(started)
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        started.cancel()
    if gone.done() and not afut.done():  # the client went away: stop its generation, free its slot
        cancel.set()
        raise ClientGone()
    if afut.done() and afut.exception() is not None:
        gone.cancel()
        afut.result()  # raises: mapped by the caller
    if not p.stream:
        gone.cancel()
    return afut, tokens, cancel, gone


def _final(gen: Generation, started: float) -> dict[str, Any]:
    return {
        "done_reason": "length" if gen.stop_reason in ("budget", "max_tokens") else "stop",
        "total_duration": int((time.monotonic() - started) * 1e9),
        "load_duration": 0,
        "prompt_eval_count": gen.n_prompt_tokens,
        "prompt_eval_duration": int(gen.prompt_ms * 1e6),
        "eval_count": gen.n_output_tokens,
        "eval_duration": int(gen.decode_ms * 1e6),
    }


def _line(chat: bool, name: str, content: str, thinking: str | None, done: bool, **final: Any) -> Wire:
    if chat:
        msg = OllamaMessageOut(content=content)
        if thinking is not None:
            msg.thinking = thinking
        return OllamaChatResponse(model=name, created_at=_now(), done=done, message=msg, **final)
    out = OllamaGenerateResponse(model=name, created_at=_now(), done=done, response=content, **final)
    if thinking is not None:
        out.thinking = thinking
    return out


async def _lines(
    state: ServerState,
    chat: bool,
    p: protocol.Plan,
    job: tuple[asyncio.Future[Any], asyncio.Queue[list[TokenInfo]], threading.Event, asyncio.Future[Any]],
    started: float,
) -> AsyncIterator[bytes]:
    """NDJSON lines: content (and thinking) fragments as tokens arrive (text that may begin a stop sequence
    or a closing think marker held back), then the `done` line with the counts; an error mid-stream is an
    `{"error": ...}` line (the Ollama client raises it)."""
    afut, tokens, cancel, gone = job
    hold = max((len(s) for s in p.options.stop), default=1) - 1
    thinks = bool(p.options.think_tokens)
    split = ThinkSplit(hold)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text, sent, said, finished = "", 0, 0, False
    name = state.model_name

    def emit(w: Wire) -> bytes:
        return json.dumps(w.body(), ensure_ascii=False).encode("utf-8") + b"\n"

    try:
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
            reasoning, content = split.parts(text) if thinks else ("", text[: max(0, len(text) - hold)])
            if len(reasoning) > said or len(content) > sent:
                yield emit(_line(chat, name, content[sent:], reasoning[said:] if thinks else None, False))
                said, sent = len(reasoning), len(content)
            if afut.done() and tokens.empty():
                break
        gen = afut.result()
        reasoning_all, answer = split_reasoning(gen.text) if thinks else (None, gen.text)
        rest = (reasoning_all or "")[said:] if thinks else None
        yield emit(_line(chat, name, answer[sent:], rest, True, **_final(gen, started)))
        finished = True
        state.counters.completed += 1
    except Exception as e:  # noqa: BLE001 - the stream has begun: the error goes into it
        api = from_exception(e) or APIError(500, f"internal error ({type(e).__name__})")
        yield emit(OllamaError(error=api.message))
        finished = True
    finally:
        gone.cancel()
        if not finished:
            cancel.set()
            state.counters.cancelled += 1


async def _generate(state: ServerState, request: Request, chat: bool) -> Response:
    started = time.monotonic()
    req = await _read(state, request, OllamaChatRequest if chat else OllamaGenerateRequest)
    _check_model(state, req.model)
    messages = _chat_messages(req) if chat else _generate_messages(req)
    p = await asyncio.to_thread(plan, req, messages, state.engine.n_ctx, state.config.field_tokens)
    job = await _submit(state, request, p)
    if p.stream:
        return StreamingResponse(
            _lines(state, chat, p, job, started), media_type="application/x-ndjson", headers={"Cache-Control": "no-cache"}
        )
    gen = job[0].result()
    state.counters.completed += 1
    reasoning, answer = split_reasoning(gen.text) if p.options.think_tokens else (None, gen.text)
    return _answer(
        _line(chat, state.model_name, answer, reasoning or "" if p.options.think_tokens else None, True, **_final(gen, started))
    )


async def _guarded(state: ServerState, request: Request, chat: bool) -> Response:
    try:
        return await _generate(state, request, chat)
    except APIError as e:
        if e.status == 429:
            state.counters.refused_busy += 1
        return error(e)
    except ClientGone:
        state.counters.cancelled += 1
        return Response(status_code=499)
    except Exception as e:  # noqa: BLE001 - mapped, or a bug (500)
        api = from_exception(e)
        if api is not None:
            return error(api)
        state.counters.errors += 1
        import logging

        logging.getLogger("localjudge.serve").exception("unexpected error serving an Ollama request")
        return error(APIError(500, f"internal error ({type(e).__name__}); see the server log"))


# ---------------------------------------------------------------------------------------- handlers


async def chat(state: ServerState, request: Request) -> Response:
    """POST /api/chat: the answer to a conversation."""
    return await _guarded(state, request, chat=True)


async def generate(state: ServerState, request: Request) -> Response:
    """POST /api/generate: the answer to one prompt."""
    return await _guarded(state, request, chat=False)
