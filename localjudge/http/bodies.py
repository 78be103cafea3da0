"""Request bodies: a size and time limit on reading one (`read_body`), `BodyError` and `ClientGone`, and a bound
on JSON nesting checked before the parser sees the body (`loads_bounded`, `loads_strict`)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from ..jsonio import JSONBoundsError, json_depth, loads

_DIGITS = re.compile(r"\d+")
# what `loads_strict` parses at most: deeper bodies were refused before as past Python's recursion limit (about 1,000
# levels less the server's own stack); now always, before the parser starts
_PARSER_DEPTH = 500


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


def loads_bounded(data: bytes, max_depth: int) -> Any:
    """`data` parsed as strict JSON (no NaN or Infinity) after `json_depth` is checked: `BodyError` 400 naming
    the depth and the limit, or naming what is not valid JSON. The parser never recurses past `max_depth`."""
    if json_depth(data, stop_past=max_depth) > max_depth:
        raise BodyError(400, f"the request body nests more than {max_depth} levels deep (this server's limit)", "too_deep")
    return loads_strict(data)


def loads_strict(data: bytes) -> Any:
    """`data` parsed as strict JSON (no NaN or Infinity): `BodyError` 400 `invalid_json` naming what is not valid
    JSON (a body nested more than 500 levels deep included, refused before parsing: `localjudge.jsonio`)."""
    try:
        return loads(data, max_depth=_PARSER_DEPTH, constants=False)
    except JSONBoundsError as e:
        raise BodyError(400, f"the request body is not valid JSON ({e.detail})", "invalid_json") from None
