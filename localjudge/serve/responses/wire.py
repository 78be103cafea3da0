"""The bodies of `POST /v1/responses` (OpenAI's Responses API) as pydantic models: the request (lenient:
unknown keys ignored; what cannot be honoured is refused by `responses.to_chat`), the whole response, and
the one model every streamed event fits (`ResponseEvent`: its `type` says which of the optional fields it
carries). `openapi.py` documents them from these classes, as for the chat models in `wire.py`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from ..core.wire import MAX_MESSAGES, MAX_TOOLS, Lenient, TokenLogprob, Wire

Effort = Literal["none", "minimal", "low", "medium", "high"]
THINK_TOKENS: dict[str, int] = {"none": 0, "minimal": 0, "low": 128, "medium": 512, "high": 2048}  # reasoning.effort

# ------------------------------------------------------------------------------------------ requests


class InputItem(Lenient):
    """One item of `input`: a message (`type` "message" or absent: role and content), a function call the
    model made earlier (`function_call`), a tool's result (`function_call_output`), or an earlier turn's
    reasoning (`reasoning`: not shown to the model again)."""

    type: Literal["message", "function_call", "function_call_output", "reasoning"] | None = None
    role: Literal["system", "developer", "user", "assistant"] | None = None
    content: str | list[dict[str, Any]] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: str | list[dict[str, Any]] | None = None


class TextFormat(Lenient):
    """`text.format`: free text, any JSON object, a JSON schema (flat: name, schema, strict) or a Lark grammar
    (localjudge's extension, as in chat's `response_format`)."""

    type: Literal["text", "json_object", "json_schema", "grammar"]
    name: str | None = None
    description: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None
    grammar: str | None = None


class TextConfig(Lenient):
    """`text`: the output's format."""

    format: TextFormat | None = None


class ReasoningConfig(Lenient):
    """`reasoning`: `effort` becomes a think block of at most `THINK_TOKENS[effort]` tokens before the answer."""

    effort: Effort | None = None
    summary: str | None = None


class ResponseTool(Lenient):
    """A function tool (Responses' flat shape: name, description, parameters, strict)."""

    type: str
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ResponsesRequest(Lenient):
    """POST /v1/responses. Unknown keys are ignored; keys that would need server-side state or other
    behaviour (`previous_response_id`, `conversation`, `background`, non-function tools) are refused."""

    model: str = Field(min_length=1)
    input: str | list[InputItem] = Field(max_length=MAX_MESSAGES)
    instructions: str | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    stream: StrictBool | None = None  # a JSON boolean, as on every route
    text: TextConfig | None = None
    reasoning: ReasoningConfig | None = None
    tools: list[ResponseTool] | None = Field(None, max_length=MAX_TOOLS)
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    include: list[str] | None = Field(None, max_length=16)
    previous_response_id: str | None = None
    conversation: Any = None
    background: bool | None = None
    store: bool | None = None
    metadata: dict[str, str] | None = Field(None, max_length=16)
    think_tokens: int | None = Field(None, ge=0, le=8192)  # extension, as on chat: overrides reasoning.effort


# ------------------------------------------------------------------------------------------- answers


class OutputText(Wire):
    """A message's text part (its token logprobs when `include` asked for them)."""

    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[Any] = Field(default_factory=list)
    logprobs: list[TokenLogprob] = Field(default_factory=list)


class ReasoningText(Wire):
    """The think block's text."""

    type: Literal["reasoning_text"] = "reasoning_text"
    text: str


class MessageOut(Wire):
    """The answer as an assistant message."""

    id: str
    type: Literal["message"] = "message"
    status: Literal["in_progress", "completed", "incomplete"]
    role: Literal["assistant"] = "assistant"
    content: list[OutputText]


class FunctionCallOut(Wire):
    """The answer as a call of one of the tools."""

    id: str
    type: Literal["function_call"] = "function_call"
    status: Literal["in_progress", "completed", "incomplete"]
    call_id: str
    name: str
    arguments: str


class ReasoningOut(Wire):
    """The think block (a request with `reasoning` or `think_tokens`), before the answer."""

    id: str
    type: Literal["reasoning"] = "reasoning"
    summary: list[Any] = Field(default_factory=list)
    content: list[ReasoningText]


OutputItem = MessageOut | FunctionCallOut | ReasoningOut


class InputTokensDetails(Wire):
    """Of the input tokens: those read from the prefix cache (`cache_write_tokens`: always 0, nothing is
    billed for caching here; the openai client requires the field)."""

    cache_write_tokens: int = 0
    cached_tokens: int


class OutputTokensDetails(Wire):
    """Of the output tokens: the think block's (markers included)."""

    reasoning_tokens: int


class ResponseUsage(Wire):
    """Token counts in the Responses API's names."""

    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class IncompleteDetails(Wire):
    """Why a response stopped short: the output-token budget."""

    reason: Literal["max_output_tokens"] = "max_output_tokens"


class Response(Wire):
    """`POST /v1/responses`: the whole response (and the `response` of the created/in_progress/completed
    events while streaming: `status` in_progress, `output` empty until the end). Nothing is stored
    (`store` is always false)."""

    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: Literal["in_progress", "completed", "incomplete"]
    error: None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None
    max_output_tokens: int | None
    model: str
    output: list[OutputItem]
    parallel_tool_calls: bool
    previous_response_id: None = None
    reasoning: dict[str, Any]
    store: bool = False
    temperature: float
    text: dict[str, Any]
    tool_choice: Any
    tools: list[dict[str, Any]]
    top_logprobs: int
    top_p: float
    truncation: Literal["disabled"] = "disabled"
    usage: ResponseUsage | None
    metadata: dict[str, str]


class ResponseEvent(Wire):
    """One server-sent event of a streamed response (`event: <type>` then `data: <this>`): the response
    (created, in_progress, completed/incomplete), an output item added or done, a content part added or
    done, a text or reasoning delta, the finished text, a function call's arguments, or an error."""

    omit_unset = frozenset(
        {
            "response",
            "output_index",
            "item_id",
            "content_index",
            "item",
            "part",
            "delta",
            "text",
            "arguments",
            "logprobs",
            "code",
            "message",
            "param",
        }
    )
    type: str
    sequence_number: int
    response: Response | None = None
    output_index: int | None = None
    item_id: str | None = None
    content_index: int | None = None
    item: OutputItem | None = None
    part: OutputText | ReasoningText | None = None
    delta: str | None = None
    text: str | None = None
    arguments: str | None = None
    logprobs: list[TokenLogprob] | None = None
    code: str | None = None  # an error event's
    message: str | None = None
    param: str | None = None
