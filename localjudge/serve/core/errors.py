"""OpenAI-shaped errors: `{"error": {"message", "type", "param", "code"}}` with the HTTP status they go with.

Every bad input becomes an `APIError` with a 4xx status and a one-line message naming the parameter
and what to do; `from_exception` maps localjudge's own exceptions (bad schema, prompt too long, chat
template, full queue) the same way. Only a real bug is a 500 (logged with its traceback).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ...engine.base import GenerationCancelled
from ...engine.worker import WorkerBusy, WorkerClosed
from ...errors import ChatTemplateError, ConstraintError, InputError, PromptTooLongError
from .wire import ErrorBody, ErrorDetail


class APIError(Exception):
    """An error answer: HTTP status, message, OpenAI error type, the parameter at fault, a code."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers or {}

    def wire(self) -> ErrorBody:
        """The answer: `{"error": {...}}`."""
        return ErrorBody(error=ErrorDetail(message=self.message, type=self.type, param=self.param, code=self.code))

    def body(self) -> dict[str, Any]:
        """The JSON body of `wire()`."""
        return self.wire().body()


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    """A 400 invalid_request_error."""
    return APIError(400, message, param=param, code=code)


# the names pydantic gives a union's branches in an error's location (`input.str`, `think.bool`): not the client's
_BRANCHES = frozenset({"str", "int", "float", "bool", "none", "dict", "list", "bytes"})


def _client_path(loc: tuple[Any, ...]) -> list[Any]:
    """An error's location as the client spelled it: list indexes and field names, without union branch names
    (a type name like `str`, `list[InputItem]` or `constrained-str`, or a model class's)."""
    return [x for x in loc if isinstance(x, int) or not (x in _BRANCHES or "[" in x or "-" in x or x[:1].isupper())]


def invalid_body(e: ValidationError) -> APIError:
    """The 400 for a body its model refuses: one line naming the client's field (`input[0]`, not `input.str`), from
    the error that reaches deepest into the body (a union answers once per branch; the deepest is the one that
    matched the value's shape)."""
    errs = e.errors()
    err = max(errs, key=lambda x: len(_client_path(tuple(x.get("loc", ())))))  # the first of the deepest
    path = _client_path(tuple(err.get("loc", ())))
    loc = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in path).lstrip(".")
    return bad_request(f"{loc or 'body'}: {err.get('msg', 'invalid value')}", param=loc or None)


def from_exception(e: BaseException) -> APIError | None:
    """The API error for an exception raised while serving a request; None when it is a bug (a 500)."""
    if isinstance(e, APIError):
        return e
    if isinstance(e, PromptTooLongError):
        return APIError(400, str(e), param="messages", code="context_length_exceeded")
    if isinstance(e, ChatTemplateError):
        return bad_request(str(e), param="messages")
    if isinstance(e, (InputError, ConstraintError)):
        return bad_request(str(e), param="response_format" if "schema" in str(e) else None)
    if isinstance(e, WorkerBusy):
        return APIError(
            429,
            f"the server is busy ({e}); retry after a second",
            type="rate_limit_error",
            code="rate_limit_exceeded",
            headers={"Retry-After": "1"},
        )
    if isinstance(e, WorkerClosed):
        return APIError(503, "the server is shutting down; retry against another instance", type="server_error")
    if isinstance(e, GenerationCancelled):
        return APIError(499, "the request was cancelled", code="cancelled")
    return None
