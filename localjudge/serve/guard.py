"""What a browser may make the server do: an ASGI layer in front of the app that checks the `Host`
header, the `Origin` and the `Content-Type` before any route (or API key check) runs.

  * `Host` must be one of the allowed names (loopback names, the bound address and `--allowed-host`;
    `*` allows any): a DNS-rebinding page reaches the server under its own name and is refused (400).
  * A request carrying an `Origin` other than the server's own or a `--cors-origin` is refused (403):
    a web page cannot drive the server, even with the content types that need no CORS preflight.
    Without `--cors-origin` no CORS header is ever sent; with it, those origins get
    `Access-Control-Allow-Origin` and their preflight (`OPTIONS`) is answered.
  * A POST must be `application/json` (415 otherwise): form and `text/plain` posts are refused (on
    Ollama's `/api/` routes a POST without any Content-Type, or with `application/octet-stream`, is read as JSON,
    as Ollama does).

Every refusal is an OpenAI-shaped JSON error (on Ollama's `/api/` routes, Ollama's `{"error": "..."}`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def host_name(host: str) -> str:
    """The name part of a `Host` header value (no port; IPv6 keeps its brackets off), lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware: Host allow-list, Origin check (CORS only for `cors_origins`), JSON-only POSTs."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] = (), cors_origins: Iterable[str] = ()):
        self.app = app
        hosts = {host_name(h) for h in (*LOOPBACK_NAMES, *allowed_hosts) if h}
        self.any_host = "*" in hosts
        self.hosts = hosts
        self.origins = {o.rstrip("/") for o in cors_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        ollama = str(scope.get("path", "")).startswith("/api/")
        host = headers.get("host", "")
        name = host_name(host)
        if not self.any_host and name not in self.hosts and not name.startswith("127."):
            await _refuse(
                send,
                400,
                f"the Host header {host[:80]!r} is not one this server answers to; start it with --allowed-host "
                f"{name[:80] or 'NAME'} to allow it",
                "host_not_allowed",
                ollama,
            )
            return
        origin = headers.get("origin")
        allowed = origin is not None and origin.rstrip("/") in self.origins
        if origin is not None and not allowed and origin.rstrip("/") not in (f"http://{host}", f"https://{host}"):
            await _refuse(
                send,
                403,
                f"requests from the web origin {origin[:80]!r} are refused; start the server with --cors-origin "
                f"{origin[:80]} to allow that page",
                "origin_not_allowed",
                ollama,
            )
            return
        if allowed and scope["method"] == "OPTIONS":  # a CORS preflight from an allowed origin
            await send({"type": "http.response.start", "status": 204, "headers": _cors(origin or "", preflight=True)})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["method"] == "POST":
            ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            # Ollama's clients may send no Content-Type (LiteLLM's ollama_chat) or application/octet-stream (its
            # async calls), as Ollama accepts; a browser cannot send the first without an Origin (refused above), and
            # the second is not a CORS-safelisted type, so a cross-origin page needs a preflight, granted only to
            # allowed origins
            if ctype != "application/json" and not (ollama and ctype in ("", "application/octet-stream")):
                await _refuse(
                    send,
                    415,
                    f"Content-Type {ctype[:60] or '(none)'!r} is not accepted; send the body as JSON with "
                    "'Content-Type: application/json'",
                    "unsupported_media_type",
                    ollama,
                )
                return
        if not allowed:
            await self.app(scope, receive, send)
            return

        async def send_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_cors(origin or "")]}
            await send(message)

        await self.app(scope, receive, send_cors)


def _cors(origin: str, preflight: bool = False) -> list[tuple[bytes, bytes]]:
    out = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
    if preflight:
        out += [
            (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
            (b"access-control-allow-headers", b"authorization, content-type"),
            (b"access-control-max-age", b"600"),
        ]
    return out


async def _refuse(send: Send, status: int, message: str, code: str, ollama: bool = False) -> None:
    if ollama:  # Ollama's routes answer errors in Ollama's shape
        body = json.dumps({"error": message})
    else:
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})
