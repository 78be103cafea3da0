"""Chat templates under time and memory limits: an untrusted Jinja template (from a GGUF file, or given with
--chat-template) is compiled and rendered in a child process, never in this one.

Jinja's sandbox stops code execution, but not a loop bomb (`range(100000)` nested twice runs for hours)
nor a memory bomb (`'x' * 300000000`). `ChatTemplate` sends each render to a long-lived worker
(`_template_worker.py`: standard library and jinja2 only) and waits at most `time_limit_s` seconds; a
worker that runs over is killed (and started again on the next render). The worker's address space is
capped (`memory_mb` on top of what Python itself needs, RLIMIT_AS where the platform has it), and any
output or `*` repetition over `max_chars` is refused. Every failure is a one-line `ChatTemplateError`
(exit 3); the template's own `raise_exception(...)` stays "the model's chat template refused the messages".

Every caller gets the limits (`LlamaEngine.render_prompt`, hence the runner, the agent and `serve`): a
template can hold the calling thread for at most `time_limit_s`. One worker per template, shared by the
threads of a process (a lock orders them); a forked child starts its own worker.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from ..errors import ChatTemplateError

TIME_LIMIT_S = 10.0  # one render; real chat templates take milliseconds
MEMORY_MB = 1024  # on top of the worker's own size
STARTUP_S = 60.0  # starting Python and importing jinja2, on a loaded machine
_WORKER = Path(__file__).with_name("_template_worker.py")
_BASE_MB = 256  # what the worker's Python and jinja2 take before any template runs (address space)


def _import_dirs() -> list[str]:
    """Where this process finds jinja2 and markupsafe: the worker runs isolated (-I: no PYTHONPATH, no current
    directory on its path) and puts only these in front of its path."""
    import importlib.util

    dirs: list[str] = []
    for name in ("jinja2", "markupsafe"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            d = str(Path(spec.origin).parent.parent)
            if d not in dirs:
                dirs.append(d)
    return dirs


def _kill(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


class ChatTemplate:
    """A compiled chat template; `render(**context)` returns its text or raises `ChatTemplateError`.

    `name`: the model, for messages. `max_chars`: refuse a rendering longer than this (None: 16 x the
    characters given in the context plus 1 MiB, so long judged texts always fit)."""

    def __init__(
        self,
        source: str,
        name: str,
        time_limit_s: float = TIME_LIMIT_S,
        memory_mb: int = MEMORY_MB,
        max_chars: int | None = None,
    ):
        self.source = source
        self.name = name
        self.time_limit_s = float(time_limit_s)
        self.memory_mb = int(memory_mb)
        self.max_chars = max_chars
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._finalizer: Any = None
        self._call({"src": source})  # a template that does not compile fails here, at load

    def render(self, **context: Any) -> str:
        """The template rendered with `context` (messages, add_generation_prompt, bos_token, eos_token)."""
        size = sum(len(json.dumps(v)) for v in context.values())
        limit = self.max_chars or 16 * size + (1 << 20)
        return self._call({"src": self.source, "ctx": context, "max_chars": limit})

    def close(self) -> None:
        """Stop the worker process (a later render starts a new one)."""
        with self._lock:
            if self._pid == os.getpid():
                _kill(self._proc)
            self._proc = None

    # ------------------------------------------------------------------ the worker

    def _start(self) -> subprocess.Popen[bytes]:
        limit = (_BASE_MB + self.memory_mb) << 20
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", str(_WORKER), str(limit), *_import_dirs()],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError as e:
            raise ChatTemplateError(
                f"cannot start the chat-template worker ({e.strerror or e}); check the Python install"
            ) from None
        self._finalizer = weakref.finalize(self, _kill, proc)
        return proc

    def _call(self, request: dict[str, Any]) -> str:
        with self._lock:
            if self._pid != os.getpid():  # forked: the pipes belong to the parent's worker
                self._proc, self._pid = None, os.getpid()
            if self._proc is None or self._proc.poll() is not None:
                # a fresh worker: starting Python and jinja2 and compiling get their own allowance; the render
                # below gets only the time limit
                self._proc = self._start()
                reply = self._roundtrip({"src": self.source}, STARTUP_S + self.time_limit_s, starting=True)
                if "ctx" not in request or "ok" not in reply:
                    return self._text(reply)
            return self._text(self._roundtrip(request, self.time_limit_s, starting=False))

    def _roundtrip(self, request: dict[str, Any], seconds: float, starting: bool) -> dict[str, Any]:
        """Send one request to the worker and read its reply within `seconds`; a worker that runs over or
        dies is killed and forgotten (the next call starts another) and the error is one line."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            line = self._read_line(proc, time.monotonic() + seconds)
        except BrokenPipeError:
            line = b""
        except TimeoutError:
            _kill(proc)
            self._proc = None
            raise ChatTemplateError(
                f"the chat template of {self.name!r} ran longer than {self.time_limit_s:g} s (a loop bomb?) and was "
                "stopped; use a template you trust: --chat-template raw or --chat-template '<jinja template>'"
            ) from None
        if not line:
            _kill(proc)
            self._proc = None
            if starting:
                raise ChatTemplateError(
                    f"the chat-template worker for {self.name!r} exited at start ({sys.executable} -I {_WORKER}); "
                    "check that jinja2 is installed"
                )
            raise ChatTemplateError(
                f"the chat template of {self.name!r} stopped its worker (over the {self.memory_mb} MB memory limit?); "
                "use a template you trust: --chat-template raw or --chat-template '<jinja template>'"
            )
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _text(self, reply: dict[str, Any]) -> str:
        """The rendered text of a reply, or its one-line `ChatTemplateError`."""
        if "ok" in reply:
            return str(reply["ok"])
        if "refused" in reply:
            raise ChatTemplateError(f"the model's chat template refused the messages: {reply['refused']}")
        what = "does not compile" if reply.get("stage") == "compile" else "failed to render"
        raise ChatTemplateError(
            f"the chat template of {self.name!r} {what} ({str(reply.get('error'))[:300]}); pass --chat-template raw "
            "or a template you trust"
        )

    @staticmethod
    def _read_line(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
        """One reply line from the worker, or b"" when it exits; TimeoutError after `deadline`."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            data = os.read(fd, 1 << 20)
            if not data:
                return b""
            chunks.append(data)
            if data.endswith(b"\n"):
                return b"".join(chunks)
