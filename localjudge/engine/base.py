"""What every engine takes and returns, and the scripted engine for tests.

An engine turns chat messages + an `OutputFormat` into a `Generation`. `LlamaEngine` (llama.py)
runs a GGUF model with the format's constraint; `ScriptedEngine` replays texts you give it, for
users' own tests and for failure paths a real model cannot produce on demand.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..formats import OutputFormat


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class DecodeOptions(BaseModel):
    """Decoding settings; part of every cache key."""

    temperature: float = 0.0
    seed: int = 0
    top_k: int = 0
    constrained: bool = True
    max_tokens: int | None = None  # None: the format's own budget
    field_tokens: int | None = None  # None: the format's own per-field budget
    fast: bool = False  # verdict only: the format's fast() variant, no free text (yes/no and choice formats)
    probs: bool = False  # record the distribution at small choice points (probability-weighted scores)


class TokenInfo(BaseModel):
    id: int
    text: str
    logprob: float | None  # None for tokens fed by jump-forward (forced by the format)
    forced: bool = False


class Generation(BaseModel):
    """Raw text plus what it cost."""

    text: str
    tokens: list[TokenInfo] = Field(default_factory=list)
    n_prompt_tokens: int = 0
    n_cached_prompt_tokens: int = 0
    n_output_tokens: int = 0
    n_forced_tokens: int = 0
    stop_reason: Literal["eos", "final", "budget", "max_tokens", "scripted"] = "eos"
    fields_cut: int = 0  # free-text fields closed because their token budget was spent
    prompt_ms: float = 0.0
    decode_ms: float = 0.0
    compile_ms: float = 0.0
    total_ms: float = 0.0
    model_id: str = ""
    # with DecodeOptions(probs=True): (output text before the step, {token piece: probability among the
    # allowed tokens}) at every model-chosen step with at most 64 allowed tokens
    choice_steps: list[tuple[str, dict[str, float]]] | None = None

    def logprob_sum(self) -> float:
        return sum(t.logprob for t in self.tokens if t.logprob is not None)


@runtime_checkable
class Engine(Protocol):
    """Anything that can generate a judge output for a prompt under a format."""

    model_id: str
    model_sha256: str

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation: ...

    def generate_many(self, requests: Sequence[tuple[Sequence[Message], OutputFormat]],
                      options: DecodeOptions | None = None) -> list[Generation]: ...

    def count_tokens(self, messages: Sequence[Message]) -> int: ...


class ScriptedEngine:
    """A fake engine: answers from a list of texts or a function of (messages, format).

    It counts calls (`calls`) so tests can assert that cached runs make none.
    """

    def __init__(self, responses: Iterable[str] | Callable[[Sequence[Message], OutputFormat], str],
                 model_id: str = "scripted", n_ctx: int = 4096):
        self._fn = responses if callable(responses) else None
        self._queue = [] if callable(responses) else list(responses)
        self.model_id = model_id
        self.model_sha256 = hashlib.sha256(model_id.encode()).hexdigest()
        self.n_ctx = n_ctx
        self.calls = 0
        self.prompts: list[list[Message]] = []

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m.content.split()) + 4 for m in messages)

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation:
        self.calls += 1
        self.prompts.append(list(messages))
        if self._fn is not None:
            text = self._fn(messages, fmt)
        elif self._queue:
            text = self._queue.pop(0)
        else:
            raise RuntimeError("ScriptedEngine ran out of scripted responses")
        return Generation(text=text, n_prompt_tokens=self.count_tokens(messages), n_output_tokens=len(text.split()),
                          stop_reason="scripted", model_id=self.model_id)

    def generate_many(self, requests: Sequence[tuple[Sequence[Message], OutputFormat]],
                      options: DecodeOptions | None = None) -> list[Generation]:
        return [self.generate(m, f, options) for m, f in requests]


Request = tuple[Sequence[Message], OutputFormat]
# a judgement as a generator: yields the requests of one step, receives their generations, returns its result
Calls = Generator[list[Request], list[Generation], Any]


class RequestQueue(Protocol):
    """Where judges put their calls: `submit` queues requests, `drain` runs them all (callbacks may
    submit more: a judge's next stage). `LlamaEngine` is one (it batches); `SequentialQueue` wraps any engine."""

    def submit(self, requests: Sequence[Request], options: DecodeOptions | None,
               callback: Callable[[list[Generation | Exception]], None]) -> None: ...

    def drain(self) -> None: ...


class SequentialQueue:
    """A `RequestQueue` over any engine's `generate`: one request at a time, in submission order. A
    request that raises gets its exception in its place (the judge decides what that means)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._pending: deque[tuple[Sequence[Request], DecodeOptions | None, Callable]] = deque()

    def submit(self, requests: Sequence[Request], options: DecodeOptions | None,
               callback: Callable[[list[Generation | Exception]], None]) -> None:
        self._pending.append((requests, options, callback))

    def drain(self) -> None:
        while self._pending:
            requests, options, callback = self._pending.popleft()
            out: list[Generation | Exception] = []
            for messages, fmt in requests:
                try:
                    out.append(self.engine.generate(messages, fmt, options))
                except Exception as e:
                    out.append(e)
            callback(out)


def request_queue(engine: Any) -> RequestQueue:
    """The engine itself when it queues and batches requests, else a `SequentialQueue` over it."""
    return engine if hasattr(engine, "submit") and hasattr(engine, "drain") else SequentialQueue(engine)


def drive(queue: RequestQueue, calls: Calls, options: DecodeOptions | None, done: Callable[[Any], None],
          sent: list[Generation | Exception] | None = None) -> None:
    """Advance a judgement generator by one step: send it its generations (or throw the first error
    among them), queue what it asks next; `done(result or exception)` when it returns or raises."""
    try:
        err = next((g for g in sent or [] if isinstance(g, Exception)), None)
        if err is not None:
            requests = calls.throw(err)
        else:
            requests = calls.send(sent) if sent is not None else next(calls)
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
