"""Connections before they are requests: a limit on open connections, a deadline for request headers,
and a log that says a repeated thing once per interval.

uvicorn's HTTP protocol holds a connection whose headers never finish for ever, and counts no
connection before its headers are complete. `protocol_class` subclasses it (lazily: uvicorn is
optional) so that a connection beyond `max_connections` is answered 503 at once and closed, and one
that has not sent complete request headers within `header_timeout` seconds (from its opening, or
from the first byte of its next request) is closed. Both happen before the API key is read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

log = logging.getLogger("localjudge.serve")


class Throttle(logging.Filter):
    """Lets one record per (logger, message template) through per `interval` seconds; the next one
    after the interval says how many were held back."""

    def __init__(self, interval: float = 60.0):
        super().__init__()
        self.interval = interval
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` is logged (the first of its kind in the interval)."""
        key = (record.name, str(record.msg))
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


def throttle_logs(interval: float = 60.0) -> Throttle:
    """Install one `Throttle` on the server's loggers (uvicorn's and localjudge.serve); returns it."""
    t = Throttle(interval)
    for name in ("uvicorn.error", "uvicorn", "localjudge.serve"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, Throttle) for f in logger.filters):
            logger.addFilter(t)
    return t


def _busy_response() -> bytes:
    body = json.dumps(
        {
            "error": {
                "message": "the server has too many open connections; retry in a second",
                "type": "server_error",
                "param": None,
                "code": "too_many_connections",
            }
        }
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def protocol_class(max_connections: int, header_timeout: float) -> type:
    """uvicorn's h11 protocol with a connection limit (503 beyond it) and a request-header deadline."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

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
                transport.write(_busy_response())
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
