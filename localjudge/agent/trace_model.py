"""The trace model both readers produce: a `Trace` of `Span`s (with their `SpanEvent`s), and the
attribute keys that hold a span's inputs, outputs and type in the instrumentation conventions read."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

SpanStatus = Literal["OK", "ERROR", "UNSET"]

INPUT_KEYS = ("mlflow.spanInputs", "input.value", "traceloop.entity.input", "gen_ai.prompt", "input")
OUTPUT_KEYS = ("mlflow.spanOutputs", "output.value", "traceloop.entity.output", "gen_ai.completion", "output")
TYPE_KEYS = ("mlflow.spanType", "openinference.span.kind", "traceloop.span.kind", "gen_ai.operation.name")
_HIDDEN_ATTRS = set(INPUT_KEYS) | set(TYPE_KEYS) | {"mlflow.traceRequestId"}


class SpanEvent(BaseModel):
    """An event recorded on a span (e.g. `exception`): name, time in ns since the epoch, attributes."""

    name: str
    time_ns: int | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)


class Span(BaseModel):
    """One step of the agent: what went in, what came out, how long, whether it failed."""

    span_id: str
    parent_id: str | None = None
    name: str
    span_type: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    status: SpanStatus = "UNSET"
    status_message: str | None = None
    inputs: Any = None
    outputs: Any = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: list[SpanEvent] = Field(default_factory=list)

    @property
    def duration_ms(self) -> float | None:
        """End minus start in milliseconds, or None when either timestamp is missing."""
        if self.start_ns is None or self.end_ns is None:
            return None
        return (self.end_ns - self.start_ns) / 1e6

    def error_text(self) -> str | None:
        """The status message or the first exception event, when the span failed."""
        for ev in self.events:
            if ev.name == "exception":
                kind = ev.attributes.get("exception.type", "")
                msg = ev.attributes.get("exception.message", "")
                return f"{kind}: {msg}".strip(": ") or self.status_message
        return self.status_message or None

    def visible_attributes(self) -> dict[str, Any]:
        """Attributes other than those already shown as inputs, outputs or type."""
        return {k: v for k, v in self.attributes.items() if k not in _HIDDEN_ATTRS and k not in OUTPUT_KEYS}


class Trace(BaseModel):
    """A whole trace: metadata plus its spans in execution order (parents before children)."""

    trace_id: str
    source_format: Literal["mlflow", "otel"]
    spans: list[Span]
    state: str | None = None
    start_ns: int | None = None
    duration_ms: float | None = None
    request_preview: str | None = None
    response_preview: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: dict[str, Any] = Field(default_factory=dict)

    def find_span(self, span_id: str) -> Span | None:
        """The span with this id; lenient about case, `0x` prefixes, quotes and spaces."""
        want = _norm_id(span_id)
        for s in self.spans:
            if _norm_id(s.span_id) == want:
                return s
        return None

    def roots(self) -> list[Span]:
        """The spans without a parent, or whose parent is not in the trace."""
        ids = {s.span_id for s in self.spans}
        return [s for s in self.spans if not s.parent_id or s.parent_id not in ids]

    def type_counts(self) -> Counter:
        """How many spans have each span type (`UNKNOWN` for spans without one)."""
        return Counter(s.span_type or "UNKNOWN" for s in self.spans)

    def errors(self) -> list[Span]:
        """The spans whose status is ERROR, in trace order."""
        return [s for s in self.spans if s.status == "ERROR"]


def _norm_id(x: str) -> str:
    x = str(x).strip().strip("\"'`").strip().lower()
    return x[2:] if x.startswith("0x") else x
