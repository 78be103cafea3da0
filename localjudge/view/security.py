"""The view's guards, one ASGI middleware in front of every route.

* Host header: must name an allowed host (the bound address, localhost, 127.0.0.1, ::1, plus --allow-host);
  anything else gets 421, which stops DNS-rebinding pages from reading the app.
* API key (required by `localjudge view` for any non-loopback bind): `Authorization: Bearer KEY`, or the
  `lj_view_key` cookie that opening `/?key=KEY` once sets (HttpOnly, SameSite=Strict); else 401.
* CSRF: every POST must carry the `X-CSRF-Token` header equal to this server's token (a random value put in
  each page's `<meta name="csrf-token">`), and an `Origin`, when sent, must be this server; else 403.
* Headers on every answer: a Content-Security-Policy allowing only this origin's own scripts, styles and
  connections (`script-src 'self'`, no inline script, no external asset), nosniff, no referrer, no framing.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
COOKIE = "lj_view_key"


def _host_only(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """The middleware: Host allow-list, API key, CSRF token, security headers."""

    def __init__(self, app: ASGIApp, allowed_hosts: set[str], csrf_token: str, api_key: str | None):
        self.app, self.csrf_token, self.api_key = app, csrf_token, api_key
        self.allowed = {_host_only(h) for h in allowed_hosts} | {"localhost", "127.0.0.1", "[::1]"}

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if _host_only(host) not in self.allowed:
            await _plain(send, 421, f"Host {host!r} is not allowed; open the address `localjudge view` printed")
            return
        extra: list[tuple[bytes, bytes]] = []
        if self.api_key:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = headers.get("authorization", "").removeprefix("Bearer ").strip()
            cookie = _cookie(headers.get("cookie", ""), COOKIE)
            from_query = (query.get("key") or [""])[0]
            if from_query and hmac.compare_digest(from_query.encode(), self.api_key.encode()):
                extra.append((b"set-cookie", f"{COOKIE}={self.api_key}; HttpOnly; SameSite=Strict; Path=/".encode()))
            elif not any(x and hmac.compare_digest(x.encode(), self.api_key.encode()) for x in (given, cookie)):
                await _plain(send, 401, "this view needs its API key: open /?key=KEY once, or send Authorization: Bearer KEY")
                return
        if scope["method"] not in ("GET", "HEAD"):
            token = headers.get("x-csrf-token", "")
            if not hmac.compare_digest(token.encode(), self.csrf_token.encode()):
                await _plain(send, 403, "missing or wrong X-CSRF-Token header; reload the page to get a fresh token")
                return
            origin = headers.get("origin")
            if origin and origin != "null" and _host_only(urlsplit(origin).netloc) not in self.allowed:
                await _plain(send, 403, f"cross-origin write from {origin!r} refused")
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS, *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        k, _, v = part.strip().partition("=")
        if k == name:
            return v
    return ""


async def _plain(send: Callable[[Message], Awaitable[None]], status: int, text: str) -> None:
    body = json.dumps({"error": text}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})
