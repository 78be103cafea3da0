"""Ollama's API on `localjudge serve`: `/api/chat` and `/api/generate` (NDJSON lines by default, one JSON
body with `stream: false`), and the model routes of `ollama_models.py` (`/api/tags`, `/api/show`, `/api/version`, `/api/ps`).

A chat or generate request is translated into the OpenAI request (`wire.ChatRequest`) and planned by
`protocol.plan`, so `format` (`"json"`: any JSON object; a JSON schema) is constrained exactly as
`response_format` is (the same checks, compile path, sandbox, bounds and automaton cache), and `think`
is `think_tokens`. `tools` on `/api/chat` are the OpenAI request's `tools` (no `tool_choice`: Ollama has
none, so auto), checked, bounded and constrained by the same plan; a call the answer makes comes back as
`message.tool_calls` with its arguments an object (streamed: whole, in the last line before `done`, as
`stream.py` sends OpenAI's). The same guard (Host, Origin, Content-Type), body limits, API key, queue limit and
connection limit apply (`routes` and `run` own them). Errors are Ollama's shape, `{"error": "..."}`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ...engine.base import Generation
from ..chat.answer import tool_calls
from ..core import plan as protocol
from ..core.errors import APIError, bad_request, invalid_body
from ..core.generate import OLLAMA, Job, Tokens, check_model, guarded, handle, headers, plan, run_plan, submit
from ..core.reasoning import split_reasoning
from ..core.validate import check_schema, check_text
from ..core.wire import ChatRequest, Wire
from .wire import (
    OPTIONS,
    RUNTIME_OPTIONS,
    THINK_TOKENS,
    OllamaChatRequest,
    OllamaChatResponse,
    OllamaError,
    OllamaFunctionOut,
    OllamaGenerateRequest,
    OllamaGenerateResponse,
    OllamaMessageOut,
    OllamaOptions,
    OllamaToolCallOut,
)

if TYPE_CHECKING:
    from ..core.state import ServerState


def error(e: APIError) -> JSONResponse:
    """An error as Ollama answers it: `{"error": message}` with its status (and headers)."""
    return JSONResponse(OllamaError(error=e.message).body(), status_code=e.status, headers=e.headers)


def json_answer(body: Wire) -> JSONResponse:
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
        raise invalid_body(e) from None


async def read_request(state: ServerState, request: Request, model: type[BaseModel]) -> Any:
    from ..core.handling import check_key, request_body

    check_key(state, request)
    body = await request_body(request, state.config.max_body_bytes, state.config.body_timeout, state.stopping)
    return _validate(model, body)


def served_model(state: ServerState, name: str | None) -> str:
    """The served name `name` stands for (the model, an alias, either with `:latest`); a 404 otherwise."""
    return check_model(state, name, OLLAMA)


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


def to_chat(
    req: OllamaChatRequest | OllamaGenerateRequest, model: str, messages: list[dict[str, Any]], n_ctx: int
) -> tuple[ChatRequest, int | None]:
    """The request as the OpenAI request (for `model`, the served name it stands for) and its `top_k` (which
    OpenAI's request lacks); a 400 naming the field otherwise. `num_ctx` up to the server's context is accepted
    (the context is fixed when serve starts; a smaller num_ctx does not shrink it); more is a 400."""
    if isinstance(req, OllamaGenerateRequest) and req.tools:
        raise bad_request("tools: not supported on /api/generate (Ollama has none there); send them to /api/chat", param="tools")
    opts = check_options(req.options, n_ctx)
    num_predict = opts.num_predict if opts.num_predict is not None and opts.num_predict > 0 else None
    if opts.num_predict == 0:
        raise bad_request("options.num_predict: 0 leaves no room for an answer; send a positive number or -1", param="options")
    think = THINK_TOKENS.get(req.think, 0) if req.think not in (None, False) else 0
    chat = {
        "model": model,
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
    if isinstance(req, OllamaChatRequest) and req.tools:
        chat["tools"] = [t.model_dump(exclude_none=True) for t in req.tools]
    return protocol.parse_request(chat), opts.top_k


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


def _calls(p: protocol.Plan, answer: str) -> list[OllamaToolCallOut] | None:
    """The tool call `answer` makes (the OpenAI route's reading of it), its arguments an object; None when
    the request has no tools or the answer is not a call."""
    calls = tool_calls(p, answer)
    if not calls:
        return None
    return [
        OllamaToolCallOut(function=OllamaFunctionOut(name=c.function.name, arguments=json.loads(c.function.arguments)))
        for c in calls
    ]


def _line(
    chat: bool,
    name: str,
    content: str,
    thinking: str | None,
    done: bool,
    calls: list[OllamaToolCallOut] | None = None,
    **final: Any,
) -> Wire:
    if chat:
        msg = OllamaMessageOut(content=content)
        if thinking is not None:
            msg.thinking = thinking
        if calls:
            msg.tool_calls = calls
        return OllamaChatResponse(model=name, created_at=_now(), done=done, message=msg, **final)
    out = OllamaGenerateResponse(model=name, created_at=_now(), done=done, response=content, **final)
    if thinking is not None:
        out.thinking = thinking
    return out


async def _lines(state: ServerState, chat: bool, job: Job, started: float) -> AsyncIterator[bytes]:
    """NDJSON lines: content (and thinking) fragments as tokens arrive (text that may begin a stop sequence
    or a closing think marker held back), then the `done` line with the counts. With tools, no content goes
    out while streaming: a tool call comes whole in one line, then the `done` line (as Ollama sends it); an
    answer that is not a call comes whole in the `done` line. `guarded` wraps it: an error mid-stream is an
    `{"error": ...}` line (the Ollama client raises it)."""
    thinks = bool(job.plan.options.think_tokens)
    text = Tokens(job, state.pieces, job.plan.tool_mode == "none")
    name = state.model_name
    async for step in text:
        if step.reasoning or step.content:
            yield _ndjson(_line(chat, name, step.content, step.reasoning if thinks else None, False))
    gen, reasoning_all, answer = text.final()
    rest = (reasoning_all or "")[text.said :] if thinks else None
    calls = _calls(job.plan, answer)
    if calls:
        yield _ndjson(_line(chat, name, "", rest, False, calls))
        rest = "" if thinks else None
    tail = "" if calls else answer[text.sent :]
    yield _ndjson(_line(chat, name, tail, rest, True, **_final(gen, started)))


def _ndjson(w: Wire) -> bytes:
    return json.dumps(w.body(), ensure_ascii=False).encode("utf-8") + b"\n"


async def _generate(state: ServerState, request: Request, chat: bool) -> Response:
    started = time.monotonic()
    req = await read_request(state, request, OllamaChatRequest if chat else OllamaGenerateRequest)
    model = served_model(state, req.model)
    messages = _chat_messages(req) if chat else _generate_messages(req)
    creq, top_k = await asyncio.to_thread(to_chat, req, model, messages, state.engine.n_ctx)
    p = await plan(state, creq)
    if top_k:
        p.options = p.options.model_copy(update={"top_k": top_k})
    if p.stream:
        job = await submit(state, request, p, OLLAMA)
        lines = guarded(state, job, _lines(state, chat, job, started), lambda e: _ndjson(OllamaError(error=e.message)))
        head = {"Cache-Control": "no-cache", **headers(p)}
        return StreamingResponse(lines, media_type="application/x-ndjson", headers=head)
    gen = await run_plan(state, request, p, OLLAMA)
    reasoning, answer = split_reasoning(gen.text) if p.options.think_tokens else (None, gen.text)
    thinking = reasoning or "" if p.options.think_tokens else None
    calls = _calls(p, answer) if chat else None
    content = "" if calls else answer
    done = json_answer(_line(chat, state.model_name, content, thinking, True, calls, **_final(gen, started)))
    done.headers.update(headers(p))
    return done


# ---------------------------------------------------------------------------------------- handlers


async def _guarded(state: ServerState, request: Request, chat: bool) -> Response:
    return await handle(state, OLLAMA, _generate(state, request, chat), error)


async def chat(state: ServerState, request: Request) -> Response:
    """POST /api/chat: the answer to a conversation."""
    return await _guarded(state, request, chat=True)


async def generate(state: ServerState, request: Request) -> Response:
    """POST /api/generate: the answer to one prompt."""
    return await _guarded(state, request, chat=False)
