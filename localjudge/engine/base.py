"""What every engine takes and returns, and the scripted engine for tests.

An engine turns chat messages + an `OutputFormat` into a `Generation`, one request at a time
(`generate`) or queued (`submit`, then `drain`: an engine that batches decodes queued requests side
by side). It names the model it runs with a `ModelIdentity` (what enters the run record and every
cache key). `LlamaEngine` (llama.py) runs a GGUF model with the format's constraint;
`ScriptedEngine` replays texts you give it, for users' own tests and for failure paths a real model
cannot produce on demand. Backends (backends.py) build engines from a model spec.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from ..formats import OutputFormat
from .capabilities import Capability


class Message(BaseModel):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


THINK_OPEN, THINK_CLOSE = b"<think>\n", b"\n</think>\n"  # the think markers (DeepSeek-R1, Qwen3)


class DecodeOptions(BaseModel):
    """Decoding settings; part of every cache key."""

    temperature: float = 0.0
    seed: int = 0
    top_k: int = 0
    constrained: bool = True
    max_tokens: int | None = None  # None: the format's own budget (the verdict's: think_tokens come on top of it)
    field_tokens: int | None = None  # None: the format's own per-field budget
    fast: bool = False  # verdict only: the format's fast() variant, no free text (yes/no and choice formats)
    probs: bool = False  # record the distribution at small choice points (probability-weighted scores)
    think_tokens: int = Field(0, ge=0)  # > 0: first think in free text (<think>...</think>, at most N tokens), then the verdict

    @model_serializer(mode="wrap")
    def _keys(self, handler: Any) -> Any:
        """Dump as before when think_tokens is 0 (these options are part of every cache key)."""
        out = handler(self)
        if isinstance(out, dict) and not out.get("think_tokens"):
            out.pop("think_tokens", None)
        return out


class TokenInfo(BaseModel):
    """One output token: id, text, log-probability (None when forced by the format); `top`: the most
    likely tokens at that step as (id, log-probability), when asked (`GenerateOptions.top_logprobs`)."""

    id: int
    text: str
    logprob: float | None  # None for tokens fed by jump-forward (forced by the format)
    forced: bool = False
    top: list[tuple[int, float]] | None = None


@dataclass(frozen=True)
class Prepared:
    """One request decided once by its caller (serve, on the engine thread): the prompt's token ids (None where the
    engine has no prompt tokenizer to ask) and the answer's token budget, checked against the context there. An
    engine that reads it decodes as given, without rendering, tokenizing or budgeting the messages again."""

    tokens: tuple[int, ...] | None
    max_tokens: int


@runtime_checkable
class PromptTokenizer(Protocol):
    """An engine that tokenizes a prompt as it decodes it (chat template, BOS, control tokens): `LlamaEngine`."""

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The prompt's token ids, exactly as decoding feeds them."""
        ...


class GenerateOptions(DecodeOptions):
    """Per-request settings of an API call (`localjudge serve`) on top of `DecodeOptions`. A judge run never
    uses them, so they never enter a cache key; their defaults change nothing."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    top_p: float = Field(1.0, gt=0, le=1)  # nucleus sampling (with temperature > 0)
    stop: list[str] = Field(default_factory=list)  # free text (no constraint) ends before the first of these
    top_logprobs: int = Field(0, ge=0, le=20)  # the most likely tokens recorded at every model-chosen step
    on_tokens: Callable[[list[TokenInfo]], None] | None = Field(None, exclude=True)  # new output tokens, as decoded
    prepared: Prepared | None = Field(None, exclude=True)  # the one request of the call, decided by its caller


class Generation(BaseModel):
    """Raw text plus what it cost."""

    text: str
    tokens: list[TokenInfo] = Field(default_factory=list)
    n_prompt_tokens: int = 0
    n_cached_prompt_tokens: int = 0
    n_output_tokens: int = 0
    n_forced_tokens: int = 0
    n_reasoning_tokens: int = 0  # of n_output_tokens, those of the think block (its markers included)
    stop_reason: Literal["eos", "final", "budget", "max_tokens", "scripted", "cancelled", "stop"] = "eos"
    fields_cut: int = 0  # free-text fields closed because their token budget was spent
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    compile_ms: float = 0.0
    total_ms: float = 0.0
    model_id: str = ""
    # with DecodeOptions(probs=True): (output text before the step, {token piece: probability among the
    # allowed tokens}) at every model-chosen step with at most 64 allowed tokens
    choice_steps: list[tuple[str, dict[str, float]]] | None = None


class GenerationCancelled(Exception):
    """A queued request was cancelled by its caller before it started."""


class ModelIdentity(BaseModel):
    """Everything about a loaded model that changes outputs: what the run record and cache keys use.

    `digest` is the record's `model_sha256` (the GGUF file's sha256 for llama.cpp); `settings` are
    the engine settings that change outputs (they enter the cache key as its "engine" part)."""

    backend: str
    model_id: str
    digest: str
    settings: dict[str, Any] = Field(default_factory=dict)


Request = tuple[Sequence[Message], OutputFormat]
# a judgement as a generator: yields the requests of one step, receives their generations, returns its result
Calls = Generator[list[Request], list[Generation], Any]
Callback = Callable[[list[Generation | Exception]], None]


class RequestQueue(Protocol):
    """Where judges put their calls: `submit` queues requests, `drain` runs them all (callbacks may
    submit more: a judge's next stage). Every engine is one; `LlamaEngine` batches what is queued."""

    def submit(
        self,
        requests: Sequence[Request],
        options: DecodeOptions | None,
        callback: Callback,
        cancel: threading.Event | None = None,
    ) -> None:
        """Queue requests; `callback(results)` runs inside `drain` once all are done (a request that
        cannot start gets its exception in its place). Setting `cancel` stops them early."""

    def drain(self, poll: Callable[[], None] | None = None) -> None:
        """Run every queued request to completion (callbacks may queue more; those run too); `poll()`
        runs before each request or step and may submit more."""


@runtime_checkable
class Engine(RequestQueue, Protocol):
    """Anything that can generate a judge output for a prompt under a format."""

    model_id: str
    n_ctx: int
    capabilities: Capability  # what it can do beyond generating: vocabulary, compile, token probabilities, streaming

    @property
    def model_sha256(self) -> str:
        """The model's digest (the record's `model_sha256`)."""

    def identity(self) -> ModelIdentity:
        """The model and the settings that change outputs (run record and cache key)."""

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation:
        """One request, decoded under `fmt`."""

    def generate_many(self, requests: Sequence[Request], options: DecodeOptions | None = None) -> list[Generation]:
        """Several requests (side by side where the engine batches); raises the first request's error."""

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Prompt tokens these messages take with the model's chat template."""


class SequentialQueue:
    """`submit`/`drain` over `generate`, one request at a time in submission order, for engines that do
    not batch. A request that raises gets its exception in its place (the judge decides what it means)."""

    def __init__(self) -> None:
        self._pending: deque[tuple[Sequence[Request], DecodeOptions | None, Callback, threading.Event | None]] = deque()

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation:
        """One request (subclasses implement it)."""
        raise NotImplementedError

    def submit(
        self,
        requests: Sequence[Request],
        options: DecodeOptions | None,
        callback: Callback,
        cancel: threading.Event | None = None,
    ) -> None:
        """Queue requests; `callback(results)` runs inside `drain`."""
        self._pending.append((requests, options, callback, cancel))

    def drain(self, poll: Callable[[], None] | None = None) -> None:
        """Run every queued request, in submission order (`poll()` before each group of requests)."""
        while True:
            if poll is not None:
                poll()
            if not self._pending:
                break
            requests, options, callback, cancel = self._pending.popleft()
            out: list[Generation | Exception] = []
            for messages, fmt in requests:
                if cancel is not None and cancel.is_set():
                    out.append(GenerationCancelled("the request was cancelled before it started"))
                    continue
                try:
                    out.append(self.generate(messages, fmt, options))
                except Exception as e:
                    out.append(e)
            callback(out)

    def generate_many(self, requests: Sequence[Request], options: DecodeOptions | None = None) -> list[Generation]:
        """Each request in turn; raises the first error."""
        return [self.generate(m, f, options) for m, f in requests]


class ScriptedEngine(SequentialQueue):
    """A fake engine: answers from a list of texts or a function of (messages, format).

    It counts calls (`calls`) so tests can assert that cached runs make none. `cycle=True` starts the
    list again when it runs out (else running out is an error). Its digest is the sha256 of its
    model id unless given (the `scripted:` backend gives the sha256 of the canned answers).
    `choice_steps(messages, format)`, when given, supplies the distribution at the verdict (what a real
    engine records with `DecodeOptions(probs=True)`: [(text before the step, {token: probability})]),
    so probability-weighted scores can be tested with a bias you choose.
    """

    def __init__(
        self,
        responses: Iterable[str] | Callable[[Sequence[Message], OutputFormat], str],
        model_id: str = "scripted",
        n_ctx: int = 4096,
        *,
        cycle: bool = False,
        digest: str | None = None,
        choice_steps: Callable[[Sequence[Message], OutputFormat], list[tuple[str, dict[str, float]]]] | None = None,
    ):
        super().__init__()
        self._steps = choice_steps
        # token probabilities only when a choice_steps function supplies them
        self.capabilities = Capability.TOKEN_PROBS if choice_steps is not None else Capability.NONE
        self._fn = responses if callable(responses) else None
        self._queue: list[str] = [] if callable(responses) else list(responses)
        self._cycle = list(self._queue) if cycle else None
        self.model_id = model_id
        self._digest = digest or hashlib.sha256(model_id.encode()).hexdigest()
        self.n_ctx = n_ctx
        self.calls = 0
        self.prompts: list[list[Message]] = []

    @property
    def model_sha256(self) -> str:
        """sha256 of the model id, or the digest given."""
        return self._digest

    def identity(self) -> ModelIdentity:
        """The scripted model: its id and digest; no settings."""
        return ModelIdentity(backend="scripted", model_id=self.model_id, digest=self._digest)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Words + 4 per message: a stand-in for a tokenizer."""
        return sum(len(m.content.split()) + 4 for m in messages)

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation:
        """The next scripted answer (or the function's answer) for these messages."""
        self.calls += 1
        self.prompts.append(list(messages))
        if self._fn is not None:
            text = self._fn(messages, fmt)
        else:
            if not self._queue and self._cycle:
                self._queue = list(self._cycle)
            if not self._queue:
                raise RuntimeError("ScriptedEngine ran out of scripted responses")
            text = self._queue.pop(0)
        steps = self._steps(messages, fmt) if self._steps is not None and options is not None and options.probs else None
        return Generation(
            text=text,
            n_prompt_tokens=self.count_tokens(messages),
            n_output_tokens=len(text.split()),
            stop_reason="scripted",
            model_id=self.model_id,
            choice_steps=steps,
        )


def generate_queued(queue: RequestQueue, requests: Sequence[Request], options: DecodeOptions | None = None) -> list[Generation]:
    """`generate_many` for an engine that queues: submit the requests as one group, drain, raise the first
    request's error, if any."""
    box: list[list[Generation | Exception]] = []
    queue.submit(requests, options, box.append)
    queue.drain()
    out: list[Generation] = []
    for r in box[0]:
        if isinstance(r, Exception):
            raise r
        out.append(r)
    return out


def drive(
    queue: RequestQueue,
    calls: Calls,
    options: DecodeOptions | None,
    done: Callable[[Any], None],
    sent: list[Generation | Exception] | None = None,
) -> None:
    """Advance a judgement generator by one step: send it its generations (or throw the first error
    among them), queue what it asks next; `done(result or exception)` when it returns or raises."""
    try:
        err = next((g for g in sent or [] if isinstance(g, Exception)), None)
        if err is not None:
            requests = calls.throw(err)
        else:
            requests = calls.send(sent) if sent is not None else next(calls)  # type: ignore[arg-type]
    except StopIteration as stop:
        done(stop.value)
        return
    except Exception as e:
        done(e)
        return
    queue.submit(requests, options, lambda gens: drive(queue, calls, options, done, gens))


def canonical_hash(obj: Any, version: str = "v1") -> str:
    """Versioned sha256 of canonical JSON: the building block of every cache key."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return version + ":" + hashlib.sha256(blob.encode()).hexdigest()
