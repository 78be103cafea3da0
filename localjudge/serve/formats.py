"""Output formats for requests: built once per schema (LRU by schema hash), automata compiled in a sandbox.

`FormatCache.get(schema, name)` turns a client's JSON schema into a `JSONSchemaFormat` (the same
constraint path as the judges' formats; refusals are `SchemaError`s naming the feature), keeping the
last `size` of them, refusals included, by the sha256 of the canonical schema. `ready(fmt)` makes sure
the format's token automaton is in the disk cache before the engine needs it: an automaton not built
yet is built by `sandbox.compile_in_child` under the time and memory limits (one build per regex at a
time; a refusal is remembered so the same schema is refused at once next time). The engine thread then
only loads it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..engine.constraint import cache_path
from ..formats import JSONSchemaFormat, OutputFormat, SchemaError
from ..formats.json_schema import CLIENT_CONSTRAINT
from .sandbox import CompileLimits, CompileRefused, compile_in_child

JSON_OBJECT: dict[str, Any] = {"type": "object"}


class FormatCache:
    """Formats by schema (LRU), and their automata compiled out of process."""

    def __init__(
        self,
        vocab_path: Path | None,
        vocab_hash: str | None,
        limits: CompileLimits,
        field_tokens: int = 80,
        size: int = 256,
        parallel: int = 1,
    ):
        self.vocab_path, self.vocab_hash, self.limits = vocab_path, vocab_hash, limits
        self.field_tokens, self.size = field_tokens, size
        self._formats: OrderedDict[str, JSONSchemaFormat | SchemaError] = OrderedDict()
        self._refused: OrderedDict[str, str] = OrderedDict()
        self._building: dict[str, asyncio.Future[None]] = {}
        self._slots = asyncio.Semaphore(parallel)
        self.compiled = 0  # automata built in a child process
        self.compile_s = 0.0

    def get(self, schema: dict[str, Any], name: str | None = None) -> JSONSchemaFormat:
        """The format of `schema` (built once; `SchemaError` when it cannot be honoured)."""
        key = hashlib.sha256(json.dumps([schema, name], sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        hit = self._formats.get(key)
        if hit is None:
            try:
                hit = JSONSchemaFormat(schema, field_tokens=self.field_tokens, name=name, constraint=CLIENT_CONSTRAINT)
            except SchemaError as e:
                hit = e
            except RecursionError:  # deeper than Python can walk: past the depth limit anyway
                hit = SchemaError("response schema nests too deeply; flatten it")
            self._formats[key] = hit
            while len(self._formats) > self.size:
                self._formats.popitem(last=False)
        else:
            self._formats.move_to_end(key)
        if isinstance(hit, SchemaError):
            raise hit
        return hit

    async def ready(self, fmt: OutputFormat, trusted: bool = False) -> None:
        """Make sure `fmt`'s automaton is in the disk cache (built in a child under the limits unless
        `trusted`); `CompileRefused` when it cannot be built within them."""
        if not fmt.constrained or self.vocab_path is None or self.vocab_hash is None:
            return
        if getattr(fmt, "llg_grammar", lambda: None)() is not None:
            return  # llguidance compiles in milliseconds, bounded by its own parser limits, on the engine thread
        rx = fmt.regex()
        key = hashlib.sha256(rx.encode()).hexdigest()
        if key in self._refused:
            raise CompileRefused(self._refused[key])
        if cache_path(rx, self.vocab_hash).exists():
            return
        pending = self._building.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._build(rx, key, trusted))
            self._building[key] = pending
            pending.add_done_callback(lambda _f: self._building.pop(key, None))
        await asyncio.shield(pending)  # a client that goes away does not stop a build others may wait for

    async def _build(self, rx: str, key: str, trusted: bool) -> None:
        assert self.vocab_path is not None and self.vocab_hash is not None
        if trusted:  # the server's own formats (json_object at start): no limits, and no client waits behind them
            await compile_in_child(rx, self.vocab_path, self.vocab_hash, CompileLimits(None, None))
            return
        async with self._slots:
            try:
                dt = await compile_in_child(rx, self.vocab_path, self.vocab_hash, self.limits)
            except CompileRefused as e:
                self._refused[key] = str(e)
                while len(self._refused) > self.size:
                    self._refused.popitem(last=False)
                raise
            self.compiled += 1
            self.compile_s += dt
