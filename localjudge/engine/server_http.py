"""The HTTP of `server:` models: the target URL, when the API key may be sent, and one JSON request.

Standard library only (no openai package). A key goes over plain http only to a loopback host unless the user
allows it; redirects are never followed (urllib would send the Authorization header on to the new host); an
answer that is not JSON becomes an `{"error": {"message": ...}}` body with its first 200 bytes.
"""

from __future__ import annotations

import ipaddress
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .. import jsonio
from ..errors import InputError


def split_target(target: str | None) -> tuple[str, str | None]:
    """`http://host:port/v1#MODEL` → (base URL without a trailing slash, model or None)."""
    if not target:
        raise InputError("server: needs a URL: --model server:http://127.0.0.1:8000/v1#MODEL")
    url, _, model = target.partition("#")
    url = url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise InputError(f"server: {url!r} is not an http(s) URL; e.g. --model server:http://127.0.0.1:8000/v1#MODEL")
    return url, model or None


def api_key(given: str | None, allow_insecure_key: bool, url: str) -> str | None:
    """The key given for this backend (`given`, else $LOCALJUDGE_SERVER_API_KEY; never $OPENAI_API_KEY, which
    is meant for another service), or None. A key goes over plain http only to a loopback host, unless
    `allow_insecure_key`: anything else is refused before a request is sent."""
    key = given or os.environ.get("LOCALJUDGE_SERVER_API_KEY") or None
    if key and not allow_insecure_key and urllib.parse.urlsplit(url).scheme == "http" and not is_loopback(url):
        host = urllib.parse.urlsplit(url).hostname
        raise InputError(
            f"server: refusing to send the API key over plain http to {host!r} (anyone on the path can read it); "
            "use an https URL, or --option allow_insecure_key=true if the network is trusted"
        )
    return key


def is_loopback(url: str) -> bool:
    """Whether the URL's host is `localhost` (or under it) or a loopback address."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: urllib would send the Authorization header on to the new host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def http_json(
    method: str, url: str, key: str | None, body: dict[str, Any] | None, timeout: float
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, JSON body, headers); connection failures raise `urllib.error.URLError`/`OSError`."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with _OPENER.open(req, timeout=timeout) as r:
            raw, status, headers = r.read(), r.status, dict(r.headers)
    except urllib.error.HTTPError as e:
        raw, status, headers = e.read(), e.code, dict(e.headers or {})
    try:
        parsed = jsonio.loads(raw) if raw else {}
    except ValueError:
        parsed = {"error": {"message": raw[:200].decode("utf-8", "replace")}}
    return status, parsed if isinstance(parsed, dict) else {"data": parsed}, headers


def error_message(body: dict[str, Any], status: int) -> str:
    """The error message of an answer body (`error.message`, or `error` itself), else `HTTP <status>`."""
    err = body.get("error")
    msg = err.get("message") if isinstance(err, dict) else err
    return str(msg or f"HTTP {status}")
