"""What every endpoint module shares, below all of them: typed answers and OpenAI-shaped errors as JSON
responses, the API key check, and the bounded JSON body (`localjudge.http`), so `routes.py` (the endpoint
table) imports the handler modules and none of them imports it back."""

from __future__ import annotations

import asyncio
import hmac
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ...http import BodyError, loads_strict, read_body
from .errors import APIError, bad_request
from .wire import Wire

if TYPE_CHECKING:
    from .state import ServerState


def answer(body: Wire, status: int = 200) -> JSONResponse:
    """A typed answer as a JSON response (Starlette's compact JSON)."""
    return JSONResponse(body.body(), status_code=status)


def error(e: APIError) -> JSONResponse:
    """An error as its OpenAI-shaped answer, with its status and headers."""
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


def check_key(state: ServerState, request: Request) -> None:
    key = state.config.api_key
    if key is None:
        return
    auth = request.headers.get("authorization", "")
    scheme, _, given = auth.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise APIError(
            401,
            "missing API key: send the header 'Authorization: Bearer <key>' (the key given to localjudge serve --api-key)",
            type="invalid_request_error",
            code="invalid_api_key",
        )
    if not hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), key.encode("utf-8")):
        raise APIError(401, "incorrect API key provided", type="invalid_request_error", code="invalid_api_key")


CLOSE = {"Connection": "close"}


async def request_body(request: Request, limit: int, timeout: float = 30.0, stopping: asyncio.Event | None = None) -> Any:
    """The parsed JSON body, read within `timeout` seconds and `limit` bytes (413, 408; 503 when the
    server begins shutting down first; `ClientGone` when the client leaves): `localjudge.http.read_body`."""
    try:
        data = await read_body(request, limit, timeout, stopping)
    except BodyError as e:
        if e.status >= 500:
            raise APIError(e.status, e.message, type="server_error", headers=CLOSE) from None
        raise APIError(e.status, e.message, code=e.code, headers=CLOSE if e.status == 408 else None) from None
    try:
        return loads_strict(data)
    except BodyError as e:
        raise bad_request(f"{e.message}; send a JSON object") from None
