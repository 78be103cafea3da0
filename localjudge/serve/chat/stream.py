"""Streaming answers (SSE): the chunks of one chat completion as its tokens arrive.

A reasoning request (`think_tokens`) streams its think block as `delta.reasoning_content` and the answer
after it as `delta.content`, as llama.cpp's server and DeepSeek's API do: the block's markers never reach
either field, and the concatenated deltas equal the non-streaming `message.reasoning_content` and
`message.content` for the same request. `ThinkSplit` decides, from the text so far, which part of each is
already certain (text that may still turn out to be a closing marker, or a stop sequence, is held back).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Protocol

from ..core import plan as protocol
from ..core.generate import Job, Tokens
from ..core.wire import Delta, ToolCallDelta, Wire
from .answer import chunk, finish_reason, logprobs, tool_calls, usage


class ServerState(Protocol):
    """What a stream needs of serve.app's `ServerState`: names for the chunks, the token pieces, the counters."""

    model_name: str
    fingerprint: str
    pieces: list[bytes] | None
    counters: Any

    def fingerprint_of(self, p: protocol.Plan) -> str: ...


def sse(obj: Wire) -> bytes:
    """One server-sent event carrying `obj` as JSON (json.dumps' default separators, unlike a JSON body)."""
    return b"data: " + json.dumps(obj.body(), ensure_ascii=False).encode("utf-8") + b"\n\n"


async def stream_chunks(state: ServerState, job: Job, cid: str) -> AsyncIterator[bytes]:
    """SSE chunks: the role, reasoning deltas (a reasoning request) and content deltas as tokens arrive (text
    that may begin a stop sequence or a closing think marker held back), the finish reason, the usage (if
    asked), `[DONE]`. Tool calls come whole in one chunk at the end. `generate.guarded` wraps it (errors,
    counters, cancel)."""
    p = job.plan
    name, fp = state.model_name, state.fingerprint_of(p)
    as_text = p.tool_mode == "none"  # tool answers are sent whole at the end
    text = Tokens(job, state.pieces, as_text)
    yield sse(chunk(cid, name, fp, Delta(role="assistant", content="")))
    async for step in text:
        delta = Delta()
        if step.reasoning:
            delta.reasoning_content = step.reasoning
        if step.content:
            delta.content = step.content
        if as_text and step.tokens and p.logprobs and not delta.model_fields_set:
            delta.content = ""  # each token's logprobs go out as it arrives, text or not
        if delta.model_fields_set:
            lp = logprobs(step.tokens, state.pieces, p.top_logprobs) if p.logprobs and step.tokens else None
            yield sse(chunk(cid, name, fp, delta, logprobs=lp))
    gen, reasoning_all, answer = text.final()
    calls = tool_calls(p, answer)
    last = Delta()
    if reasoning_all is not None and len(reasoning_all) > text.said:
        last.reasoning_content = reasoning_all[text.said :]
    if calls:
        last.tool_calls = [ToolCallDelta(index=0, id=c.id, function=c.function) for c in calls]
    elif len(answer) > text.sent:
        last.content = answer[text.sent :]
    if last.model_fields_set:
        yield sse(chunk(cid, name, fp, last))
    yield sse(chunk(cid, name, fp, Delta(), finish_reason=finish_reason(gen, calls)))
    if p.include_usage:
        yield sse(chunk(cid, name, fp, None, usage=usage(gen)))
    yield b"data: [DONE]\n\n"
