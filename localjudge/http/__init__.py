"""What a client can make an HTTP server hold, shared by `localjudge serve` and `localjudge view`: a limit on
open connections, a deadline for request headers, a size and time limit on a request body, a bound on JSON
nesting, and a log that says a repeated thing once per interval.

uvicorn's HTTP protocol holds a connection whose headers never finish for ever, and counts no connection
before its headers are complete. `protocol_class` subclasses it (lazily: uvicorn is optional) so that a
connection beyond `max_connections` is answered 503 at once and closed, and one that has not sent complete
request headers within `header_timeout` seconds (from its opening, or from the first byte of its next
request) is closed. Both happen before any route or API key check runs.

When the process runs out of file descriptors, asyncio logs `socket.accept() out of system resource` with a
traceback for every pending accept (up to the listen backlog, once a second: tens of megabytes a minute);
`throttle_logs` puts one `Throttle` on that logger and uvicorn's, so each such message is logged once per
interval with a count of the ones held back.

The error bodies are each server's own (serve: OpenAI-shaped, view: `{"error": ...}`): callers pass the 503
body, and map `BodyError` to their shape. This package imports nothing of localjudge.
"""

from .bodies import BodyError, ClientGone, json_depth, loads_bounded, loads_strict, read_body
from .connections import LOGGERS, Throttle, busy_response, protocol_class, throttle_logs

__all__ = [
    "BodyError",
    "ClientGone",
    "LOGGERS",
    "Throttle",
    "busy_response",
    "json_depth",
    "loads_bounded",
    "loads_strict",
    "protocol_class",
    "read_body",
    "throttle_logs",
]
