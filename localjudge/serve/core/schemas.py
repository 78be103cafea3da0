"""Output formats for requests: built once per schema (LRU by schema hash), automata compiled in a sandbox.

`FormatCache.get(schema, name)` turns a client's JSON schema into a `JSONSchemaFormat` (the same
constraint path as the judges' formats; refusals are `SchemaError`s naming the feature), keeping the
last `size` of them, refusals included, by the sha256 of the canonical schema. `ready(fmt)` makes sure
the format's token automaton is in the disk cache before the engine needs it: an automaton not built
yet is built by `sandbox.compile_in_child` under the time and memory limits (one build per regex at a
time; a refusal is remembered so the same schema is refused at once next time). The engine thread then
only loads it.

Builds run in `parallel` child processes, but at most one of them at a time for a large regex, so a
heavy schema leaves a slot for the small ones. `waiting` counts the requests waiting on a build (the
server counts them toward `--max-pending`). The automata this server builds stay on disk under a size
cap (`cache_max_bytes`), least recently used first out; a file used in the last 5 s is never evicted.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ... import constraints
from ...constraints import isolation, relax
from ...constraints.automaton import cache_path
from ...constraints.sandbox import CompileLimits, CompileRefused, compile_in_child
from ...formats import JSONSchemaFormat, OutputFormat, SchemaError
from ...formats.json_schema import CLIENT_CONSTRAINT

JSON_OBJECT: dict[str, Any] = {"type": "object"}
LARGE_REGEX = 4_000  # characters: a regex this long takes the one large-compile slot
KEEP_RECENT_S = 5.0  # a cached automaton used this recently is never evicted (the engine may be loading it)


def evict(directory: Path, max_bytes: int, keep_recent_s: float = KEEP_RECENT_S) -> int:
    """Delete the least recently used `*.npz` files of `directory` until it holds at most `max_bytes`
    (files used in the last `keep_recent_s` seconds are kept); returns the bytes freed."""
    try:
        entries = [(e.stat().st_mtime, e.stat().st_size, Path(e.path)) for e in os.scandir(directory) if e.name.endswith(".npz")]
    except OSError:
        return 0
    total = sum(size for _, size, _ in entries)
    freed = 0
    now = time.time()
    for mtime, size, path in sorted(entries):
        if total - freed <= max_bytes or now - mtime < keep_recent_s:
            break
        try:
            path.unlink()
            freed += size
        except OSError:
            continue
    return freed


class FormatCache:
    """Formats by schema (LRU), and their automata compiled out of process."""

    def __init__(
        self,
        vocab_path: Path | None,
        vocab_hash: str | None,
        limits: CompileLimits,
        field_tokens: int = 80,
        size: int = 256,
        parallel: int = 2,
        cache_max_bytes: int | None = 1 << 30,
        constraint: str = CLIENT_CONSTRAINT,
        isolator: isolation.Isolator | None = None,
    ):
        self.vocab_path, self.vocab_hash, self.limits = vocab_path, vocab_hash, limits
        self.constraint = constraint  # which engine constrains client schemas: llguidance, or the automaton
        self.isolator = isolator  # where llguidance reads a client's schema (serve: a child process)
        self.field_tokens, self.size = field_tokens, size
        self._formats: OrderedDict[str, JSONSchemaFormat | SchemaError] = OrderedDict()
        self._refused: OrderedDict[str, str] = OrderedDict()
        self._building: dict[str, asyncio.Future[None]] = {}
        self._slots = asyncio.Semaphore(parallel)
        self._large = asyncio.Semaphore(1)
        self._lock = threading.Lock()  # `get` runs in worker threads (off the event loop)
        self.cache_max_bytes = cache_max_bytes
        self.waiting = 0  # requests waiting for an automaton build
        self.evicted_bytes = 0
        self.compiled = 0  # automata built in a child process
        self.compile_s = 0.0

    def get(self, schema: dict[str, Any], name: str | None = None) -> JSONSchemaFormat:
        """The format of `schema` (built once; `SchemaError` when it cannot be honoured)."""
        key = hashlib.sha256(json.dumps([schema, name], sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        with self._lock:
            hit = self._formats.get(key)
            if hit is not None:
                self._formats.move_to_end(key)
        if hit is None:
            with isolation.using(self.isolator):
                try:
                    hit = JSONSchemaFormat(schema, field_tokens=self.field_tokens, name=name, constraint=self.constraint)
                except SchemaError as e:
                    hit = self._relaxed(schema, name, e)
                except RecursionError:  # deeper than Python can walk: past the depth limit anyway
                    hit = SchemaError("response schema nests too deeply; flatten it")
            with self._lock:
                self._formats[key] = hit
                while len(self._formats) > self.size:
                    self._formats.popitem(last=False)
        if isinstance(hit, SchemaError):
            raise hit
        return hit

    def _relaxed(self, schema: dict[str, Any], name: str | None, refused: SchemaError) -> JSONSchemaFormat | SchemaError:
        """A `CheckedFormat` on the nearest schema the compiler accepts (`constraints.relax`: the keywords its
        refusal carries as `SchemaError.unimplemented` left out, strengthened first, then with one `if`/`then` of
        an `allOf` picked to hold, only loosened if neither leaves a value; up to 4 rounds, since a compiler names
        one refusal at a time; an overlapping `oneOf` last), or the first refusal when relaxing cannot help. The
        keywords come from the refusal's data, never from its message (which may quote the client's schema)."""
        from .checked import CheckedFormat

        if self.constraint != CLIENT_CONSTRAINT:  # the automaton path keeps its own refusals
            return refused
        keywords = refused.unimplemented
        last: SchemaError = refused
        for _ in range(4):
            if not keywords:
                return refused
            tried: list[Any] = []
            for strengthen, pick in ((True, False), (True, True), (False, False)):
                r = relax.relax(schema, keywords, strengthen=strengthen, pick=pick)
                if r.schema in tried:
                    continue  # e.g. no allOf of several if/then pairs: picking changes nothing
                tried.append(r.schema)
                try:
                    return CheckedFormat(
                        schema, r.schema, r.keywords, field_tokens=self.field_tokens, name=name, constraint=self.constraint
                    )
                except SchemaError as e:
                    last = e
                except RecursionError:
                    return refused
            more = last.unimplemented - keywords
            if not more and "oneOf" not in keywords and '"oneOf"' in json.dumps(schema):
                more = frozenset({"oneOf"})  # the refusal shown is the schema as sent's; the narrowed copies' may be oneOf
            if not more:
                return refused
            keywords = keywords | more
        return refused

    async def ready(self, fmt: OutputFormat, trusted: bool = False) -> None:
        """Make sure `fmt`'s automaton is in the disk cache (built in a child under the limits unless
        `trusted`); `CompileRefused` when it cannot be built within them."""
        if not fmt.constrained or self.vocab_path is None or self.vocab_hash is None:
            return
        spec = fmt.constraint()
        if not constraints.engine_for(spec).sandboxed:
            return  # e.g. llguidance: compiles in milliseconds, bounded by its own parser limits, on the engine thread
        rx = spec.text()
        key = hashlib.sha256(rx.encode()).hexdigest()
        if key in self._refused:
            raise CompileRefused(self._refused[key])
        target = cache_path(rx, self.vocab_hash)
        if target.exists():
            try:
                os.utime(target)  # used now: last out of the LRU
            except OSError:
                pass
            return
        pending = self._building.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._build(rx, key, trusted))
            self._building[key] = pending
            pending.add_done_callback(lambda _f: self._building.pop(key, None))
        counted = 0 if trusted else 1  # the server's own precompile is no client's request
        self.waiting += counted
        try:
            await asyncio.shield(pending)  # a client that goes away does not stop a build others may wait for
        finally:
            self.waiting -= counted

    async def _build(self, rx: str, key: str, trusted: bool) -> None:
        assert self.vocab_path is not None and self.vocab_hash is not None
        if trusted:  # the server's own formats (json_object at start): no limits, and no client waits behind them
            await compile_in_child(rx, self.vocab_path, self.vocab_hash, CompileLimits(None, None))
            return
        large = self._large if len(rx) > LARGE_REGEX else None
        if large is not None:
            await large.acquire()
        try:
            async with self._slots:
                try:
                    dt = await compile_in_child(rx, self.vocab_path, self.vocab_hash, self.limits)
                except CompileRefused as e:
                    self._refused[key] = str(e)
                    while len(self._refused) > self.size:
                        self._refused.popitem(last=False)
                    raise
        finally:
            if large is not None:
                large.release()
        self.compiled += 1
        self.compile_s += dt
        if self.cache_max_bytes is not None:
            directory = cache_path(rx, self.vocab_hash).parent
            self.evicted_bytes += await asyncio.to_thread(evict, directory, self.cache_max_bytes)
