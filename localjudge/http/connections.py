"""Connections: a limit on open connections and a deadline for request headers (uvicorn's protocol,
subclassed), the 503 body, and a log that says a repeated thing once per interval (see the package docstring)."""

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
