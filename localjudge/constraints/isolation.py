"""Where llguidance reads a client's schema or grammar: in this process, or in a child process that a crash
cannot take the server down with.

llguidance is native code: a grammar that overflows its stack ends the process with a segfault, nothing to
catch (issue 43: a `$ref` chain under a keyword no bound walked). The bounds in `llg_bounds` refuse every
such input known; isolation is the second line, for the ones not known yet. A server sets an `Isolator` for
the work it does on a client's behalf (`using`); `formats.llg_schema.grammar` and `lark_grammar` then ask it
for the validated grammar instead of calling llguidance here. The serve implementation
(`serve.compile_guard.CompileGuard`) validates and compiles in a child process and answers with the child's
result, or with a refusal naming the crash or the limit. Nothing is isolated unless a caller asks: a judge's
own formats and a user's files on the command line compile in process, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class Isolator(Protocol):
    """Turns a client's JSON schema (`kind` "schema") or Lark grammar ("lark") into llguidance's validated grammar
    document out of this process, raising `error` with the message the in-process path would give, or one
    naming the crash or the limit that stopped the child."""

    def grammar(self, kind: str, value: Any, error: type[Exception]) -> str:
        """The validated grammar document of `value`."""
        ...


_CURRENT: ContextVar[Isolator | None] = ContextVar("localjudge_isolator", default=None)


def current() -> Isolator | None:
    """The isolator set for this context (thread or task), or None: compile in process."""
    return _CURRENT.get()


@contextmanager
def using(isolator: Isolator | None) -> Iterator[None]:
    """Within the block, client schemas and grammars go through `isolator` (None: in process)."""
    token = _CURRENT.set(isolator)
    try:
        yield
    finally:
        _CURRENT.reset(token)
