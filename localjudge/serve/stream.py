"""Streaming answers (SSE): the chunks of one chat completion as its tokens arrive.

A reasoning request (`think_tokens`) streams its think block as `delta.reasoning_content` and the answer
after it as `delta.content`, as llama.cpp's server and DeepSeek's API do: the block's markers never reach
either field, and the concatenated deltas equal the non-streaming `message.reasoning_content` and
`message.content` for the same request. `ThinkSplit` decides, from the text so far, which part of each is
already certain (text that may still turn out to be a closing marker, or a stop sequence, is held back).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any, Protocol

from ..engine.base import TokenInfo
from . import protocol
from .answer import chunk, finish_reason, logprobs, tool_calls, usage
from .errors import APIError, from_exception
from .reasoning import ThinkSplit, split_reasoning
from .wire import Delta, ToolCallDelta, Wire


class ServerState(Protocol):
    """What a stream needs of serve.app's `ServerState`: names for the chunks, the token pieces, the counters."""

    model_name: str
    fingerprint: str
    pieces: list[bytes] | None
    counters: Any

    def fingerprint_of(self, p: protocol.Plan) -> str: ...


log = logging.getLogger("localjudge.serve")


def sse(obj: Wire) -> bytes:
    """One server-sent event carrying `obj` as JSON (json.dumps' default separators, unlike a JSON body)."""
    return b"data: " + json.dumps(obj.body(), ensure_ascii=False).encode("utf-8") + b"\n\n"


async def stream_chunks(
    state: ServerState,
    p: protocol.Plan,
    afut: asyncio.Future[Any],
    tokens: asyncio.Queue[list[TokenInfo]],
    cancel: threading.Event,
    gone: asyncio.Future[Any],
    cid: str,
) -> AsyncIterator[bytes]:
    """SSE chunks: the role, reasoning deltas (a reasoning request) and content deltas as tokens arrive (text
    that may begin a stop sequence or a closing think marker held back), the finish reason, the usage (if
    asked), `[DONE]`. Tool calls come whole in one chunk at the end."""
    name, fp = state.model_name, state.fingerprint_of(p)
    hold = max((len(s) for s in p.options.stop), default=1) - 1
    thinks = bool(p.options.think_tokens)
    split = ThinkSplit(hold) if thinks else None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text, sent, said = "", 0, 0  # text so far; content and reasoning characters sent
    as_text = p.tool_mode in ("none",)  # tool answers are sent whole at the end
    finished = False
    try:
        yield sse(chunk(cid, name, fp, Delta(role="assistant", content="")))
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
            if split is not None:
                reasoning, content = split.parts(text)
            else:
                reasoning, content = "", text[: max(0, len(text) - hold)]
            delta = Delta()
            if len(reasoning) > said:
                delta.reasoning_content, said = reasoning[said:], len(reasoning)
            if as_text and len(content) > sent:
                delta.content, sent = content[sent:], len(content)
            if as_text and new and p.logprobs and not delta.model_fields_set:
                delta.content = ""  # each token's logprobs go out as it arrives, text or not
            if delta.model_fields_set:
                lp = logprobs(new, state.pieces, p.top_logprobs) if p.logprobs and new else None
                yield sse(chunk(cid, name, fp, delta, logprobs=lp))
            if afut.done() and tokens.empty():
                break
        gen = afut.result()
        reasoning_all, answer = split_reasoning(gen.text) if thinks else (None, gen.text)
        calls = tool_calls(p, answer)
        last = Delta()
        if reasoning_all is not None and len(reasoning_all) > said:
            last.reasoning_content = reasoning_all[said:]
        if calls:
            last.tool_calls = [ToolCallDelta(index=0, id=c.id, function=c.function) for c in calls]
        elif len(answer) > sent:
            last.content = answer[sent:]
        if last.model_fields_set:
            yield sse(chunk(cid, name, fp, last))
        yield sse(chunk(cid, name, fp, Delta(), finish_reason=finish_reason(gen, calls)))
        if p.include_usage:
            yield sse(chunk(cid, name, fp, None, usage=usage(gen)))
        yield b"data: [DONE]\n\n"
        finished = True
        state.counters.completed += 1
    except Exception as e:  # noqa: BLE001 - the stream has begun: the error goes into it
        api = from_exception(e) or APIError(500, f"internal error ({type(e).__name__})", type="server_error")
        if api.status >= 500:
            log.exception("error while streaming")
        yield sse(api.wire())
        finished = True
    finally:
        gone.cancel()
        if not finished:  # the client went away mid-stream (or the stream was cancelled)
            cancel.set()
            state.counters.cancelled += 1
