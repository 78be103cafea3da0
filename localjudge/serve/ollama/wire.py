"""The bodies of Ollama's API as `localjudge serve` reads and writes them (`/api/chat`, `/api/generate`,
`/api/tags`, `/api/show`, `/api/version`, `/api/ps`), as pydantic models; `ollama.py` serves them and the
OpenAPI document is generated from them, as for the OpenAI bodies in `wire.py`.

Requests are lenient about unknown top-level keys (Ollama ignores them too) but strict inside `options`: a
sampling option that would change the answer and is not implemented is a 400 naming it (`OPTIONS`).
Every error is Ollama's shape, `{"error": "<one line>"}`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, field_validator

from ..core.wire import MAX_MESSAGES, MAX_TOOLS, FunctionDef, Lenient, Wire

# options that only say how the model is run (threads, GPU layers, memory mapping): they cannot change the
# answer, so they are accepted and ignored
RUNTIME_OPTIONS = frozenset(
    {"num_thread", "num_gpu", "main_gpu", "num_batch", "use_mmap", "use_mlock", "numa", "low_vram", "vocab_only", "f16_kv"}
)
# options that would change the answer and are implemented
OPTIONS = frozenset({"temperature", "top_k", "top_p", "seed", "num_predict", "num_ctx", "stop"})
# the think budget of `think: true` and of the effort levels (tokens of free-text thinking before the answer)
THINK_TOKENS = {True: 256, "low": 128, "medium": 256, "high": 1024}
MAX_KEEP_ALIVE = 64  # characters of a keep_alive duration string (accepted, not used: the model stays loaded)
# levels of objects and arrays in a conversation's tool-call `arguments`: as deep as a tool's parameters schema may
# constrain them (formats/llg_schema.py LLG_MAX_DEPTH). Deeper ones are refused: each level is prompt tokens
# (about 3.5 per level, so 500 levels were ~1,800 tokens and 19.5 s of prefill for an 8-token answer)
MAX_ARGUMENT_DEPTH = 32


def depth(value: Any) -> int:
    """Levels of objects and arrays in a JSON value (0 for a scalar), counted without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, d + 1)
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


# ------------------------------------------------------------------------------------------ requests


class OllamaOptions(Lenient):
    """`options`: the sampling settings localjudge maps (checked by `ollama.check_options` for the rest)."""

    temperature: float | None = Field(None, ge=0, le=2)
    top_k: int | None = Field(None, ge=0, le=1 << 20)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = Field(None, ge=-(1 << 63), lt=1 << 64)
    num_predict: int | None = Field(None, ge=-2, le=1 << 20)  # -1: no limit, -2: fill the context
    num_ctx: int | None = Field(None, ge=1)
    stop: list[str] | None = None


class OllamaToolFunction(Lenient):
    """A tool call's function in a conversation message: name and arguments (an object)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _shallow(cls, v: dict[str, Any]) -> dict[str, Any]:
        if depth(v) > MAX_ARGUMENT_DEPTH:
            raise ValueError(
                f"nested deeper than {MAX_ARGUMENT_DEPTH} levels (the most a tool's parameters are constrained to); flatten them"
            )
        return v


class OllamaToolCall(Lenient):
    """A tool call in an assistant message of the conversation."""

    function: OllamaToolFunction


class OllamaMessage(Lenient):
    """One message of the conversation (`images` are refused: the served model reads text)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    thinking: str | None = None
    images: list[str] | None = None
    tool_calls: list[OllamaToolCall] | None = None
    tool_name: str | None = None


class OllamaTool(Lenient):
    """A tool of a chat request, as Ollama (and OpenAI) spell it: a function with name, description and
    JSON-schema parameters. Checked and compiled as the OpenAI route's tools are (`protocol.plan`)."""

    type: Literal["function"] = "function"
    function: FunctionDef


class _Request(Lenient):
    model: str = Field(min_length=1)
    format: Literal["", "json"] | dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    stream: StrictBool | None = None  # Ollama streams unless told `false`
    think: StrictBool | Literal["low", "medium", "high"] | None = None
    keep_alive: Annotated[str, Field(max_length=MAX_KEEP_ALIVE)] | float | None = None


class OllamaChatRequest(_Request):
    """POST /api/chat; with `tools` the answer may be a call of one of them (`message.tool_calls`)."""

    messages: list[OllamaMessage] = Field(default_factory=list, max_length=MAX_MESSAGES)
    tools: list[OllamaTool] | None = Field(None, max_length=MAX_TOOLS)


class OllamaGenerateRequest(_Request):
    """POST /api/generate: one prompt (with `system` before it); `raw`, `suffix`, `context` and `images` are
    refused (the chat template is always applied; no fill-in-the-middle)."""

    prompt: str = ""
    system: str | None = None
    tools: list[dict[str, Any]] | None = None  # refused: Ollama's /api/generate has no tools
    suffix: str | None = None
    raw: bool | None = None
    template: str | None = None
    context: list[int] | None = None
    images: list[str] | None = None


class OllamaShowRequest(Lenient):
    """POST /api/show: the model by name (`name` in older clients)."""

    model: str | None = None
    name: str | None = None
    verbose: bool | None = None


# ------------------------------------------------------------------------------------------- answers


class OllamaError(Wire):
    """Every Ollama-route error: `{"error": "<one line naming the field and what to do>"}`."""

    error: str


class OllamaFunctionOut(Wire):
    """The function a tool call of the answer calls: its name and its arguments as a JSON object (not a
    string, as Ollama sends them), valid for the tool's parameters."""

    name: str
    arguments: dict[str, Any]


class OllamaToolCallOut(Wire):
    """A tool call the answer makes (`message.tool_calls`)."""

    function: OllamaFunctionOut


class OllamaMessageOut(Wire):
    """The answer's message (its `content` a fragment when streamed); `thinking` when the request thinks;
    `tool_calls` when the answer calls a tool (`content` then empty)."""

    omit_unset = frozenset({"thinking", "tool_calls"})
    role: Literal["assistant"] = "assistant"
    content: str
    thinking: str | None = None
    tool_calls: list[OllamaToolCallOut] | None = None


class _Done(Wire):
    """What every answer line carries; the last one (`done: true`) adds why it ended and the counts.
    Durations are nanoseconds, as Ollama reports them."""

    omit_unset = frozenset(
        {
            "done_reason",
            "total_duration",
            "load_duration",
            "prompt_eval_count",
            "prompt_eval_duration",
            "eval_count",
            "eval_duration",
        }
    )
    model: str
    created_at: str
    done: bool
    done_reason: Literal["stop", "length"] | None = None
    total_duration: int | None = None
    load_duration: int | None = None
    prompt_eval_count: int | None = None
    prompt_eval_duration: int | None = None
    eval_count: int | None = None
    eval_duration: int | None = None


class OllamaChatResponse(_Done):
    """POST /api/chat: the whole answer, or one NDJSON line of it when streamed."""

    message: OllamaMessageOut


class OllamaGenerateResponse(_Done):
    """POST /api/generate: the whole answer, or one NDJSON line of it when streamed."""

    omit_unset = _Done.omit_unset | {"thinking"}
    response: str
    thinking: str | None = None


class OllamaModelDetails(Wire):
    """What Ollama says about a model's files."""

    parent_model: str = ""
    format: str = "gguf"
    family: str
    families: list[str]
    parameter_size: str
    quantization_level: str


class OllamaTagModel(Wire):
    """The served model in `/api/tags` (and `/api/ps`)."""

    name: str
    model: str
    modified_at: str
    size: int
    digest: str
    details: OllamaModelDetails


class OllamaTags(Wire):
    """GET /api/tags: the one served model."""

    models: list[OllamaTagModel]


class OllamaRunningModel(OllamaTagModel):
    """The served model in `/api/ps`: always loaded."""

    expires_at: str
    size_vram: int
    context_length: int


class OllamaRunning(Wire):
    """GET /api/ps: the one served model, loaded."""

    models: list[OllamaRunningModel]


class OllamaShowResponse(Wire):
    """POST /api/show: the served model's details, parameters and what it can do."""

    license: str = ""
    modelfile: str
    parameters: str
    template: str
    details: OllamaModelDetails
    model_info: dict[str, Any]
    capabilities: list[str]
    modified_at: str


class OllamaVersion(Wire):
    """GET /api/version: the localjudge version (Ollama clients read it as the server's version)."""

    version: str
