"""What a client can make an HTTP server hold, shared by `localjudge serve` and `localjudge view`: a limit on
open connections, a deadline for request headers, a size and time limit on a request body, a bound on JSON
nesting, and a log that says a repeated thing once per interval.

uvicorn's HTTP protocol holds a connection whose headers never finish for ever, and counts no connection
before its headers are complete. `protocol_class` subclasses it (lazily: uvicorn is optional) so that a
connection beyond `max_connections` is answered 503 at once and closed, and one that has not sent complete
request headers within `header_timeout` seconds (from its opening, or from the first byte of its next
request) is closed. Both happen before any route or API key check runs.

When the process runs out of file descriptors, asyncio logs `socket.accept() out of system resource` with a
traceback for every pending accept (up to the listen backlog, once a second: tens of megabytes a minute);
`throttle_logs` puts one `Throttle` on that logger and uvicorn's, so each such message is logged once per
interval with a count of the ones held back.

The error bodies are each server's own (serve: OpenAI-shaped, view: `{"error": ...}`): callers pass the 503
body, and map `BodyError` to their shape. This module imports nothing of localjudge.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from typing import Any

_DIGITS = re.compile(r"\d+")
LOGGERS = ("uvicorn.error", "uvicorn", "asyncio")  # asyncio: the accept() errors of an exhausted process


class Throttle(logging.Filter):
    """Lets one record per (logger, message template) through per `interval` seconds; the next one
    after the interval says how many were held back."""

    def __init__(self, interval: float = 60.0):
        super().__init__()
        self.interval = interval
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` is logged (the first of its kind in the interval). Its kind is its logger and the
        first line of its message template with the numbers taken out: asyncio formats its messages itself
        (`Exception in callback ...` then a handle whose time and address change with every record)."""
        key = (record.name, _DIGITS.sub("#", str(record.msg).split("\n", 1)[0][:200]))
        now = time.monotonic()
        last, held = self._seen.get(key, (float("-inf"), 0))
        if now - last < self.interval:
            self._seen[key] = (last, held + 1)
            return False
        if len(self._seen) > 1000:
            self._seen.clear()
        self._seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like this in the last {self.interval:g} s)"
        return True


def throttle_logs(*names: str, interval: float = 60.0) -> Throttle:
    """Install one `Throttle` on uvicorn's and asyncio's loggers and on `names` (the server's own); returns it.
    A logger that already has a `Throttle` keeps it."""
    t = Throttle(interval)
    for name in (*LOGGERS, *names):
        logger = logging.getLogger(name)
        if not any(isinstance(f, Throttle) for f in logger.filters):
            logger.addFilter(t)
    return t


def busy_response(body: dict[str, Any]) -> bytes:
    """The raw 503 (`retry-after: 1`, `connection: close`) sent to a connection past the limit, `body` as JSON."""
    data = json.dumps(body).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
        f"connection: close\r\ncontent-length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


def protocol_class(max_connections: int, header_timeout: float, busy: bytes, logger: str) -> type:
    """uvicorn's h11 protocol with a connection limit (the raw answer `busy` beyond it, then close) and a
    request-header deadline; what it refuses or cuts is logged on `logger` (throttle it with `throttle_logs`)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    log = logging.getLogger(logger)

    class GuardedH11Protocol(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _armed_for: Any = None
        _refused = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                self._refused = True
                log.warning(
                    "refused a connection: %d open, the limit is %d (--max-connections)",
                    len(self.connections) - 1,
                    max_connections,
                )
                transport.write(busy)
                if transport.can_write_eof():
                    transport.write_eof()  # the answer, then EOF; what the client sent is read and dropped
                self.loop.call_later(1.0, transport.close)  # closing with unread data would reset the answer away
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if self._timer is None and (self.cycle is None or self.cycle.response_complete):
                self._arm()  # the first byte of a next request: its headers have the same deadline
            super().data_received(data)

        def _arm(self) -> None:
            self._armed_for = self.cycle
            self._timer = self.loop.call_later(header_timeout, self._deadline)

        def _deadline(self) -> None:
            self._timer = None
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and self.cycle is self._armed_for and not self.transport.is_closing():
                log.warning("closed a connection that sent no complete request headers in %g s", header_timeout)
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            super().connection_lost(exc)

    return GuardedH11Protocol


# ------------------------------------------------------------------------------------------- bodies


class BodyError(Exception):
    """A request body refused: the HTTP status (413 too large, 408 too slow, 503 shutting down, 400 nested too
    deep), a one-line message, a machine code (None for 503) and whether the connection must be closed (the rest
    of the body is not read)."""

    def __init__(self, status: int, message: str, code: str | None = None, close: bool = False):
        super().__init__(message)
        self.status, self.message, self.code, self.close = status, message, code, close


class ClientGone(Exception):
    """The client closed its connection before its request body was complete (a normal event)."""


async def read_body(request: Any, limit: int, timeout: float = 30.0, stopping: asyncio.Event | None = None) -> bytes:
    """The raw body of a Starlette `request`, read within `timeout` seconds and `limit` bytes: `BodyError` 413
    (a declared or received size past the limit, checked before and while reading), 408 (too slow), 503 (the
    server began shutting down first); `ClientGone` when the client leaves."""
    from starlette.requests import ClientDisconnect

    size = request.headers.get("content-length", "")
    if size.isdigit() and int(size) > limit:
        raise BodyError(413, f"the request body is {size} bytes, more than this server's limit of {limit}", "request_too_large")
    parts, n = [], 0
    deadline = time.monotonic() + timeout
    chunks = request.stream().__aiter__()
    stop = asyncio.ensure_future(stopping.wait()) if stopping is not None else None
    try:
        while True:
            nxt: asyncio.Future[bytes] = asyncio.ensure_future(chunks.__anext__())
            waits: list[asyncio.Future[Any]] = [nxt] if stop is None else [nxt, stop]
            done, _ = await asyncio.wait(
                waits, timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED
            )
            if nxt not in done:
                nxt.cancel()
                if stop is not None and stop.done():
                    raise BodyError(503, "the server is shutting down; retry against another instance", close=True)
                raise BodyError(
                    408,
                    f"the request body did not arrive within this server's {timeout:g} s; send it at once",
                    "request_timeout",
                    close=True,  # the rest of the body is not waited for
                )
            try:
                chunk = nxt.result()
            except StopAsyncIteration:
                break
            except ClientDisconnect:
                raise ClientGone() from None
            n += len(chunk)
            if n > limit:
                raise BodyError(
                    413, f"the request body is more than this server's limit of {limit} bytes", "request_too_large", close=True
                )
            parts.append(chunk)
    finally:
        if stop is not None:
            stop.cancel()
    return b"".join(parts)


# a string (to its closing quote, or to the end when it has none: one pass, never a retry), or a bracket
_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


def json_depth(data: bytes, stop_past: int | None = None) -> int:
    """How deep the arrays and objects of JSON text nest (0 for a scalar), counted in one linear pass without
    recursion and without parsing: brackets inside strings are skipped, so a valid document's depth is exact
    (an invalid one gets a number too; the parser rejects it afterwards). With `stop_past`, the count stops
    at the first level deeper than it (and returns that level)."""
    depth = deepest = 0
    for m in _JSON_TOKENS.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_past is not None and depth > stop_past:
                    break
        elif c in (b"]", b"}"):
            depth = max(0, depth - 1)
    return deepest


def loads_bounded(data: bytes, max_depth: int) -> Any:
    """`data` parsed as strict JSON (no NaN or Infinity) after `json_depth` is checked: `BodyError` 400 naming
    the depth and the limit, or naming what is not valid JSON. The parser never recurses past `max_depth`."""
    if json_depth(data, stop_past=max_depth) > max_depth:
        raise BodyError(400, f"the request body nests more than {max_depth} levels deep (this server's limit)", "too_deep")
    return loads_strict(data)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(data: bytes) -> Any:
    """`data` parsed as strict JSON (no NaN or Infinity): `BodyError` 400 `invalid_json` naming what is not valid
    JSON (a body nested past Python's recursion limit included)."""
    try:
        return json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        msg = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise BodyError(400, f"the request body is not valid JSON ({msg})", "invalid_json") from None
