"""Run the server: bind, serve with uvicorn, stop cleanly.

SIGTERM or Ctrl-C stops accepting connections, answers 503 to requests whose body is still arriving,
lets the generations in flight finish (for at most `shutdown_timeout` seconds, then they are
cancelled), closes the engine worker and returns, so the process exits 0 (uvicorn itself re-raises
the signal after shutting down, which would exit 143; `_Server` does not). Connections go through
`localjudge.http.protocol_class` (connection limit, header deadline; a 503 in the OpenAI shape past the
limit) and repeated log lines are throttled (`localjudge.http.throttle_logs`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

from ..engine.base import Engine, ModelIdentity
from ..errors import InputError
from ..http import busy_response, protocol_class, throttle_logs
from .app import ServeConfig, ServerState, create_app

BUSY = busy_response(
    {
        "error": {
            "message": "the server has too many open connections; retry in a second",
            "type": "server_error",
            "param": None,
            "code": "too_many_connections",
        }
    }
)


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (127.0.0.0/8, ::1 or localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one); `InputError` when it cannot be bound."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise InputError(f"--host {host!r} cannot be resolved ({e.strerror}); give an IP address") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as e:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port} ({e.strerror}); pick another --port (0: any free port)") from None
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def serve(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 8000,
    config: ServeConfig | None = None,
    identity: ModelIdentity | None = None,
    log_level: str = "warning",
) -> None:
    """Serve `engine` on host:port until SIGTERM/SIGINT; in-flight requests finish first. Binding beyond
    loopback requires `config.api_key` (`InputError` otherwise)."""
    import uvicorn

    config = config or ServeConfig()
    if not is_loopback(host) and not config.api_key:
        raise InputError(
            f"--host {host} would expose the judge beyond this machine; give --api-key KEY (or set LOCALJUDGE_API_KEY), "
            "or bind 127.0.0.1"
        )
    sock = bind(host, port)
    state, app = app_for(engine, config, identity, host)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    server = _Server(
        uvicorn.Config(
            app,
            log_level=log_level,
            lifespan="on",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=max(1, round(config.shutdown_timeout)),
            timeout_keep_alive=30,
            http=protocol_class(config.max_connections, config.header_timeout, BUSY, "localjudge.serve"),
        ),
        on_stop=lambda: state.stopping.set() if state.stopping is not None else None,
        banner=f"localjudge serve: {state.model_name} on http://{shown}:{bound[1]}/v1 (Ctrl-C or SIGTERM to stop)",
    )
    throttle_logs("localjudge.serve")
    server.run(sockets=[sock])


def app_for(
    engine: Engine, config: ServeConfig, identity: ModelIdentity | None = None, host: str = "127.0.0.1"
) -> tuple[ServerState, Any]:
    """The state and ASGI app that `serve` runs for `engine` on `host` (a non-loopback address bound answers to its
    own name too): the one construction the server and the in-process test app (tests/serve_support.py `serve_inprocess`) share."""
    if not is_loopback(host) and host not in config.allowed_hosts:  # the bound address answers to its own name
        config.allowed_hosts = (*config.allowed_hosts, host)
    state = ServerState(engine, config, identity)
    return state, create_app(state)


class _Server:
    """uvicorn's Server, announcing when it is up and exiting 0 on SIGTERM (made lazily: uvicorn is optional)."""

    def __new__(cls, config: Any, banner: str, on_stop: Any = None) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                old = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
                try:
                    yield
                finally:
                    for s, h in old.items():
                        signal.signal(s, h)

            async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
                if on_stop is not None:
                    on_stop()  # bodies still arriving are answered 503 instead of holding the shutdown
                await super().shutdown(sockets)

            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets)
                if self.started:
                    print(banner, file=sys.stderr, flush=True)

        return Server(config)
