"""A loopback stand-in for the Hugging Face Hub, for `models pull` tests (never the network).

It serves `/{owner}/{repo}/resolve/{revision}/{path}` the way huggingface_hub's `hf_hub_download`
expects (read from huggingface_hub 1.16's file_download.py): HEAD answers with `X-Repo-Commit`,
`ETag` / `X-Linked-Etag` (the sha256, as the hub does for LFS files), `X-Linked-Size` and
`Content-Length`; GET streams the bytes and honours `Range: bytes=N-` with 206 and `Content-Range`
(how an interrupted transfer resumes). With `xet=True` it also advertises the xet protocol (`X-Xet-Hash`,
`X-Xet-Refresh-Route`, whose route it does not serve), to check that pulls stay on plain HTTP. Unknown repos and files get 404 with the hub's `X-Error-Code` (RepoNotFound, EntryNotFound).
Every request is logged (method, path, Range, Authorization, bytes sent) so tests can measure how
much was sent again after an interruption. `throttle` (bytes/s) slows transfers down so a test can
kill the client midway.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class HubFile:
    """One served file: its path on disk, its sha256 and size, and optionally a wrong advertised digest."""

    def __init__(self, path: Path, advertised_sha256: str | None = None):
        self.path = Path(path)
        self.size = self.path.stat().st_size
        h = hashlib.sha256()
        with open(self.path, "rb") as f:
            while block := f.read(1 << 22):
                h.update(block)
        self.sha256 = h.hexdigest()
        self.advertised = advertised_sha256 or self.sha256


class FakeHub:
    """The server: `files[(repo, filename)] = HubFile`; `url` for HF_ENDPOINT; `log` of requests."""

    def __init__(self, xet: bool = False) -> None:
        self.xet = xet  # advertise the xet protocol (X-Xet-Hash, X-Xet-Refresh-Route) as the real hub does
        self.files: dict[tuple[str, str], HubFile] = {}
        self.log: list[dict[str, Any]] = []
        self.throttle: float | None = None  # bytes per second
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _lookup(self) -> tuple[HubFile | None, str, str]:
                m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", self.path.split("?")[0])
                if not m:
                    return None, "", ""
                repo, _rev, filename = m.groups()
                return hub.files.get((repo, filename)), repo, filename

            def _not_found(self, repo: str) -> None:
                known = {r for r, _ in hub.files}
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound" if repo in known else "RepoNotFound")
                if repo in known:
                    self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _headers(self, f: HubFile, status: int, start: int) -> None:
                self.send_response(status)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{f.advertised}"')
                self.send_header("X-Linked-Etag", f'"{f.advertised}"')
                self.send_header("X-Linked-Size", str(f.size))
                self.send_header("Accept-Ranges", "bytes")
                if hub.xet:
                    self.send_header("X-Xet-Hash", f.sha256)
                    self.send_header("X-Xet-Refresh-Route", "/api/models/xet-read-token")  # never served: 404 if tried
                self.send_header("Content-Length", str(f.size - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{f.size - 1}/{f.size}")
                self.end_headers()

            def _record(self, **kw: Any) -> dict[str, Any]:
                rec = {
                    "method": self.command,
                    "path": self.path,
                    "range": self.headers.get("Range"),
                    "authorization": self.headers.get("Authorization"),
                    "sent": 0,
                    **kw,
                }
                with hub.lock:
                    hub.log.append(rec)
                return rec

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
                f, repo, _ = self._lookup()
                self._record()
                if f is None:
                    self._not_found(repo)
                    return
                self._headers(f, 200, 0)

            def do_GET(self) -> None:  # noqa: N802
                f, repo, _ = self._lookup()
                rec = self._record()
                if f is None:
                    self._not_found(repo)
                    return
                start = 0
                m = re.match(r"bytes=(\d+)-$", self.headers.get("Range") or "")
                if m:
                    start = int(m.group(1))
                self._headers(f, 206 if start else 200, start)
                chunk = 1 << 16
                try:
                    with open(f.path, "rb") as fh:
                        fh.seek(start)
                        while block := fh.read(chunk):
                            self.wfile.write(block)
                            rec["sent"] += len(block)
                            if hub.throttle:
                                time.sleep(len(block) / hub.throttle)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL to put in HF_ENDPOINT."""
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, repo: str, filename: str, path: Path, advertised_sha256: str | None = None) -> HubFile:
        """Serve `path` as `repo/filename`."""
        f = HubFile(path, advertised_sha256)
        self.files[(repo, filename)] = f
        return f

    def sent(self, method: str = "GET") -> int:
        """Bytes sent in the bodies of all requests of `method` so far."""
        with self.lock:
            return sum(r["sent"] for r in self.log if r["method"] == method)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
