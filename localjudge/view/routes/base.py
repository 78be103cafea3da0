"""How a view route answers a failure: `{"error": "..."}` with 400 for bad input, 404 for an unknown run
or row, 503 for a store that cannot be read now; never a 500."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...errors import InputError, LocalJudgeError


def err(status: int, text: str) -> JSONResponse:
    """An error answer."""
    return JSONResponse({"error": text}, status_code=status)


def first_line(e: BaseException) -> str:
    """An exception's first line (at most 200 characters), or its type's name."""
    return (str(e).splitlines()[0] if str(e) else type(e).__name__)[:200]


def handle(fn: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """`fn` (blocking: it reads the store) as an endpoint run in the thread pool, its failures as error answers."""

    async def endpoint(request: Request) -> Response:
        try:
            return await run_in_threadpool(fn, request)
        except KeyError as e:
            return err(404, f"no such run or row: {e.args[0] if e.args else ''}; open / for the list of runs")
        except OverflowError:
            return err(400, "a number in the request is too large (row and page numbers fit in 64 bits)")
        except (InputError, ValueError) as e:
            return err(400, str(e).splitlines()[0] if str(e) else "bad request")
        except LocalJudgeError as e:
            return err(400, str(e))
        except sqlite3.Error as e:  # a store damaged or replaced after the view opened it
            return err(503, f"the run's store cannot be read now ({first_line(e)}); see / for the runs")

    return endpoint
