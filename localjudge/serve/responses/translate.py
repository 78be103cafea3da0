"""OpenAI's Responses API (`POST /v1/responses`) on the chat pipeline: a `ResponsesRequest` becomes the
`ChatRequest` it means (`to_chat`: `instructions` a system message, `input` the messages, `text.format`
the response_format, `reasoning.effort` think tokens, `max_output_tokens` max_tokens), so it is planned,
constrained, budgeted and decoded exactly as a chat completion; `response` writes the generation as a
`Response` (a reasoning item, then the message or the function call). `responses_stream` streams it.

Errors raised by the shared chat checks name chat's parameters; `renamed` gives them the Responses names.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import ValidationError

from ...engine.base import Generation
from ..chat.answer import FINISH, answer_tokens, finish_reason, tool_calls
from ..chat.answer import logprobs as chat_logprobs
from ..core.errors import APIError, bad_request, invalid_body
from ..core.plan import Plan
from ..core.validate import check_text
from ..core.wire import ChatRequest, TokenLogprob
from .wire import (
    THINK_TOKENS,
    FunctionCallOut,
    IncompleteDetails,
    InputTokensDetails,
    MessageOut,
    OutputItem,
    OutputText,
    OutputTokensDetails,
    ReasoningOut,
    ReasoningText,
    Response,
    ResponsesRequest,
    ResponseUsage,
)

LOGPROBS = "message.output_text.logprobs"
# chat's parameter -> the Responses parameter it came from (for errors raised by the shared checks)
RENAMES = {
    "response_format": "text.format",
    "max_tokens": "max_output_tokens",
    "max_completion_tokens": "max_output_tokens",
    "messages": "input",
    "think_tokens": "reasoning",
}
_TEXT_PARTS = ("input_text", "output_text", "text")


def parse(data: Any) -> ResponsesRequest:
    """The body (parsed JSON) as a `ResponsesRequest`; a 400 naming the first bad parameter otherwise."""
    if not isinstance(data, dict):
        raise bad_request(f"the request body must be a JSON object, got {type(data).__name__}")
    check_text(data)
    try:
        return ResponsesRequest.model_validate(data)
    except ValidationError as e:
        raise invalid_body(e) from None


def renamed(e: APIError) -> APIError:
    """`e` with a chat parameter name (param and the message's first word) replaced by its Responses name."""
    if e.param is None:
        return e
    head = e.param.split(".")[0].split("[")[0]
    if head not in RENAMES:
        return e
    new = RENAMES[head] + e.param[len(head) :]
    message = RENAMES[head] + e.message[len(head) :] if e.message.startswith(head) else e.message
    return APIError(e.status, message, type=e.type, param=new, code=e.code, headers=e.headers)


def _parts(content: str | list[dict[str, Any]] | None, where: str) -> str | list[dict[str, Any]]:
    if content is None or isinstance(content, str):
        return content or ""
    out = []
    for j, part in enumerate(content):
        kind = part.get("type")
        if kind not in _TEXT_PARTS or not isinstance(part.get("text"), str):
            raise bad_request(
                f"{where}.content[{j}]: parts of type {kind!r} are not supported (this server runs a text-only model); "
                "send input_text parts",
                param=f"{where}.content",
            )
        out.append({"type": "text", "text": part["text"]})
    return out


def _messages(req: ResponsesRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if req.instructions:
        out.append({"role": "system", "content": req.instructions})
    if isinstance(req.input, str):
        return [*out, {"role": "user", "content": req.input}]
    for i, item in enumerate(req.input):
        where = f"input[{i}]"
        kind = item.type or "message"
        if kind == "message":
            if item.role is None:
                raise bad_request(f"{where}.role: a message needs a role (user, system, developer or assistant)", param=where)
            out.append({"role": item.role, "content": _parts(item.content, where)})
        elif kind == "function_call":
            if not item.name or not item.call_id:
                raise bad_request(f"{where}: a function_call item needs name and call_id", param=where)
            call = {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": item.arguments or ""}}
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            if not item.call_id:
                raise bad_request(f"{where}: a function_call_output item needs call_id", param=where)
            out.append({"role": "tool", "tool_call_id": item.call_id, "content": _parts(item.output, where)})
        # a reasoning item of an earlier turn is not shown to the model again
    if not out:
        raise bad_request("input: holds no message; send a string or at least one message item", param="input")
    return out


def _tools(req: ResponsesRequest) -> tuple[list[dict[str, Any]] | None, Any]:
    tools = []
    for i, t in enumerate(req.tools or []):
        if t.type != "function":
            raise bad_request(
                f"tools[{i}].type: {t.type!r} tools are not supported (nothing runs server-side); send function tools",
                param=f"tools[{i}].type",
            )
        if not t.name:
            raise bad_request(f"tools[{i}].name: a function tool needs a name", param=f"tools[{i}].name")
        fn: dict[str, Any] = {"name": t.name, "description": t.description, "parameters": t.parameters}
        if t.strict is not None:
            fn["strict"] = t.strict
        tools.append({"type": "function", "function": fn})
    choice = req.tool_choice
    if isinstance(choice, dict):
        if choice.get("type") != "function" or not isinstance(choice.get("name"), str):
            raise bad_request(
                'tool_choice: expected "none", "auto", "required" or {"type": "function", "name": ...}', param="tool_choice"
            )
        choice = {"type": "function", "function": {"name": choice["name"]}}
    return tools or None, choice


def _response_format(req: ResponsesRequest) -> dict[str, Any] | None:
    f = req.text.format if req.text is not None else None
    if f is None or f.type == "text":
        return None
    if f.type == "json_object":
        return {"type": "json_object"}
    if f.type == "grammar":
        return {"type": "grammar", "grammar": f.grammar}
    if f.schema_ is None:
        raise bad_request("text.format.schema: a json_schema format needs its JSON schema", param="text.format.schema")
    js: dict[str, Any] = {"name": f.name or "response", "schema": f.schema_}
    if f.strict is not None:
        js["strict"] = f.strict
    return {"type": "json_schema", "json_schema": js}


def to_chat(req: ResponsesRequest) -> ChatRequest:
    """The chat request `req` means; a 400 naming the Responses parameter for what cannot be honoured."""
    if req.previous_response_id is not None or req.conversation is not None:
        param = "previous_response_id" if req.previous_response_id is not None else "conversation"
        raise bad_request(f"{param}: this server stores no responses; send the whole conversation in input", param=param)
    if req.background:
        raise bad_request("background: not supported; leave it out (responses are answered in the request)", param="background")
    tools, choice = _tools(req)
    effort = req.reasoning.effort if req.reasoning is not None else None
    think = req.think_tokens if req.think_tokens is not None else THINK_TOKENS[effort] if effort else 0
    logprobs = LOGPROBS in (req.include or []) or bool(req.top_logprobs)
    body: dict[str, Any] = {
        "model": req.model,
        "messages": _messages(req),
        "max_tokens": req.max_output_tokens,
        "temperature": req.temperature,
        "top_p": req.top_p,
        "stream": req.stream,
        "logprobs": logprobs or None,
        "top_logprobs": req.top_logprobs if logprobs else None,
        "response_format": _response_format(req),
        "tools": tools,
        "tool_choice": choice,
        "think_tokens": think or None,
    }
    try:
        return ChatRequest.model_validate({k: v for k, v in body.items() if v is not None})
    except ValidationError as e:
        raise renamed(invalid_body(e)) from None


def response_id() -> str:
    """A fresh response id."""
    return "resp_" + uuid.uuid4().hex


def item_id(prefix: str) -> str:
    """A fresh output item id (`msg`, `fc`, `rs`)."""
    return f"{prefix}_{uuid.uuid4().hex}"


def shell(req: ResponsesRequest, rid: str, model: str, status: Any = "in_progress") -> Response:
    """The response's fields that echo the request, with no output yet."""
    fmt = req.text.format.model_dump(by_alias=True, exclude_none=True) if req.text and req.text.format else {"type": "text"}
    return Response(
        id=rid,
        created_at=int(time.time()),
        status=status,
        instructions=req.instructions,
        max_output_tokens=req.max_output_tokens,
        model=model,
        output=[],
        parallel_tool_calls=req.parallel_tool_calls is not False,
        reasoning={"effort": req.reasoning.effort if req.reasoning else None, "summary": None},
        temperature=req.temperature if req.temperature is not None else 0.0,
        text={"format": fmt},
        tool_choice=req.tool_choice if req.tool_choice is not None else "auto",
        tools=[t.model_dump(exclude_none=True) for t in req.tools or []],
        top_logprobs=req.top_logprobs or 0,
        top_p=req.top_p if req.top_p is not None else 1.0,
        usage=None,
        metadata=req.metadata or {},
    )


def usage(gen: Generation) -> ResponseUsage:
    """Token counts in the Responses API's names (output includes the think block, as for reasoning models)."""
    return ResponseUsage(
        input_tokens=gen.n_prompt_tokens,
        input_tokens_details=InputTokensDetails(cached_tokens=gen.n_cached_prompt_tokens),
        output_tokens=gen.n_output_tokens,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=gen.n_reasoning_tokens),
        total_tokens=gen.n_prompt_tokens + gen.n_output_tokens,
    )


def token_logprobs(p: Plan, tokens: list[Any], pieces: list[bytes] | None) -> list[TokenLogprob]:
    """The logprobs of `tokens` when the request asked for them, else none."""
    return chat_logprobs(tokens, pieces, p.top_logprobs).content if p.logprobs else []


def output(p: Plan, gen: Generation, reasoning: str | None, text: str, pieces: list[bytes] | None) -> list[OutputItem]:
    """The output items of a finished generation: the reasoning (if the request thought), then the function
    call the text makes or the message."""
    items: list[OutputItem] = []
    if p.options.think_tokens:
        items.append(ReasoningOut(id=item_id("rs"), content=[ReasoningText(text=reasoning or "")]))
    calls = tool_calls(p, text)
    done = "incomplete" if finish_reason(gen, calls) == "length" else "completed"
    if calls:
        items += [
            FunctionCallOut(id=item_id("fc"), status=done, call_id=c.id, name=c.function.name, arguments=c.function.arguments)
            for c in calls
        ]
    else:
        part = OutputText(text=text, logprobs=token_logprobs(p, answer_tokens(gen, text, pieces), pieces))
        items.append(MessageOut(id=item_id("msg"), status=done, content=[part]))
    return items


def finish(resp: Response, gen: Generation, items: list[OutputItem]) -> Response:
    """`resp` completed (or incomplete: the token budget ran out) with `items` and the usage."""
    cut = not any(isinstance(i, FunctionCallOut) for i in items) and FINISH.get(gen.stop_reason) == "length"
    resp.output, resp.usage = items, usage(gen)
    resp.status = "incomplete" if cut else "completed"
    if cut:
        resp.incomplete_details = IncompleteDetails()
    return resp


def response(req: ResponsesRequest, p: Plan, gen: Generation, rid: str, model: str, pieces: list[bytes] | None) -> Response:
    """The whole (non-streamed) response."""
    from ..core.reasoning import split_reasoning

    reasoning, text = split_reasoning(gen.text) if p.options.think_tokens else (None, gen.text)
    return finish(shell(req, rid, model), gen, output(p, gen, reasoning, text, pieces))
