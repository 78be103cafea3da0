"""The bodies `localjudge serve` reads and writes, as pydantic models mirroring the OpenAI API: the chat
request (lenient: unknown keys ignored) and every answer (completion, streamed chunk, model list, error,
health). `openapi.py` generates the OpenAPI document from these classes, so the document is what is served.

An answer is written by `Wire.body()`: fields in declaration order, which is the order on the wire. A field
named in a class's `omit_unset` is left out unless it was given (given as None it is sent as null); every
other field is always sent, None as null. The JSON text is made by the caller (`json.dumps` with Starlette's
compact separators for a body, the default ones for an SSE chunk), as before these models existed.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
)
from pydantic_core import PydanticCustomError

MAX_MESSAGES = 1024
MAX_STOP = 16
MAX_TOOLS = 128

FinishReason = Literal["stop", "length", "tool_calls"]

# ------------------------------------------------------------------------------------------ requests


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionCall(Lenient):
    """A tool call's function: name and JSON arguments text."""

    name: str
    arguments: str = ""


class ToolCallIn(Lenient):
    """A tool call in an assistant message of the conversation."""

    id: str | None = None
    type: str = "function"
    function: FunctionCall


class ChatMessage(Lenient):
    """One message of the conversation (text content, or text content parts)."""

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None


class FunctionDef(Lenient):
    """A function the model may call: name, description, parameters schema."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None  # true or false: compiled alike, exactly (see protocol.py)


class Tool(Lenient):
    """A tool of the request (functions only)."""

    type: Literal["function"]
    function: FunctionDef


class StreamOptions(Lenient):
    """`stream_options`: whether the last chunk carries the usage counts."""

    include_usage: bool = False


def _text_or_none(value: Any) -> Any:
    """A name or description that is not a string is no name (as the hand checks before the typed models read it)."""
    return value if isinstance(value, str) else None


class TextResponse(Lenient):
    """`response_format` `{"type": "text"}`: free text."""

    type: Literal["text"]


class JSONObjectResponse(Lenient):
    """`{"type": "json_object"}`: any JSON object (or the schema a JSON-mode system message states)."""

    type: Literal["json_object"]


class JSONSchemaSpec(Lenient):
    """`json_schema` of a `json_schema` response format: the schema, its name, and `strict` (true and false compile
    alike and exactly: localjudge has no looser mode)."""

    name: str | None = None
    description: str | None = None
    schema_: dict[str, Any] = Field(alias="schema")
    strict: StrictBool | None = None

    _lenient_text = field_validator("name", "description", mode="before")(_text_or_none)


class JSONSchemaResponse(Lenient):
    """`{"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}}`."""

    type: Literal["json_schema"]
    json_schema: JSONSchemaSpec


class GrammarResponse(Lenient):
    """`{"type": "grammar", "grammar": "start: ..."}`: localjudge's extension, a Lark grammar (llguidance's dialect)."""

    type: Literal["grammar"]
    grammar: str = Field(pattern=r"\S")


ResponseFormat = Annotated[TextResponse | JSONObjectResponse | JSONSchemaResponse | GrammarResponse, Field(discriminator="type")]
_RESPONSE_FORMAT: TypeAdapter[ResponseFormat] = TypeAdapter(ResponseFormat)
FORMAT_TYPES = "text, json_object, json_schema or grammar"
# the one line a part of a response_format of the wrong shape gets, by where it is (the first part wrong wins)
_SHAPE = {
    ("json_schema", "json_schema"): "response_format.json_schema: must be an object with name and schema",
    ("json_schema", "json_schema", "schema"): "response_format.json_schema.schema: must be a JSON schema object",
    ("json_schema", "json_schema", "strict"): "response_format.json_schema.strict: must be true or false",
    ("grammar", "grammar"): "response_format.grammar: must be a Lark grammar string with a 'start' rule",
}


class RefusedFormat:
    """A `response_format` object the typed union refuses, with the one-line 400 it gets. Kept rather than raised
    while the body is read: the plan answers it where it decides the output format, so a request whose tools decide
    the answer (a named or required tool_choice) ignores its response_format as before, and the request's other
    checks (model, n, penalties) keep answering first."""

    def __init__(self, message: str):
        self.message = message


def typed_response_format(value: Any) -> ResponseFormat | RefusedFormat | None:
    """`value` as a typed response format; a `RefusedFormat` naming its first wrong part; not an object: refused
    at once, as any field of the wrong type (a typed value or a refusal passes through: a request built in code)."""
    if value is None or isinstance(value, (RefusedFormat, TextResponse, JSONObjectResponse, JSONSchemaResponse, GrammarResponse)):
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError("dict_type", "Input should be a valid dictionary")
    try:
        return _RESPONSE_FORMAT.validate_python(value)
    except ValidationError as e:
        errors = e.errors()
        if any(err["type"].startswith("union_tag") for err in errors):
            return RefusedFormat(f"response_format.type: {value.get('type')!r} is not supported; use {FORMAT_TYPES}")
        where = [tuple(x for x in err["loc"] if isinstance(x, str))[:3] for err in errors]
        return RefusedFormat(next((_SHAPE[w] for w in where if w in _SHAPE), _SHAPE[where[0][:2]]))


class ChatRequest(Lenient):
    """POST /v1/chat/completions. Unknown keys are ignored; keys that would change the output and are not
    implemented (penalties, logit_bias, n > 1, functions) are refused by `protocol.plan`."""

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    n: int | None = Field(None, ge=1)
    stream: StrictBool | None = None  # a JSON boolean, as on every route
    stream_options: StreamOptions | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    response_format: ResponseFormat | RefusedFormat | None = None  # a refusal is answered by `plan`
    tools: list[Tool] | None = Field(None, max_length=MAX_TOOLS)
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logit_bias: dict[str, Any] | None = None
    functions: Any = None
    function_call: Any = None
    # extension (like llama.cpp's reasoning_format): think in free text inside <think>...</think> for at most
    # N tokens before the constrained answer; the think text comes back as message.reasoning_content. As for
    # OpenAI's reasoning models, max_tokens bounds the think block and the answer together
    think_tokens: int | None = Field(None, ge=0, le=8192)

    _typed_format = field_validator("response_format", mode="plain", json_schema_input_type=ResponseFormat | None)(
        typed_response_format
    )


# ------------------------------------------------------------------------------------------- answers


def _required(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """An answer's JSON schema requires every field it always sends (all but `omit_unset`)."""
    omit = cls.omit_unset if issubclass(cls, Wire) else frozenset()
    schema["required"] = [name for name in cls.model_fields if name not in omit]


class Wire(BaseModel):
    """An answer body; `omit_unset`: the fields left out unless given."""

    model_config = ConfigDict(json_schema_extra=_required)
    omit_unset: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        for name in self.omit_unset - self.model_fields_set:
            out.pop(name, None)
        return out

    def body(self) -> dict[str, Any]:
        """The answer as plain JSON-ready values, in wire order (floats as they are: no inf/nan rewriting)."""
        out: dict[str, Any] = self.model_dump()
        return out


class ErrorDetail(Wire):
    """What went wrong: a one-line message naming the parameter, the OpenAI error type, the parameter, a code."""

    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(Wire):
    """Every error answer: `{"error": {...}}`."""

    error: ErrorDetail


class ServedBy(Wire):
    """localjudge's extension of a model card: what exactly is served."""

    version: str
    backend: str
    model_id: str
    digest: str
    settings: dict[str, Any]
    n_ctx: int


class ModelCard(Wire):
    """The served model (`GET /v1/models/{name}`)."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    localjudge: ServedBy


class ModelList(Wire):
    """`GET /v1/models`: the one served model."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class Health(Wire):
    """`GET /health`: liveness; the counters too, unless the server has a key and the request lacks it."""

    omit_unset = frozenset(
        {
            "model",
            "in_flight",
            "completed",
            "cancelled",
            "refused_busy",
            "errors",
            "schemas_compiled",
            "compiles_waiting",
            "uptime_s",
        }
    )
    status: Literal["ok"] = "ok"
    model: str | None = None
    in_flight: int | None = None
    completed: int | None = None
    cancelled: int | None = None
    refused_busy: int | None = None
    errors: int | None = None
    schemas_compiled: int | None = None
    compiles_waiting: int | None = None
    uptime_s: float | None = None


class ToolCall(Wire):
    """A tool call the answer makes."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class ToolCallDelta(Wire):
    """A tool call in a streamed chunk (sent whole, in the last content chunk)."""

    index: int
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class TopLogprob(Wire):
    """An alternative token at one position, with its log probability and UTF-8 bytes."""

    token: str
    logprob: float
    bytes: list[int]


class TokenLogprob(Wire):
    """One output token's log probability (0 for a token the format forced) and its alternatives."""

    token: str
    logprob: float
    bytes: list[int]
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(Wire):
    """The log probabilities of a choice's tokens."""

    content: list[TokenLogprob]
    refusal: None = None


class AssistantMessage(Wire):
    """The answer's message: text content, or a tool call (content null); `reasoning_content` (the think
    block's text, null when there was none) only when the request asked for `think_tokens`."""

    omit_unset = frozenset({"reasoning_content", "tool_calls"})
    role: Literal["assistant"] = "assistant"
    content: str | None
    refusal: None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None


class Choice(Wire):
    """The one choice of a completion."""

    index: int = 0
    message: AssistantMessage
    logprobs: ChoiceLogprobs | None
    finish_reason: FinishReason


class PromptTokensDetails(Wire):
    """Of the prompt tokens: those read from the prefix cache."""

    cached_tokens: int


class CompletionTokensDetails(Wire):
    """Of the completion tokens: the think block's (markers included)."""

    reasoning_tokens: int


class Usage(Wire):
    """Token counts, as OpenAI reports them for reasoning models."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class ChatCompletion(Wire):
    """`POST /v1/chat/completions` without `stream`: the whole answer."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    system_fingerprint: str
    choices: list[Choice]
    usage: Usage


class Delta(Wire):
    """What a streamed chunk adds: the role (first chunk), reasoning text, content text, or the tool call."""

    omit_unset = frozenset({"role", "reasoning_content", "content", "tool_calls"})
    role: Literal["assistant"] | None = None
    reasoning_content: str | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(Wire):
    """The one choice of a streamed chunk."""

    index: int = 0
    delta: Delta
    logprobs: ChoiceLogprobs | None = None
    finish_reason: FinishReason | None = None


class ChatCompletionChunk(Wire):
    """One server-sent event of a streamed completion; the usage-only chunk (asked by
    `stream_options.include_usage`) has no choices and carries `usage`."""

    omit_unset = frozenset({"usage"})
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    system_fingerprint: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
