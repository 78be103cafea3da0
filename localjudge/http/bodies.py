"""Request bodies: a size and time limit on reading one (`read_body`), `BodyError` and `ClientGone`, and a bound
on JSON nesting checked before the parser sees the body (`loads_bounded`, `loads_strict`)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

_DIGITS = re.compile(r"\d+")


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
