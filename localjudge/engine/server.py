"""`server:URL#MODEL`: judge through any OpenAI-compatible chat-completions server.

Another `localjudge serve` (say on a GPU box), llama.cpp's `llama-server`, vLLM, ... Each request
sends the judge's format as `response_format` json_schema where the format has one (`json_schema()`:
exactly the values its regex allows), plain text otherwise (line formats), with `max_tokens` = the
format's budget (a reasoning judge's `think_tokens` go out as localjudge serve's `think_tokens` extension,
their budget on top). The usage the server reports (prompt, cached, completion tokens, and of these the
reasoning ones) is the generation's, as the local engine counts it. Every answer goes through the same
parse layer as in-process generations, so an answer that does not parse is an unscored result with the
reason. With `--probs` it asks for
`top_logprobs` and builds the choice points from them (probability-weighted scores), when the server
returns logprobs.

The model's identity (run record and cache keys): the URL, the model id and what the server reports
about itself on `GET /v1/models` (a localjudge server reports its GGUF's sha256, which becomes the
digest). Standard library HTTP only (no openai package needed: server_http.py). Queued requests run `concurrency` at a
time, so a server that batches (localjudge with n_parallel, vLLM) decodes them side by side.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Literal

from pydantic import Field

from ..errors import InputError, ModelError, ModelNotFoundError, PromptTooLongError
from ..formats import OutputFormat
from .backends import Backend, BackendOptions
from .base import DecodeOptions, Generation, GenerationCancelled, Message, ModelIdentity, TokenInfo, generate_queued
from .capabilities import Capability
from .server_http import api_key, split_target
from .server_http import error_message as _message
from .server_http import http_json as _http

REPORTED = ("id", "owned_by", "root", "parent", "max_model_len", "meta", "localjudge")  # what enters the identity
TOP_LOGPROBS = 20
THINK_MARKERS = 16  # max_tokens allowance for the two think markers, in any tokenizer (the server counts them in)


class ServerRequestError(RuntimeError):
    """The server answered an error (after retries, where retrying made sense)."""


class ServerOptions(BackendOptions):
    """Options of `server:` models."""

    api_key: str | None = Field(None, description="Bearer key (default: $LOCALJUDGE_SERVER_API_KEY; no key otherwise)")
    allow_insecure_key: bool = Field(False, description="send the key over plain http to a host that is not loopback")
    timeout_s: float = Field(600.0, gt=0, description="seconds to wait for one answer")
    max_retries: int = Field(4, ge=0, le=20, description="retries after 429/5xx or a dropped connection, with backoff")
    concurrency: int = Field(4, ge=1, le=256, description="requests in flight at once during a run")
    structured: bool = Field(True, description="send each JSON format as response_format json_schema")
    n_ctx: int | None = Field(None, ge=16, description="the model's context (default: what the server reports, else 4096)")


def _key(options: ServerOptions, url: str) -> str | None:
    """The key to send to `url` (server_http.api_key: refused over plain http to a host that is not loopback)."""
    return api_key(options.api_key, options.allow_insecure_key, url)


class ServerBackend(Backend):
    """`server:URL#MODEL`: an OpenAI-compatible server; `#MODEL` may be left out when it serves one model."""

    scheme = "server"
    Options = ServerOptions
    summary = "any OpenAI-compatible chat-completions server (another localjudge serve, llama-server, vLLM)"
    capabilities = Capability.TOKEN_PROBS  # asked for as top_logprobs; a server may still return none

    def describe(self, target: str | None, options: ServerOptions) -> tuple[str, dict[str, Any]]:
        """(base URL, the model's entry in GET /models); `ModelError` when the server cannot be reached."""
        url, model = split_target(target)
        try:
            status, body, _ = _http("GET", url + "/models", _key(options, url), None, min(options.timeout_s, 30.0))
        except OSError as e:
            reason = getattr(e, "reason", e)
            raise ModelError(f"cannot reach the server at {url} ({reason}); start it, or fix the URL in --model") from None
        if status == 401:
            raise ModelError(f"the server at {url} refused the API key (401); pass --option api_key=KEY")
        if status != 200 or not isinstance(body.get("data"), list):
            raise ModelError(
                f"GET {url}/models answered {status}: {_message(body, status)}; is this an OpenAI-compatible URL (.../v1)?"
            )
        entries = [e for e in body["data"] if isinstance(e, dict) and isinstance(e.get("id"), str)]
        if model is None:
            if len(entries) != 1:
                names = ", ".join(e["id"] for e in entries) or "none"
                raise InputError(f"server at {url} serves {names}; name one: --model server:{url}#MODEL")
            return url, entries[0]
        for entry in entries:
            if entry["id"] == model:
                return url, entry
        names = ", ".join(e["id"] for e in entries) or "none"
        raise ModelNotFoundError(f"the server at {url} does not serve {model!r}; it serves: {names}")

    def identity(self, target: str | None, options: BackendOptions) -> ModelIdentity:
        """The model id, a digest (a localjudge server's GGUF sha256, else a hash of what the server reports),
        and the URL plus the server's report as settings."""
        assert isinstance(options, ServerOptions)
        url, entry = self.describe(target, options)
        reported = {k: entry[k] for k in REPORTED if k in entry}
        remote = entry.get("localjudge") if isinstance(entry.get("localjudge"), dict) else None
        blob = json.dumps({"url": url, "model": reported}, sort_keys=True, default=str)
        digest = str(remote.get("digest")) if remote and remote.get("digest") else hashlib.sha256(blob.encode()).hexdigest()
        settings: dict[str, Any] = {"url": url, "server": reported, "structured": options.structured}
        return ModelIdentity(backend="server", model_id=str(entry["id"]), digest=digest, settings=settings)

    def load(self, target: str | None, options: BackendOptions) -> ServerEngine:
        """A `ServerEngine` for the model (checks that the server serves it)."""
        assert isinstance(options, ServerOptions)
        url, entry = self.describe(target, options)
        remote: dict[str, Any] = entry["localjudge"] if isinstance(entry.get("localjudge"), dict) else {}
        n_ctx = options.n_ctx or int(remote.get("n_ctx") or entry.get("max_model_len") or 4096)
        return ServerEngine(url, self.identity(target, options), options, n_ctx)


class ServerEngine:
    """An engine whose generations come from an OpenAI-compatible server (`submit`/`drain` run up to
    `concurrency` requests at a time; callbacks run on the draining thread)."""

    capabilities = Capability.TOKEN_PROBS  # asked for as top_logprobs (choice_steps); no vocabulary, no streaming

    def __init__(self, url: str, ident: ModelIdentity, options: ServerOptions, n_ctx: int):
        self.url, self._ident, self.options, self.n_ctx = url, ident, options, n_ctx
        self.model_id = ident.model_id
        self._key = _key(options, url)
        self._pending: deque[tuple[int, int, Sequence[Message], OutputFormat | None, DecodeOptions, threading.Event | None]] = (
            deque()
        )
        self._groups: dict[int, tuple[list[Any], Callable[[list[Generation | Exception]], None]]] = {}
        self._next = 0
        self.calls = 0

    @property
    def model_sha256(self) -> str:
        """The identity's digest."""
        return self._ident.digest

    def identity(self) -> ModelIdentity:
        """URL, model id and what the server reported, as computed when loaded."""
        return self._ident

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """An estimate (no tokenizer here): about 4 characters per token, plus 4 per message."""
        return sum(math.ceil(len(m.content) / 4) + 4 for m in messages)

    # ------------------------------------------------------------------------------ one request

    def request_body(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions) -> dict[str, Any]:
        """The chat-completions request for one generation."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": options.max_tokens or fmt.max_tokens(),
            "temperature": options.temperature,
            "seed": options.seed,
        }
        schema = fmt.json_schema() if self.options.structured and options.constrained else None
        if schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": fmt.kind, "schema": schema, "strict": True}}
        if options.probs:
            body["logprobs"], body["top_logprobs"] = True, TOP_LOGPROBS
        if options.think_tokens:  # localjudge serve's extension; max_tokens bounds the think block and the answer
            body["think_tokens"] = options.think_tokens
            body["max_tokens"] += options.think_tokens + THINK_MARKERS
        return body

    def generate(self, messages: Sequence[Message], fmt: OutputFormat, options: DecodeOptions | None = None) -> Generation:
        """One request: sent, retried on 429/5xx/dropped connections with backoff, its answer as a `Generation`."""
        opts = options or DecodeOptions()
        body = self.request_body(messages, fmt, opts)
        self.calls += 1
        t0 = time.perf_counter()
        last = ""
        for attempt in range(self.options.max_retries + 1):
            try:
                status, answer, headers = _http("POST", self.url + "/chat/completions", self._key, body, self.options.timeout_s)
            except OSError as e:
                last = f"connection failed ({getattr(e, 'reason', e)})"
                if attempt == 0 and isinstance(getattr(e, "reason", None), ConnectionRefusedError):
                    raise ModelError(f"cannot reach the server at {self.url} ({last}); start it, or fix the URL") from None
            else:
                if status == 200:
                    return self._generation(answer, body, (time.perf_counter() - t0) * 1000)
                err: dict[str, Any] = answer["error"] if isinstance(answer.get("error"), dict) else {}
                msg = _message(answer, status)
                if status == 400 and err.get("code") == "context_length_exceeded":
                    raise PromptTooLongError(f"the server refused the prompt: {msg}", budget=int(body["max_tokens"]))
                if status in (401, 403, 404):
                    raise ModelError(f"the server at {self.url} answered {status}: {msg}")
                if status < 500 and status != 429:
                    raise ModelError(
                        f"the server at {self.url} refused the request ({status}: {msg}); if it cannot take this format's "
                        "json_schema, pass --option structured=false"
                    )
                last = f"HTTP {status}: {msg}"
                retry_after = headers.get("Retry-After") or headers.get("retry-after")
                if retry_after and retry_after.replace(".", "", 1).isdigit() and attempt < self.options.max_retries:
                    time.sleep(min(float(retry_after), 30.0))
                    continue
            if attempt < self.options.max_retries:
                time.sleep(min(0.5 * 2**attempt, 10.0))
        raise ServerRequestError(f"the server at {self.url} failed {self.options.max_retries + 1} times; last: {last}")

    def _generation(self, answer: dict[str, Any], body: dict[str, Any], ms: float) -> Generation:
        try:
            choice = answer["choices"][0]
            msg = choice.get("message") or {}
        except (KeyError, IndexError, TypeError):
            raise ServerRequestError(f"the server's answer has no choices: {json.dumps(answer)[:200]}") from None
        text = msg.get("content")
        if text is None and msg.get("tool_calls"):
            text = msg["tool_calls"][0].get("function", {}).get("arguments", "")
        text = text if isinstance(text, str) else ""
        usage = answer.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        finish = choice.get("finish_reason")
        structured = "response_format" in body
        stops: dict[Any, Literal["final", "eos", "max_tokens"]] = {
            "stop": "final" if structured else "eos",
            "length": "max_tokens",
            "tool_calls": "final",
        }
        stop = stops.get(finish, "eos")
        tokens, steps = self._tokens(choice.get("logprobs"))
        return Generation(
            text=text,
            tokens=tokens,
            n_prompt_tokens=int(usage.get("prompt_tokens") or 0),
            n_cached_prompt_tokens=int(cached),
            n_output_tokens=int(usage.get("completion_tokens") or len(tokens)),
            n_reasoning_tokens=int(reasoning),
            stop_reason=stop,
            decode_ms=ms,
            total_ms=ms,
            model_id=self.model_id,
            choice_steps=steps if body.get("logprobs") else None,
        )

    @staticmethod
    def _tokens(logprobs: Any) -> tuple[list[TokenInfo], list[tuple[str, dict[str, float]]] | None]:
        """Output tokens and, from their top_logprobs, the choice points (distribution renormalised over the
        alternatives given; steps with one alternative are forced and left out)."""
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        if not isinstance(content, list):
            return [], None
        tokens: list[TokenInfo] = []
        steps: list[tuple[str, dict[str, float]]] = []
        before = ""
        for item in content:
            if not isinstance(item, dict):
                continue
            tok = str(item.get("token", ""))
            lp = item.get("logprob")
            tokens.append(TokenInfo(id=-1, text=tok, logprob=float(lp) if isinstance(lp, (int, float)) else None))
            alts = [
                a for a in item.get("top_logprobs") or [] if isinstance(a, dict) and isinstance(a.get("logprob"), (int, float))
            ]
            if len(alts) >= 2:
                mass: dict[str, float] = {}
                for a in alts:
                    mass[str(a.get("token", ""))] = mass.get(str(a.get("token", "")), 0.0) + math.exp(float(a["logprob"]))
                total = sum(mass.values())
                if total > 0:
                    steps.append((before, {k: v / total for k, v in mass.items()}))
            before += tok
        return tokens, steps

    # ------------------------------------------------------------------------------ queue

    def submit(
        self,
        requests: Sequence[tuple[Sequence[Message], OutputFormat]],
        options: DecodeOptions | None,
        callback: Callable[[list[Generation | Exception]], None],
        cancel: threading.Event | None = None,
    ) -> None:
        """Queue requests; `callback(results)` runs inside `drain` once all are done."""
        gid = self._next
        self._next += 1
        self._groups[gid] = ([None] * len(requests), callback)
        if not requests:  # nothing to send: the callback still runs inside drain
            self._pending.append((gid, -1, [], None, DecodeOptions(), cancel))
        for i, (messages, fmt) in enumerate(requests):
            self._pending.append((gid, i, messages, fmt, options or DecodeOptions(), cancel))

    def drain(self, poll: Callable[[], None] | None = None) -> None:
        """Run every queued request, `concurrency` at a time; callbacks (which may queue more) run here."""
        running: dict[Future[Generation], tuple[int, int]] = {}
        with ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="localjudge-server") as pool:
            while True:
                if poll is not None:
                    poll()
                while self._pending and len(running) < self.options.concurrency:
                    gid, i, messages, fmt, opts, cancel = self._pending.popleft()
                    if fmt is None:
                        self._settle(gid, i, None)
                        continue
                    if cancel is not None and cancel.is_set():
                        self._settle(gid, i, GenerationCancelled("the request was cancelled before it started"))
                        continue
                    running[pool.submit(self.generate, messages, fmt, opts)] = (gid, i)
                if not running:
                    if not self._pending:
                        break
                    continue
                done, _ = wait(list(running), timeout=0.05 if poll is not None else None, return_when=FIRST_COMPLETED)
                for f in done:
                    gid, i = running.pop(f)
                    err = f.exception()
                    if isinstance(err, (ModelError, InputError)):
                        for g in running:
                            g.cancel()
                        self._pending.clear()
                        self._groups.clear()
                        raise err
                    self._settle(gid, i, err if err is not None else f.result())

    def _settle(self, gid: int, i: int, result: Any) -> None:
        results, callback = self._groups[gid]
        if i >= 0:
            results[i] = result
        if all(r is not None for r in results):
            del self._groups[gid]
            callback(results)

    def generate_many(
        self, requests: Sequence[tuple[Sequence[Message], OutputFormat]], options: DecodeOptions | None = None
    ) -> list[Generation]:
        """Several requests, `concurrency` at a time; raises the first request's error."""
        return generate_queued(self, requests, options)
