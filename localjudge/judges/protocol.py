"""The judge contract: what the runner, the API, the server and the adapters rely on.

`JudgeProtocol` is implemented by `Judge` (catalog and user judges), `pairwise.BothOrders` and the
trace judge (`agent.TraceJudge`); anything else that implements it can be run too. `SequentialJudge`
gives the two methods a judge that calls the engine itself, one row at a time, can take as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..engine.base import DecodeOptions, Engine, Message, canonical_hash
from ..formats import OutputFormat
from ..store.results import JudgeResult
from .spec import Variable

OnResult = Callable[[int, "JudgeResult | Exception"], None]


class Prepared(dict[str, Any]):
    """One row's variables as given (the mapping itself), prepared by a judge once: its `fingerprint` (the cache
    key's prompt hash), its `requests` (the messages of every call known up front), and the `owner` judge's own work
    on them (`state`: for a `Judge`, the checked values and every prompt rendered). A runner hands it back to the
    judge's `submit_many` as the row, so that the owner's calls start from that work instead of redoing it; any
    other judge reads it as the plain variables it is."""

    def __init__(
        self,
        variables: Mapping[str, Any],
        fingerprint: str,
        requests: list[list[Message]],
        owner: object = None,
        state: Any = None,
    ):
        super().__init__(variables)
        self.fingerprint, self.requests, self.owner, self.state = fingerprint, requests, owner, state

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (to a Ray worker) as the plain variables: the owner's work stays in the process that did it."""
        return (dict, (dict(self),))


@runtime_checkable
class JudgeProtocol(Protocol):
    """A judge: its identity, its variables, its output formats, and how it evaluates rows."""

    @property
    def name(self) -> str:
        """The judge's name (one result per row and judge name)."""

    @property
    def version(self) -> str:
        """A hash of everything in the judge that changes its outputs (part of every cache key)."""

    @property
    def pass_threshold(self) -> float:
        """passed = score >= pass_threshold."""

    @property
    def variables(self) -> Sequence[Variable]:
        """Every variable the judge takes, with aliases and whether it is required or may be empty."""

    @property
    def required_variables(self) -> list[str]:
        """Names of the variables that must have a value."""

    @property
    def optional_variables(self) -> list[str]:
        """Names of the variables that may be left out."""

    @property
    def output_formats(self) -> list[OutputFormat]:
        """The output formats known before any output (a two-stage judge's second depends on the first)."""

    def render(self, **variables: Any) -> list[Message]:
        """The messages of the first call (bad input raises `InputError`)."""

    def fingerprint(self, **variables: Any) -> str:
        """A hash of everything that shapes this row's prompts (part of the cache key)."""

    def prepare(self, variables: Mapping[str, Any]) -> Prepared:
        """The row with its fingerprint and first requests, computed once (bad input raises `InputError`); given back
        to `submit_many` as the row, the judge may reuse what it computed."""

    def evaluate(self, engine: Engine, options: DecodeOptions | None = None, **variables: Any) -> JudgeResult:
        """Judge one row; bad input raises, an output that cannot be used is an unscored result."""

    def submit_many(
        self,
        engine: Engine,
        rows: Sequence[Mapping[str, Any]],
        options: DecodeOptions | None,
        on_result: OnResult,
        model_id: str = "",
    ) -> None:
        """Queue every row's calls on `engine`; `on_result(i, result or exception)` once each row is done
        (inside `engine.drain()`, or at once for a judge that runs its rows itself)."""


class SequentialJudge:
    """Defaults for a judge that calls the engine itself, one row at a time (`evaluate`): its rows run
    in `submit_many` straight away, its fingerprint is the hash of `render`. Subclasses provide
    name, version, variables, output_formats, render and evaluate."""

    required_variables: list[str]
    optional_variables: list[str]

    @property
    def variables(self) -> list[Variable]:
        """Plain variables from `required_variables` and `optional_variables` (no aliases)."""
        return [Variable(name=n) for n in self.required_variables] + [
            Variable(name=n, required=False) for n in self.optional_variables
        ]

    def fingerprint(self, **variables: Any) -> str:
        """The hash of the rendered messages."""
        return self.prepare(variables).fingerprint

    def prepare(self, variables: Mapping[str, Any]) -> Prepared:
        """The row with the hash of its rendered messages (rendered once)."""
        messages = self.render(**variables)
        return Prepared(variables, canonical_hash([m.model_dump() for m in messages]), [messages])

    def render(self, **variables: Any) -> list[Message]:
        """The messages of the first call (subclasses implement it)."""
        raise NotImplementedError

    def evaluate(self, engine: Engine, options: DecodeOptions | None = None, **variables: Any) -> JudgeResult:
        """Judge one row (subclasses implement it)."""
        raise NotImplementedError

    def submit_many(
        self,
        engine: Engine,
        rows: Sequence[Mapping[str, Any]],
        options: DecodeOptions | None,
        on_result: OnResult,
        model_id: str = "",
    ) -> None:
        """Evaluate each row now, in order, handing each result (or the exception it raised) to `on_result`."""
        for i, row in enumerate(rows):
            try:
                result: JudgeResult | Exception = self.evaluate(engine, options, **row)
            except Exception as e:
                result = e
            on_result(i, result)
