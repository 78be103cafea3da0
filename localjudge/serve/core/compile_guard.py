"""llguidance on a client's schema or grammar, run first in a child process: a native crash is a 400, not the server.

`CompileGuard` is serve's `constraints.isolation.Isolator`. For each client JSON schema or Lark grammar that a
request's format needs, a child process (`python -m localjudge.serve.core.compile_guard`) runs what the server would
run: `llg_schema.grammar_here` / `lark_grammar_here` (llguidance's conversion and validation), then, when the
server's model is a GGUF, the compile the engine thread does next (`LLGVocab.compile`: the matcher and the close
path from the start) with the same tokenizer, read from the model file's vocabulary alone. The child answers the
validated grammar document, or the refusal the in-process path would have raised; the server then builds its own
matcher from a document that a process like it has already walked end to end. A child that dies (a segfault,
an abort) or runs past `seconds` is a refusal naming what stopped it, and the next request gets a fresh child.

Answers are kept by the sha256 of (kind, canonical value), the last `cache_size` of them and at most `cache_chars`
characters of grammar text among them, refusals included (a
refusal by crash is as deterministic as llguidance), except a refusal by the time limit: a repeated schema pays
nothing. Children are kept between requests (at most `workers` at once; starting one costs about a second:
imports, the vocabulary, llguidance's tokenizer), and `warm()` starts the first at server start.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

from ...formats import llg_schema
from ...formats.json_schema_regex import SchemaError

_HEADER = struct.Struct(">Q")


class ChildStopped(Exception):
    """The child process died or ran past its time limit (the message says which; `timed_out` for the limit)."""

    def __init__(self, why: str, timed_out: bool = False):
        super().__init__(why)
        self.timed_out = timed_out


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class _Child:
    """One child process and its pipes."""

    def __init__(self, model_path: str | None, memory_bytes: int | None):
        env = {**os.environ, "RAYON_NUM_THREADS": "1"}
        args = [sys.executable, "-m", "localjudge.serve.core.compile_guard", model_path or "", str(memory_bytes or 0)]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def ask(self, message: dict[str, Any], seconds: float | None) -> dict[str, Any]:
        """Send `message`, return the child's answer; `ChildStopped` when it dies or passes `seconds`."""
        blob = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
        deadline = None if seconds is None else time.monotonic() + seconds
        try:
            self.stdin.write(_HEADER.pack(len(blob)) + blob)
            self.stdin.flush()
            head = self._read(_HEADER.size, deadline)
            answer = json.loads(self._read(_HEADER.unpack(head)[0], deadline))
        except TimeoutError:  # before OSError, which it is
            self.kill()
            raise ChildStopped(f"ran past the server's limit of {seconds:g} s", timed_out=True) from None
        except (EOFError, OSError) as e:  # a broken pipe, or the pipe closed: the child is gone
            self.kill()
            code = self.proc.wait()
            why = f"crashed ({_signal_name(code)})" if code < 0 else f"exited with code {code}"
            raise ChildStopped(why) from e
        return answer if isinstance(answer, dict) else {}

    def _read(self, n: int, deadline: float | None) -> bytes:
        fd = self.stdout.fileno()
        out = bytearray()
        while len(out) < n:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return bytes(out)

    def kill(self) -> None:
        """End the child now (it is never reused after this)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.stdin, self.stdout):
            try:
                f.close()
            except OSError:
                pass


class CompileGuard:
    """Client schemas and grammars validated and compiled by llguidance in child processes (module docstring)."""

    def __init__(
        self,
        model_path: str | None = None,
        workers: int = 2,
        seconds: float | None = 60.0,
        memory_bytes: int | None = 4 << 30,
        cache_size: int = 256,
        cache_chars: int = 64 << 20,
    ):
        self.model_path, self.seconds, self.memory_bytes = model_path, seconds, memory_bytes
        self.workers, self.cache_size, self.cache_chars = max(1, workers), cache_size, cache_chars
        self._chars = 0  # characters of grammar text and refusals the cache holds
        self._idle: queue.Queue[_Child] = queue.Queue()
        self._started = 0
        self._lock = threading.Lock()
        # (ok, grammar document or refusal, the keywords a refusal names as unimplemented)
        self._cache: OrderedDict[str, tuple[bool, str, tuple[str, ...]]] = OrderedDict()
        self._closed = False
        self.asked = 0  # questions that reached a child (cache misses)
        self.stopped = 0  # children that crashed or ran past the limit

    def grammar(self, kind: str, value: Any, error: type[Exception]) -> str:
        """llguidance's validated grammar document of `value` (`kind` "schema" or "lark"), from a child process;
        `error` with the child's refusal, or naming the crash or the time limit that stopped it."""
        blob = json.dumps([kind, value], sort_keys=True, ensure_ascii=False)
        key = hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
        if hit is None:
            hit, keep = self._ask(kind, value)
            if keep:
                with self._lock:
                    if key not in self._cache:
                        self._cache[key] = hit
                        self._chars += len(hit[1])
                    while self._cache and (len(self._cache) > self.cache_size or self._chars > self.cache_chars):
                        self._chars -= len(self._cache.popitem(last=False)[1][1])
        ok, text, keywords = hit
        if ok:
            return text
        if text == "RecursionError":  # what the in-process path raises there (FormatCache maps it)
            raise RecursionError("the format nests too deeply")
        raise llg_schema.refusal(error, text, frozenset(keywords))

    def _ask(self, kind: str, value: Any) -> tuple[tuple[bool, str, tuple[str, ...]], bool]:
        """(ok, grammar document or refusal, the keywords the refusal names as unimplemented), and whether
        the answer may be cached."""
        what = "response schema" if kind == "schema" else "grammar"
        child = self._take()
        self.asked += 1
        try:
            answer = child.ask({"op": kind, "value": value}, self.seconds)
        except ChildStopped as e:
            self.stopped += 1
            self._lost()
            msg = f"{what}: the constraint compiler {e} on it; simplify it (fewer nested levels, $refs or rules), or report it if it is small"
            return (False, msg, ()), not e.timed_out
        except BaseException:  # anything else (a reply that is not JSON): the child is not trusted again
            child.kill()
            self._lost()
            raise
        self._give(child)
        if "grammar" in answer:
            return (True, str(answer["grammar"]), ()), True
        keywords = tuple(str(k) for k in answer.get("unimplemented") or ())
        return (False, str(answer.get("error") or f"{what}: refused by the constraint compiler"), keywords), True

    def _take(self) -> _Child:
        """An idle child, or a new one while fewer than `workers` run; else wait for one to come back."""
        while True:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the compile guard is closed")
                start = self._idle.empty() and self._started < self.workers
                if start:
                    self._started += 1
            if start:
                try:
                    return _Child(self.model_path, self.memory_bytes)
                except BaseException:
                    self._lost()
                    raise
            try:  # every child is busy (each question is bounded by `seconds`); look again now and then
                return self._idle.get(timeout=0.5)
            except queue.Empty:
                continue

    def _give(self, child: _Child) -> None:
        with self._lock:
            closed = self._closed
        if closed:
            child.kill()
        else:
            self._idle.put(child)

    def _lost(self) -> None:
        with self._lock:
            self._started -= 1

    def warm(self) -> None:
        """Start one child and wait until it is ready (its imports and vocabulary loaded)."""
        child = self._take()
        try:
            child.ask({"op": "ping"}, self.seconds)
        except ChildStopped:
            self._lost()
            return
        self._give(child)

    def close(self) -> None:
        """End every child (requests still asking get a `RuntimeError`)."""
        with self._lock:
            self._closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                return


def model_file(engine: Any) -> str | None:
    """The GGUF file whose vocabulary `engine`'s llguidance tokenizer is read from, or None when it has no such
    tokenizer (a scripted engine, another server): then the child validates, and the engine compiles nothing."""
    vocab = getattr(engine, "vocab", None)
    if vocab is None or "llguidance" not in getattr(vocab, "tokenizers", {}):
        return None
    path = getattr(getattr(engine, "info", None), "path", None)
    return str(path) if path else None


# ------------------------------------------------------------------------------------------------ the child


class _Refused(SchemaError):
    """A refusal inside the child: its message goes back as is, with the keywords it names as unimplemented."""


def _vocab(model_path: str) -> Any:
    """llguidance's view of the model's vocabulary, read from the file's vocabulary alone (no weights)."""
    import llama_cpp

    from ...constraints.llg import LLGVocab, llama_tokenizer
    from ...engine.llama_log import quiet_llama_logs
    from ...engine.llama_text import read_vocab

    quiet_llama_logs(llama_cpp, verbose=False)
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    mp.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(model_path.encode(), mp)
    if not model:
        return None
    vocab_p = llama_cpp.llama_model_get_vocab(model)
    vocab = read_vocab(llama_cpp, vocab_p, int(llama_cpp.llama_vocab_n_tokens(vocab_p)))
    return LLGVocab(llama_tokenizer(vocab_p, vocab), vocab)


def _answer(message: dict[str, Any], lv: Any) -> dict[str, Any]:
    from ...errors import ConstraintError

    op = message.get("op")
    if op == "ping":
        return {}
    try:
        if op == "schema":
            g = llg_schema.grammar_here(message["value"], _Refused)
        elif op == "lark":
            g = llg_schema.lark_grammar_here(message["value"], _Refused)
        else:
            return {"error": f"unknown question {op!r}"}
    except _Refused as e:
        return {"error": str(e), "unimplemented": sorted(e.unimplemented)}
    except RecursionError:
        return {"error": "RecursionError"}
    if lv is not None:
        try:
            lv.compile(g)  # what the engine thread runs next: the matcher and the close path from the start
        except ConstraintError:
            pass  # the server's own compile refuses it the same way, with its own message
    return {"grammar": g}


def _child(argv: list[str]) -> int:
    model_path, memory = argv[0], int(argv[1])
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    lv = _vocab(model_path) if model_path else None
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return 0  # the server closed the pipe (or died): nothing more to do
        message = json.loads(stdin.read(_HEADER.unpack(head)[0]))
        blob = json.dumps(_answer(message, lv), ensure_ascii=False).encode("utf-8", "surrogatepass")
        stdout.write(_HEADER.pack(len(blob)) + blob)
        stdout.flush()


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
