"""The OpenAI chat-completions protocol: what a request (`wire.ChatRequest`) asks of the engine (a `Plan`:
messages, output format, decode options, tool mode). `answer.py` turns the generation into the answer.

What a request asks for decides the output format:
  * `tools` with `tool_choice` naming a function: its `parameters` schema (the answer is a tool call);
    `tool_choice: "required"`: `{"name": <one of the tools>, "arguments": <its parameters>}`;
  * else `response_format` `json_schema`: the client's schema; `json_object`: any JSON object;
  * else free text (`text`): no constraint, at most `max_tokens` (default: the server's text cap).
With `tool_choice` "auto" (or absent) the answer is free text; text that spells a call of one of the
tools (`{"name": ..., "arguments": {...}}`, arguments valid) is answered as a tool call. With `tools` (auto)
and a `json_schema` response_format together, the answer is constrained to either: a call of one of the
tools (its arguments by the tool's schema) or content valid for the response schema.
One exception to auto (`_catalog_call`, with the server's catalog): messages that are a known judge prompt
(`Catalog.known`), sent with exactly one tool and no tool_choice, response_format or alias contract, are
answered with a call of that tool, as if tool_choice named it (instructor's TOOLS mode through LiteLLM's
`ollama_chat/` drops tool_choice; a judge prompt wants its verdict, never free text). Recorded in `contract`.
`strict` (response_format's or a tool's) must be a boolean; true and false compile the schema alike and
exactly (a keyword that cannot be honoured is a 400, never dropped): localjudge has no looser mode.

Tools are shown to the model in a system message (its chat template need not know about tools).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from ... import jsonio
from ...engine.base import GenerateOptions, Message
from ...formats import OutputFormat
from . import json_mode
from .catalog import Catalog
from .errors import bad_request, invalid_body
from .validate import check_schema, check_text
from .wire import (
    MAX_STOP,
    ChatRequest,
    FunctionDef,
    JSONObjectResponse,
    JSONSchemaResponse,
    RefusedFormat,
    ResponseFormat,
    TextResponse,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .aliases import Alias


def parse_request(data: Any) -> ChatRequest:
    """The request body (parsed JSON) as a `ChatRequest`; a 400 naming the first bad parameter otherwise."""
    if not isinstance(data, dict):
        raise bad_request(f"the request body must be a JSON object, got {type(data).__name__}")
    check_text(data)
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as e:
        raise invalid_body(e) from None


# ------------------------------------------------------------------------------------------ the plan


@dataclass
class Plan:
    """What one request asks of the engine, and how to answer it."""

    messages: list[Message]
    fmt: OutputFormat | None  # None: free text (the server picks its text format)
    schema: dict[str, Any] | None  # the schema to constrain to (None: free text)
    schema_name: str | None
    options: GenerateOptions
    max_tokens: int | None  # as the client gave it (None: the format's budget, clamped to the context)
    stream: bool = False
    include_usage: bool = False
    logprobs: bool = False
    top_logprobs: int = 0
    tool_mode: Literal["none", "named", "required", "auto"] = "none"
    tools: dict[str, FunctionDef] = field(default_factory=dict)
    named: str | None = None
    contract: str | None = None  # the catalog contract applied (or why not): `X-Localjudge-Contract`


def _text(content: str | list[dict[str, Any]] | None, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    out = []
    for i, part in enumerate(content):
        kind = part.get("type")
        if kind != "text" or not isinstance(part.get("text"), str):
            raise bad_request(
                f"{where}.content[{i}]: content parts of type {kind!r} are not supported (this server runs a text-only "
                "model); send text parts",
                param=f"{where}.content",
            )
        out.append(part["text"])
    return "\n".join(out)


def _messages(req: ChatRequest) -> list[Message]:
    out: list[Message] = []
    for i, m in enumerate(req.messages):
        where = f"messages[{i}]"
        text = _text(m.content, where)
        if m.role in ("system", "developer"):
            out.append(Message(role="system", content=text))
        elif m.role == "user":
            out.append(Message(role="user", content=text))
        elif m.role == "assistant":
            calls = [json.dumps({"name": c.function.name, "arguments": _args(c.function.arguments)}) for c in m.tool_calls or []]
            out.append(Message(role="assistant", content="\n".join([x for x in (text, *calls) if x])))
        else:  # a tool's (or legacy function's) result, shown as a user turn
            who = m.name or m.tool_call_id or "tool"
            out.append(Message(role="user", content=f"Result of {who}:\n{text}"))
    return out


def _args(text: str) -> Any:
    try:
        return jsonio.loads(text, max_depth=jsonio.PARSER_DEPTH)
    except (json.JSONDecodeError, RecursionError):
        return text


def _stops(stop: str | list[str] | None) -> list[str]:
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    if len(stops) > MAX_STOP:
        raise bad_request(f"stop: at most {MAX_STOP} stop sequences, got {len(stops)}", param="stop")
    if any(not s for s in stops):
        raise bad_request("stop: stop sequences must not be empty", param="stop")
    return stops


def _hoist(params: dict[str, Any], prefix: str, at: str, defs: dict[str, Any]) -> dict[str, Any]:
    """`params` moved to JSON pointer `at` of a wrapping schema: its `$defs`/`definitions` go into `defs`
    (the root's, names prefixed by the tool), and its local `$ref`s are rewritten to point there, so a
    tool's pydantic `$defs` still resolve once the call schema wraps it."""

    def ref(r: str) -> str:
        for key in ("$defs", "definitions"):
            if r.startswith(f"#/{key}/"):
                return f"#/$defs/{prefix}{r[len(key) + 3 :]}"
        return at + r[1:] if r == "#" or r.startswith("#/") else r

    def rewrite(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: ref(v) if k == "$ref" and isinstance(v, str) else rewrite(v) for k, v in x.items()}
        return [rewrite(v) for v in x] if isinstance(x, list) else x

    for key in ("$defs", "definitions"):
        if isinstance(params.get(key), dict):
            defs.update({prefix + name: rewrite(d) for name, d in params[key].items()})
    return rewrite({k: v for k, v in params.items() if k not in ("$defs", "definitions")})


def _apply_alias(alias: Alias, req: ChatRequest, p: Plan) -> None:
    """Give `p` the alias's contract unless the request chose its own (a response_format, forced tools). Here, not
    on `Alias`: the plan is this module's, and aliases.py stays below it."""
    if req.response_format is not None or p.tool_mode in ("named", "required"):
        return
    if alias.schema is not None and p.tool_mode == "auto":
        p.schema, p.schema_name = _tool_schema(p.tools, list(p.tools), answer=alias.schema), f"tool_call_or_{alias.name}"
    elif alias.schema is not None:
        p.schema, p.schema_name = alias.schema, alias.name
    elif p.tool_mode == "none":
        p.fmt = alias.fmt


def _tool_schema(tools: dict[str, FunctionDef], names: list[str], answer: dict[str, Any] | None = None) -> dict[str, Any]:
    """A call of one of `names` (`{"name", "arguments"}`, the arguments valid for that tool's parameters); with
    `answer` (tool_choice auto and a response_format schema) that schema is one more branch of the `anyOf`."""
    defs: dict[str, Any] = {}
    n_branches = len(names) + (answer is not None)

    def params(n: str, at: str) -> dict[str, Any]:
        p = tools[n].parameters or {"type": "object", "properties": {}, "additionalProperties": False}
        return _hoist(p, f"{n}__", at, defs)

    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"const": n},
                "arguments": params(n, "#/properties/arguments" if n_branches == 1 else f"#/anyOf/{i}/properties/arguments"),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for i, n in enumerate(names)
    ]
    if answer is not None:
        calls.append(_hoist(answer, "response__", f"#/anyOf/{len(calls)}", defs))
    out: dict[str, Any] = calls[0] if len(calls) == 1 else {"anyOf": calls}
    return {**out, "$defs": defs} if defs else out


def _tools_note(tools: dict[str, FunctionDef], mode: str, named: str | None) -> str:
    lines = ["You can call these functions:"]
    for t in tools.values():
        params = json.dumps(t.parameters or {}, separators=(",", ":"), ensure_ascii=False)
        lines.append(f"- {t.name}: {t.description or ''} Arguments (JSON schema): {params}")
    if mode == "named":
        lines.append(f"Call the function {named}: answer with its arguments as one JSON object.")
    elif mode == "required":
        lines.append('Call one of them: answer with {"name": <function name>, "arguments": <its arguments>}.')
    else:
        lines.append('To call one, answer only with {"name": <function name>, "arguments": <its arguments>}.')
    return "\n".join(lines)


def plan(
    req: ChatRequest, *, field_tokens: int, catalog: Catalog | None = None, aliases: Mapping[str, Alias] | None = None
) -> Plan:
    """Check a request and turn it into a `Plan`; a 400 naming the parameter for anything that cannot be honoured.
    When `req.model` is one of `aliases`, its default output contract fills in a missing response_format."""
    if req.n not in (None, 1):
        raise bad_request("n: only n=1 is supported; send one request per completion", param="n")
    for key in ("frequency_penalty", "presence_penalty"):
        if getattr(req, key):
            raise bad_request(f"{key}: not supported (a judge decodes without penalties); leave it out or 0", param=key)
    if req.logit_bias:
        raise bad_request("logit_bias: not supported; leave it out", param="logit_bias")
    if req.functions is not None or req.function_call is not None:
        raise bad_request(
            "functions/function_call are deprecated and not supported; send tools and tool_choice", param="functions"
        )
    if req.top_logprobs and not req.logprobs:
        raise bad_request("top_logprobs: needs logprobs set to true", param="top_logprobs")
    if req.max_tokens is not None and req.max_completion_tokens is not None and req.max_tokens != req.max_completion_tokens:
        raise bad_request("max_tokens and max_completion_tokens disagree; send one of them", param="max_tokens")
    messages = _messages(req)
    temperature = req.temperature or 0.0  # a judge server decodes greedily unless asked otherwise
    if req.top_p == 0:
        temperature = 0.0
    stops = _stops(req.stop)
    options = GenerateOptions(
        temperature=temperature,
        seed=(req.seed or 0) % (1 << 63),
        top_p=req.top_p or 1.0,
        stop=stops,
        top_logprobs=req.top_logprobs or 0,
        think_tokens=req.think_tokens or 0,
    )
    p = Plan(
        messages=messages,
        fmt=None,
        schema=None,
        schema_name=None,
        options=options,
        max_tokens=req.max_completion_tokens or req.max_tokens,
        stream=bool(req.stream),
        include_usage=bool(req.stream and req.stream_options and req.stream_options.include_usage),
        logprobs=bool(req.logprobs),
        top_logprobs=req.top_logprobs or 0,
    )
    forced = _catalog_call(req, messages, catalog, aliases)
    _plan_tools(req, p, forced[1] if forced else None)
    if forced:
        p.contract = forced[0]
    if p.tool_mode in ("none", "auto"):
        _plan_response_format(req.response_format, p)
    if aliases and req.model in aliases:
        _apply_alias(aliases[req.model], req, p)
    if catalog is not None and p.tool_mode == "none" and p.fmt is None:  # a known judge prompt: its own contract too
        # instructor's JSON mode adds a system message of its own: the framework's prompt is what follows it
        asked = json_mode.without_instructions(p.messages) if p.schema_name == json_mode.SCHEMA_NAME else p.messages
        hit = catalog.tighten(asked, p.schema)
        if hit is not None:
            p.contract = hit.header
            p.schema = hit.schema or p.schema
            if hit.grammar is not None:
                p.fmt = catalog.grammar_format(hit.grammar)
    return p


def _catalog_call(
    req: ChatRequest, messages: list[Message], catalog: Catalog | None, aliases: Mapping[str, Alias] | None
) -> tuple[str, str] | None:
    """`(contract label, tool name)` when the request is a known judge prompt offering exactly one tool and
    leaving the choice open (no tool_choice, response_format or alias contract): its answer is a call of it."""
    if catalog is None or req.tool_choice is not None or req.response_format is not None or len(req.tools or []) != 1:
        return None
    alias = aliases.get(req.model) if aliases and req.model else None
    if alias is not None and (alias.schema is not None or alias.fmt is not None):
        return None
    c = catalog.known(messages)
    if c is None:
        return None
    name = (req.tools or [])[0].function.name
    return f"{c.label}+tool_call", name


def _plan_tools(req: ChatRequest, p: Plan, force: str | None = None) -> None:
    """`req`'s tools into `p`; `force`: the tool the answer must call (the catalog's rule) when tool_choice is absent."""
    tools: dict[str, FunctionDef] = {}
    for i, t in enumerate(req.tools or []):
        if t.function.parameters is not None:  # checked in every tool_choice mode, compiled or not
            check_schema(t.function.parameters, f"tools[{i}].function.parameters")
        if t.function.name in tools:
            raise bad_request(f"tools: the function name {t.function.name!r} is given twice", param="tools")
        tools[t.function.name] = t.function
    choice = req.tool_choice if force is None else {"type": "function", "function": {"name": force}}
    if not tools:
        if choice not in (None, "none", "auto"):
            raise bad_request("tool_choice: given without tools; send the tools it refers to", param="tool_choice")
        return
    if choice is None or choice == "auto":
        mode, named = "auto", None
    elif choice == "none":
        return
    elif choice == "required":
        mode, named = "required", None
    elif isinstance(choice, dict):
        fn = choice.get("function")
        named = fn.get("name") if isinstance(fn, dict) else None
        if choice.get("type") != "function" or not isinstance(named, str):
            raise bad_request(
                'tool_choice: expected "none", "auto", "required" or {"type": "function", "function": {"name": ...}}',
                param="tool_choice",
            )
        if named not in tools:
            raise bad_request(f"tool_choice: function {named!r} is not among the tools ({', '.join(tools)})", param="tool_choice")
        mode = "named"
    else:
        raise bad_request(f"tool_choice: unknown value {choice!r}; use none, auto, required or a function", param="tool_choice")
    p.tool_mode, p.tools, p.named = mode, tools, named  # type: ignore[assignment]
    note = _tools_note(tools, mode, named)
    if p.messages and p.messages[0].role == "system":
        p.messages[0] = Message(role="system", content=p.messages[0].content + "\n\n" + note)
    else:
        p.messages.insert(0, Message(role="system", content=note))
    if mode == "named":
        assert named is not None
        p.schema = tools[named].parameters or {"type": "object", "properties": {}, "additionalProperties": False}
        p.schema_name = named
    elif mode == "required":
        p.schema, p.schema_name = _tool_schema(tools, list(tools)), "tool_call"


def _plan_response_format(rf: ResponseFormat | RefusedFormat | None, p: Plan) -> None:
    """`rf`, typed when the body was read (`wire.ResponseFormat`), into `p`: its schema or grammar checked and
    compiled; a refused one answered here (`wire.RefusedFormat`), where it always was."""
    if rf is None or isinstance(rf, TextResponse):
        return
    if isinstance(rf, RefusedFormat):
        raise bad_request(rf.message, param="response_format")
    if isinstance(rf, JSONObjectResponse):  # the schema a JSON-mode system message states (instructor's), else any object
        stated = json_mode.stated_schema(p.messages) if p.tool_mode == "none" else None
        p.schema, p.schema_name = (stated, json_mode.SCHEMA_NAME) if stated is not None else ({"type": "object"}, "json_object")
        return
    if isinstance(rf, JSONSchemaResponse):
        schema = rf.json_schema.schema_
        check_schema(schema, "response_format")
        p.schema, p.schema_name = schema, rf.json_schema.name
        if p.tool_mode == "auto":  # tools too: a call of one of them, or content valid for the schema
            p.schema = _tool_schema(p.tools, list(p.tools), answer=schema)
            p.schema_name = f"tool_call_or_{p.schema_name or 'response'}"
        return
    # an extension: a Lark grammar (llguidance's dialect), e.g. {"type": "grammar", "grammar": "start: ..."}
    from ...formats.grammar import GrammarError, GrammarFormat

    try:
        p.fmt = GrammarFormat(rf.grammar)
    except GrammarError as e:
        raise bad_request(f"response_format.{e}", param="response_format") from None
