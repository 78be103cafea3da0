"""Test support for `localjudge serve`: start a real server in a subprocess on a free loopback port.

`start_server(*args)` runs `localjudge serve --port 0 ...` (127.0.0.1 only), waits for its banner,
and returns a `Server` with its base URL; `server.stop()` sends SIGTERM and returns the exit code.
The session-wide default server is the `judge_server` fixture in tests/conftest.py.

`serve_inprocess(*args)` is the same server without the process: the app `localjudge serve *args` builds
(`cli.serve.configure`, `serve.server.app_for`), over the same engine, driven by Starlette's TestClient; `post`,
`get` and `healthy` take either. For what needs no process (request validation, errors, wire shapes): signals,
sockets, slow clients and crash isolation stay with `start_server`.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BANNER = re.compile(r"localjudge serve: (\S+) on (http://127\.0\.0\.1:\d+/v1)")
CLI = str(Path(sys.executable).parent / "localjudge")
ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_MODEL_CATALOG_URI": "",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "RAGAS_DO_NOT_TRACK": "true",
    "DO_NOT_TRACK": "true",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


@dataclass
class Server:
    """A running `localjudge serve` subprocess."""

    proc: subprocess.Popen
    url: str  # http://127.0.0.1:PORT/v1
    model: str
    log: list[str] = field(default_factory=list)

    def stop(self, timeout: float = 120) -> int:
        """SIGTERM, then wait; returns the exit code (kills it if it does not exit in time)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return -9
        return self.proc.returncode


def start_server(*args: str, timeout: float = 180, env: dict | None = None) -> Server:
    """Start `localjudge serve --host 127.0.0.1 --port 0 *args` (extra environment `env`) and wait until it listens."""
    env = {**os.environ, **ENV, **(env or {})}
    proc = subprocess.Popen(
        [CLI, "serve", "--host", "127.0.0.1", "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip())
        m = BANNER.search(line)
        if m:
            server = Server(proc, m.group(2), m.group(1), lines)
            threading.Thread(target=lambda: [lines.append(x.rstrip()) for x in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
            return server
    proc.kill()
    raise RuntimeError("localjudge serve did not start: " + " | ".join(lines[-10:]))


@dataclass
class InProcess:
    """`localjudge serve`'s app in this process: `client` (Starlette's TestClient, Host 127.0.0.1) drives it;
    `state` is its `ServerState` (engine, counters)."""

    client: Any  # starlette.testclient.TestClient
    state: Any  # localjudge.serve.core.state.ServerState
    url: str = "http://127.0.0.1/v1"

    @property
    def model(self) -> str:
        """The served model name (as `Server.model`)."""
        return self.state.model_name

    @property
    def host(self) -> InProcess:
        """The same app addressed from its root (Ollama's /api/ routes), as tests address a server's host URL."""
        return InProcess(self.client, self.state, self.url.removesuffix("/v1"))

    @property
    def transport(self) -> httpx.BaseTransport:
        """An httpx transport to this app: `httpx.Client(transport=...)` for a client library that builds its own
        httpx client from a URL (ollama's `Client(host, transport=)`, LiteLLM's `HTTPHandler`)."""
        return _SyncOverTestClient(self.client._transport)

    @property
    def async_transport(self) -> httpx.AsyncBaseTransport:
        """`transport` for an `httpx.AsyncClient` (LangChain's `async_client_kwargs`)."""
        return _AsyncOverTestClient(self.client._transport)

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An `httpx.AsyncClient` on this app, for async client libraries (AsyncOpenAI's `http_client`)."""
        return httpx.AsyncClient(transport=self.async_transport, base_url=self.url, **kwargs)


def _send_to_app(app_transport: Any, request: httpx.Request, body: bytes) -> Any:
    """`request` answered by the app through the TestClient's transport. Starlette's TestClient is built on its own
    httpx (`starlette.testclient.httpx`: the httpx2 package here), which need not be the client library's: the request
    and the answer cross as bytes (method, URL, raw headers, body; status, raw headers, body stream)."""
    from starlette import testclient

    h = testclient.httpx
    return app_transport.handle_request(h.Request(request.method, str(request.url), headers=request.headers.raw, content=body))


class _SyncChunks(httpx.SyncByteStream):
    """A TestClient response's body as the app sends it (TestClient streams it)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        self._stream.close()


class _SyncOverTestClient(httpx.BaseTransport):
    """The TestClient's transport for a client library's own `httpx.Client`."""

    def __init__(self, app_transport: Any) -> None:
        self._app = app_transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        got = _send_to_app(self._app, request, request.read())
        return httpx.Response(got.status_code, headers=got.headers.raw, stream=_SyncChunks(got.stream), request=request)


class _AsyncChunks(httpx.AsyncByteStream):
    """A TestClient response's body as the app sends it, read from a worker thread chunk by chunk."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self):  # type: ignore[override]
        it = iter(self._stream)
        while (chunk := await asyncio.to_thread(next, it, None)) is not None:
            yield chunk

    async def aclose(self) -> None:
        await asyncio.to_thread(self._stream.close)


class _AsyncOverTestClient(httpx.AsyncBaseTransport):
    """The TestClient's transport for an async client: each request is sent from a worker thread and answered by the
    app on the TestClient's own event loop (as a server answers on its own), so one client's requests run side by side
    and the caller's event loop is never the app's."""

    def __init__(self, app_transport: Any) -> None:
        self._app = app_transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        got = await asyncio.to_thread(_send_to_app, self._app, request, body)
        return httpx.Response(got.status_code, headers=got.headers.raw, stream=_AsyncChunks(got.stream), request=request)


@contextmanager
def serve_inprocess(*args: str, engine: Any = None) -> Iterator[InProcess]:
    """The app `localjudge serve --host 127.0.0.1 *args` serves, started (its lifespan) in this process; `engine`
    given: served instead of loading --model. The engine is never closed here: a model loaded through --model is the
    process's shared load (engine/backends.py `_ENGINES`, as `load_engine`'s), which later tests in this worker use;
    closing it freed their model under them (a segfault in the next test that ran the default model)."""
    from starlette.testclient import TestClient

    from localjudge.cli.options import model_choice
    from localjudge.cli.serve import configure, serve_cmd
    from localjudge.serve.server import app_for

    params = model_choice(serve_cmd.make_context("serve", ["--host", "127.0.0.1", "--port", "0", *args]).params)
    setup = configure(params, engine)
    state, app = app_for(setup.engine, setup.config, setup.identity, params["host"])
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield InProcess(client, state)


def _body(body: bytes | dict | str) -> bytes:
    return body if isinstance(body, bytes) else (body.encode() if isinstance(body, str) else json.dumps(body).encode())


def post(
    url: str | InProcess,
    body: bytes | dict | str,
    headers: dict | None = None,
    path: str = "/chat/completions",
    timeout=600,
):
    """(status, parsed JSON body, headers) of a raw POST: no client library smoothing anything over. `url` is a
    server's base URL, or an in-process app (`serve_inprocess`)."""
    if isinstance(url, InProcess):
        hs = {"Content-Type": "application/json", **(headers or {})}
        r = url.client.post(urllib.parse.urlparse(url.url).path + path, content=_body(body), headers=hs)
        is_json = r.headers.get("content-type", "").startswith("application/json")
        return r.status_code, r.json() if r.content and is_json else r.content, r.headers
    u = urllib.parse.urlparse(url)
    data = _body(body)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("POST", u.path + path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        r = conn.getresponse()
        raw = r.read()
        is_json = r.getheader("content-type", "").startswith("application/json")
        return r.status, json.loads(raw) if raw and is_json else raw, dict(r.getheaders())
    finally:
        conn.close()


def get(url: str | InProcess, path: str, headers: dict | None = None):
    """(status, parsed JSON body) of a GET of `path` (from the root) on a server or an in-process app."""
    if isinstance(url, InProcess):
        r = url.client.get(path, headers=headers or {})
        return r.status_code, r.json()
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def assert_openai_error(status, body, expect_status, *words, param=None, code=None):
    assert status == expect_status, body
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"} and "\n" not in err["message"]
    for w in words:
        assert w in err["message"], err["message"]
    if param is not None:
        assert err["param"] == param
    if code is not None:
        assert err["code"] == code


def healthy(url: str | InProcess, headers: dict | None = None) -> dict:
    status, body = get(url, "/health", headers)
    assert status == 200 and body["status"] == "ok"
    return body


def promptfoo_cli() -> tuple[Path | None, str]:
    """(the promptfoo 0.121 CLI, "") installed with npm under ~/.cache/localjudge-tests (kept across sessions, as
    scripts/catalog/make_framework_prompt_catalog.py finds it), or (None, why not) when npm cannot install it."""
    import shutil

    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed"
    prefix = Path.home() / ".cache" / "localjudge-tests" / "promptfoo-0.121"
    cli = prefix / "node_modules" / ".bin" / "promptfoo"
    if not cli.exists():
        got = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "promptfoo@0.121"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if got.returncode != 0 or not cli.exists():
            tail = (got.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"npm cannot install promptfoo@0.121 here: {tail}"
    return cli, ""


def fill_contract(contract: Any, values: list[str]) -> list[tuple[str, str]]:
    """(role, text) of each message of a catalog contract (serve/core/catalog.py `Contract`) with `values` in its
    variables, in turn and cycling: what the framework sends for those values."""
    out, k = [], 0
    for role, segs in zip(contract.roles, contract.segments, strict=True):
        parts = [segs[0]]
        for s in segs[1:]:
            parts += [values[k % len(values)], s]
            k += 1
        out.append((role, "".join(parts)))
    return out


def minimal_instance(schema: dict[str, Any]) -> Any:
    """The smallest instance of a contract schema (the shape the shortest constrained answer has): an enum's first
    value, anyOf's first branch, every property, the fewest items, the minimum, True, "x"."""
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return minimal_instance(schema["anyOf"][0])
    t = schema.get("type")
    if t == "object":
        return {k: minimal_instance(v) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        return [minimal_instance(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if t in ("integer", "number"):
        return schema.get("minimum", 0)
    if t == "boolean":
        return True
    return "x"


# the hostile server's small limits (tests/test_hostile_serve.py), its client schemas on the automaton path (the compile
# queue and its limits are that path's); the in-process schemathesis app takes them too (tests/test_serve_schemathesis.py)
HOSTILE_LIMITS = (
    "--no-precompile",
    "--schema-constraint",
    "automaton",
    "--option",
    "n_threads=1",
    "--max-connections",
    "8",
    "--header-timeout",
    "2",
    "--body-timeout",
    "3",
    "--max-pending",
    "3",
    "--compile-timeout",
    "8",
)
