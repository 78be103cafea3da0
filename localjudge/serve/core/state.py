"""The server's state: its configuration (`ServeConfig`), counters, and `ServerState` (the engine worker, the
format cache, aliases, the judge catalog) that every endpoint handler is given. Below the handlers and the
wiring (`app.py`), so they import it and it imports none of them."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ...engine.base import (
    THINK_CLOSE,
    THINK_OPEN,
    Engine,
    Generation,
    GenerationCancelled,
    ModelIdentity,
    Prepared,
    PromptTokenizer,
    TokenInfo,
)
from ...engine.capabilities import Capability, capabilities_of, compiler_of, vocabulary_of
from ...engine.worker import EngineWorker
from ...errors import PromptTooLongError
from ...formats import OutputFormat, PlainText
from ...formats.text import DEFAULT_TEXT_TOKENS
from . import checked
from . import plan as protocol
from .aliases import Alias
from .catalog import Catalog
from .compile_guard import CompileGuard, model_file
from .errors import bad_request
from .schemas import FormatCache

log = logging.getLogger("localjudge.serve")


@dataclass
class ServeConfig:
    """What the server enforces (the CLI flags of `localjudge serve`)."""

    model_name: str | None = None  # the name clients put in `model` (default: the model's id)
    api_key: str | None = None  # Bearer key required on /v1 (required to bind beyond loopback)
    max_pending: int = 256  # requests queued or decoding; more get 429
    max_body_bytes: int = 4 << 20
    max_prompt_chars: int | None = None  # all message text together (default: 64 characters per context token)
    field_tokens: int = 80  # token budget of each free-text field of a schema
    text_tokens: int = DEFAULT_TEXT_TOKENS  # default cap of a free-text answer without max_tokens
    compile_seconds: float = 30.0  # limits on building a client schema's automaton (a child process)
    compile_memory_mb: int = 2048
    precompile: bool = True  # build the json_object automaton at start (once per vocabulary, then cached on disk)
    allowed_hosts: tuple[str, ...] = ()  # Host names answered besides the loopback names ("*": any)
    cors_origins: tuple[str, ...] = ()  # web origins allowed to call the server (CORS); none by default
    body_timeout: float = 30.0  # seconds to receive a whole request body
    header_timeout: float = 10.0  # seconds to receive a request's headers
    max_connections: int = 512  # open connections; more are answered 503 at once
    shutdown_timeout: float = 30.0  # seconds SIGTERM waits for requests in flight before cancelling them
    cache_max_mb: float = 1024.0  # on-disk automaton cache cap (least recently used out)
    schema_constraint: str = "llguidance"  # the engine that constrains client schemas ("automaton": outlines-core)
    aliases: dict[str, Alias] = field(default_factory=dict)  # more served names, each with a default output contract
    catalog_formats: bool = True  # known judge prompts answered under their judge's contract too (serve/core/catalog.py)


@dataclass
class Counters:
    """What /health reports about requests since start."""

    completed: int = 0
    cancelled: int = 0
    refused_busy: int = 0
    errors: int = 0
    started: float = field(default_factory=time.time)


class ServerState:
    """The engine, its worker, the formats and the counters one app serves."""

    def __init__(self, engine: Engine, config: ServeConfig, identity: ModelIdentity | None = None):
        from ...constraints.sandbox import CompileLimits, save_vocab
        from ...paths import cache_home

        self.engine, self.config = engine, config
        self.identity = identity or engine.identity()
        self.model_name = config.model_name or engine.model_id
        self.worker = EngineWorker(engine, max_pending=config.max_pending, name="localjudge-serve-engine")
        self.capabilities = capabilities_of(engine)
        has_vocab = vocabulary_of(engine)
        vocab = has_vocab.vocab if has_vocab is not None else None
        self.pieces: list[bytes] | None = vocab.pieces if vocab is not None else None
        vocab_path = save_vocab(vocab, cache_home() / "serve") if vocab is not None else None
        limits = CompileLimits(config.compile_seconds, config.compile_memory_mb << 20)
        # llguidance reads every client schema and grammar in a child process first (compile_guard.py)
        self.guard = CompileGuard(model_file(engine), seconds=max(60.0, config.compile_seconds))
        self.formats = FormatCache(
            vocab_path,
            vocab.hash if vocab is not None else None,
            limits,
            config.field_tokens,
            cache_max_bytes=int(config.cache_max_mb * (1 << 20)),
            constraint=config.schema_constraint,
            isolator=self.guard,
        )
        self.text_format = PlainText(config.text_tokens)
        self.catalog = Catalog.builtin() if config.catalog_formats else None
        self.counters = Counters()
        self.fingerprint = "localjudge-" + (self.identity.digest[:12] or "model")
        self.max_prompt_chars = config.max_prompt_chars or 64 * engine.n_ctx
        self.precompile: asyncio.Future[None] | None = None  # the json_object automaton, built at start
        self.stopping: asyncio.Event | None = None  # set when shutdown begins (bodies still arriving get 503)

    def fingerprint_of(self, p: protocol.Plan) -> str:
        """`system_fingerprint` of an answer: the server's, plus the catalog contract applied to it (if any)."""
        applied = p.contract is not None and "; not applied" not in p.contract
        return f"{self.fingerprint}+{p.contract}" if applied else self.fingerprint

    # ------------------------------------------------------------------------------ engine side

    def think_cost(self, engine: Engine, p: protocol.Plan, fmt: OutputFormat) -> int:
        """Completion tokens the think block may take: `think_tokens` plus its two markers when the request
        thinks (a constrained answer on an engine that compiles formats), else 0."""
        n = p.options.think_tokens
        compiler = compiler_of(engine)
        if not n or not fmt.constrained or compiler is None:
            return 0
        return n + len(compiler.tokenize(THINK_OPEN)) + len(compiler.tokenize(THINK_CLOSE))

    def prepare(self, engine: Engine, p: protocol.Plan, fmt: OutputFormat) -> Prepared:
        """The request decided once (runs on the engine thread): the prompt's tokens, rendered and tokenized here
        only, and the answer's budget, which the engine then decodes as given (`engine.base.Prepared`)."""
        tokens = engine.prompt_tokens(p.messages) if isinstance(engine, PromptTokenizer) else None
        n_prompt = len(tokens) if tokens is not None else engine.count_tokens(p.messages)
        return Prepared(None if tokens is None else tuple(tokens), self.budget(engine, p, fmt, n_prompt))

    def budget(self, engine: Engine, p: protocol.Plan, fmt: OutputFormat, n_prompt: int) -> int:
        """Output tokens for this request's answer, its prompt taking `n_prompt`: the format's budget (free
        text: the text cap), lowered by the client's max_tokens and clamped to the context left; a 400 when
        the prompt leaves no room for the shortest valid answer. As for OpenAI's reasoning models, max_tokens
        bounds every completion token, the think block's included: the answer gets what think_tokens leaves
        (a 400 naming think_tokens when that is less than the answer needs)."""
        n_ctx = engine.n_ctx
        need = 1
        compiler = compiler_of(engine)
        if fmt.constrained and compiler is not None:
            need = max(1, int(compiler.compile(fmt).shortest))
        think = self.think_cost(engine, p, fmt)
        if p.max_tokens is not None:
            if p.max_tokens < need:
                raise bad_request(
                    f"max_tokens: {p.max_tokens} is too few for the shortest answer found for the schema ({need} tokens); raise it",
                    param="max_tokens",
                )
            if p.max_tokens - think < need:
                most = p.max_tokens - need - (think - p.options.think_tokens)  # the largest think_tokens that fits
                lower = f"lower think_tokens to at most {most} or " if most > 0 else ""
                raise bad_request(
                    f"think_tokens: {p.options.think_tokens} (+{think - p.options.think_tokens} for the think markers) leaves "
                    f"{max(0, p.max_tokens - think)} of max_tokens {p.max_tokens} for the answer, which needs at least "
                    f"{need}; {lower}raise max_tokens to at least {think + need}",
                    param="think_tokens",
                )
            # under a schema the format's own budget is the bound by construction; max_tokens can only lower it
            room = p.max_tokens - think
            budget = min(room, max(need, fmt.max_tokens())) if fmt.constrained else room
            if n_prompt + budget + think > n_ctx:
                raise PromptTooLongError(
                    f"this model's context is {n_ctx} tokens; the messages take {n_prompt} and max_tokens asks for "
                    f"{budget + think}: shorten the messages or lower max_tokens",
                    n_prompt=n_prompt,
                    n_ctx=n_ctx,
                    budget=budget + think,
                )
            return budget
        budget = min(fmt.max_tokens(), n_ctx - n_prompt - think)
        if budget < need:
            most = n_ctx - n_prompt - need - (think - p.options.think_tokens)  # the largest think_tokens that fits
            if think and most > 0:  # the thinking, not the messages, leaves no room
                raise bad_request(
                    f"think_tokens: {p.options.think_tokens} (+{think - p.options.think_tokens} for the think markers) "
                    f"leaves {max(0, n_ctx - n_prompt - think)} tokens of this model's context ({n_ctx}, the messages take "
                    f"{n_prompt}) for the answer, which needs at least {need}; lower think_tokens to at most {most}",
                    param="think_tokens",
                )
            raise PromptTooLongError(
                f"this model's context is {n_ctx} tokens; the messages take {n_prompt}, leaving no room for the "
                f"{need}-token answer: shorten the messages",
                n_prompt=n_prompt,
                n_ctx=n_ctx,
                budget=need,
            )
        return budget

    def submit(
        self,
        p: protocol.Plan,
        fmt: OutputFormat,
        cancel: threading.Event,
        on_tokens: Callable[[list[TokenInfo]], None] | None,
        accepted: Callable[[], None],
    ) -> Future[Generation]:
        """Queue the request on the worker (`WorkerBusy` when full); `accepted()` once it passed its checks. A
        format on a relaxed schema is run until an answer validates (`checked.submit`), not streamed."""
        if isinstance(fmt, checked.CheckedFormat):
            return checked.submit(lambda q, ok: self._submit(q, fmt, cancel, None, ok), p, fmt, cancel, accepted)
        return self._submit(p, fmt, cancel, on_tokens, accepted)

    def _submit(
        self,
        p: protocol.Plan,
        fmt: OutputFormat,
        cancel: threading.Event,
        on_tokens: Callable[[list[TokenInfo]], None] | None,
        accepted: Callable[[], None],
    ) -> Future[Generation]:

        def start(engine: Engine, done: Callable[[Any], None]) -> None:
            if cancel.is_set():
                done(GenerationCancelled("the client went away before the request started"))
                return
            prepared = self.prepare(engine, p, fmt)
            streams = Capability.STREAMING in self.capabilities  # else the whole answer comes in the last chunk
            update = {"max_tokens": prepared.max_tokens, "prepared": prepared, "on_tokens": on_tokens if streams else None}
            opts = p.options.model_copy(update=update)
            engine.submit([(p.messages, fmt)], opts, lambda gens: done(gens[0]), cancel=cancel)
            accepted()

        return self.worker.call(start)
