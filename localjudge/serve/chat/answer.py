"""A generation as the OpenAI answer (`wire` models): the whole completion, a streamed chunk, the tool
call the text makes, one token's logprobs, the usage counts."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from ...engine.base import Generation
from ...formats.base import json_objects
from ...formats.json_schema import validate
from ..core.plan import Plan
from ..core.wire import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    Choice,
    ChoiceLogprobs,
    ChunkChoice,
    CompletionTokensDetails,
    Delta,
    FinishReason,
    FunctionCall,
    PromptTokensDetails,
    TokenLogprob,
    ToolCall,
    TopLogprob,
    Usage,
)

FINISH: dict[str, FinishReason] = {
    "eos": "stop",
    "final": "stop",
    "stop": "stop",
    "scripted": "stop",
    "budget": "length",
    "max_tokens": "length",
}


def finish_reason(gen: Generation, calls: list[ToolCall] | None) -> FinishReason:
    """Why the answer ended, in OpenAI's words: a tool call, the token budget, or a stop."""
    return "tool_calls" if calls else FINISH.get(gen.stop_reason, "stop")


def completion_id() -> str:
    """A fresh chat completion id."""
    return "chatcmpl-" + uuid.uuid4().hex


def tool_calls(p: Plan, text: str) -> list[ToolCall] | None:
    """The tool call the output makes (OpenAI `tool_calls`), or None when it is not a call."""
    if p.tool_mode == "named":
        assert p.named is not None
        return [_call(p.named, text)]
    if p.tool_mode not in ("required", "auto"):
        return None
    for obj in json_objects(text):
        name, args = obj.get("name"), obj.get("arguments")
        if name in p.tools and isinstance(args, dict):
            params = p.tools[name].parameters
            try:
                if p.tool_mode == "auto" and params and validate(args, params, params) is not None:
                    continue
            except (RecursionError, TypeError):  # a schema past the checks: the text is not a call
                continue
            return [_call(name, json.dumps(args, ensure_ascii=False))]
    return None


def _call(name: str, arguments: str) -> ToolCall:
    return ToolCall(id="call_" + uuid.uuid4().hex[:24], function=FunctionCall(name=name, arguments=arguments))


def token_logprob(gen_token: Any, pieces: list[bytes] | None, with_top: int) -> TokenLogprob:
    """One output token in OpenAI's logprobs shape. A token the format forced has probability 1 (logprob 0)."""
    raw = pieces[gen_token.id] if pieces is not None else gen_token.text.encode()
    lp = gen_token.logprob if gen_token.logprob is not None else 0.0
    alts: list[TopLogprob] = []
    if with_top:
        top = gen_token.top if gen_token.top is not None else [(gen_token.id, 0.0)]
        for tid, tlp in top[:with_top]:
            b = pieces[tid] if pieces is not None else b""
            alts.append(TopLogprob(token=b.decode("utf-8", "replace"), logprob=tlp, bytes=list(b)))
    return TokenLogprob(token=raw.decode("utf-8", "replace"), logprob=lp, bytes=list(raw), top_logprobs=alts)


def logprobs(tokens: list[Any], pieces: list[bytes] | None, with_top: int) -> ChoiceLogprobs:
    """The logprobs of `tokens` (a whole answer, or the tokens one chunk carries)."""
    return ChoiceLogprobs(content=[token_logprob(t, pieces, with_top) for t in tokens])


def answer_tokens(gen: Generation, content: str, pieces: list[bytes] | None) -> list[Any]:
    """The tokens of `gen` that wrote `content` (the answer after a think block), for /v1/responses, whose
    reasoning is an item of its own. All tokens when there is no block. (Chat completions keep every token.)"""
    if content == gen.text or not gen.text.endswith(content):
        return list(gen.tokens)
    start, at, out = len(gen.text[: len(gen.text) - len(content)].encode()), 0, []
    for t in gen.tokens:
        at += len(pieces[t.id] if pieces is not None else t.text.encode())
        if at > start:
            out.append(t)
    return out


def usage(gen: Generation) -> Usage:
    """Token counts, as OpenAI reports them for reasoning models: prompt (cached part too), completion (the
    think block and the answer: never more than max_tokens), of which reasoning (the think block, markers
    included), total."""
    return Usage(
        prompt_tokens=gen.n_prompt_tokens,
        completion_tokens=gen.n_output_tokens,
        total_tokens=gen.n_prompt_tokens + gen.n_output_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=gen.n_cached_prompt_tokens),
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=gen.n_reasoning_tokens),
    )


def completion(p: Plan, gen: Generation, cid: str, model: str, fingerprint: str, pieces: list[bytes] | None) -> ChatCompletion:
    """The whole answer (non-streaming)."""
    from ..core.reasoning import split_reasoning

    reasoning, text = split_reasoning(gen.text) if p.options.think_tokens else (None, gen.text)
    calls = tool_calls(p, text)
    message = AssistantMessage(content=None if calls else text)
    if p.options.think_tokens:
        message.reasoning_content = reasoning
    if calls:
        message.tool_calls = calls
    return ChatCompletion(
        id=cid,
        created=int(time.time()),
        model=model,
        system_fingerprint=fingerprint,
        choices=[
            Choice(
                message=message,
                logprobs=logprobs(gen.tokens, pieces, p.top_logprobs) if p.logprobs else None,  # think block too, as streamed
                finish_reason=finish_reason(gen, calls),
            )
        ],
        usage=usage(gen),
    )


def chunk(
    cid: str,
    model: str,
    fingerprint: str,
    delta: Delta | None,
    logprobs: ChoiceLogprobs | None = None,
    finish_reason: FinishReason | None = None,
    usage: Usage | None = None,
) -> ChatCompletionChunk:
    """One streaming chunk (`delta` None: the usage-only chunk with no choices)."""
    choices = [] if delta is None else [ChunkChoice(delta=delta, logprobs=logprobs, finish_reason=finish_reason)]
    out = ChatCompletionChunk(id=cid, created=int(time.time()), model=model, system_fingerprint=fingerprint, choices=choices)
    if usage is not None:
        out.usage = usage
    return out
