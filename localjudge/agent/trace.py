"""Agent execution traces: one pydantic model read from two JSON shapes.

* **MLflow trace export** (`Trace.to_json()`): `{"info": {...}, "data": {"spans": [...]}}`. Both span
  dict schemas are read: v3/v4 (`span_id`, `parent_span_id`, `start_time_unix_nano`, `status.code`) and
  v2 (`context.span_id`, `parent_id`, `start_time`, `status_code`). Attribute values are JSON-encoded
  strings; inputs, outputs and the span type live in `mlflow.spanInputs`, `mlflow.spanOutputs`,
  `mlflow.spanType`.
* **OpenTelemetry span JSON**: OTLP/JSON (`resourceSpans` → `scopeSpans` → `spans`, camelCase or
  snake_case, attributes as `[{"key", "value": {"stringValue": ...}}]`), `{"spans": [...]}`, a bare
  list of spans, or JSON Lines of spans. Inputs/outputs are read from MLflow, OpenInference
  (`input.value`), OpenLLMetry (`traceloop.entity.input`) or GenAI (`gen_ai.prompt`) attributes.

Anything else is an `InputError` naming the fields that are missing (docs/traces.md shows both).

This module loads a trace and tells the two formats apart; the model is in `trace_model`, the readers
in `trace_mlflow` and `trace_otel`, the fields they share in `trace_fields`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import JSONBoundsError, check_value, loads
from .trace_mlflow import parse_mlflow
from .trace_model import Span, SpanEvent, SpanStatus, Trace
from .trace_otel import parse_otel

__all__ = ["Span", "SpanEvent", "SpanStatus", "Trace", "load_trace", "parse_trace"]


def load_trace(source: Any) -> Trace:
    """A `Trace` from a Trace, a dict/list already parsed, a JSON string, or a path to a JSON file."""
    if isinstance(source, Trace):
        return source
    if isinstance(source, (dict, list)):
        return parse_trace(source)
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        return parse_trace(_loads(source, "trace JSON"))
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise InputError(
                f"trace file {str(path)!r} not found; pass a path to an MLflow trace export or OpenTelemetry span JSON"
            )
        return parse_trace(_loads(path.read_text(encoding="utf-8"), f"trace file {str(path)!r}"))
    raise InputError(f"cannot read a trace from a {type(source).__name__}; pass a path, a JSON string or a parsed dict")


def _loads(text: str, what: str) -> Any:
    try:
        return loads(text)
    except JSONBoundsError as e:
        if e.parser is None:  # nested too deep
            raise InputError(f"{what}: {e}; fix the file") from None
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1:  # JSON Lines: one span per line
            try:
                return [loads(ln) for ln in lines]
            except JSONBoundsError:
                pass
        p = e.parser
        raise InputError(f"{what} is not valid JSON (line {p.lineno}, column {p.colno}: {p.msg}); fix the file") from None


def parse_trace(obj: Any) -> Trace:
    """Detect the format of parsed JSON and read it; `InputError` names what is missing (or where it nests more
    than 100 levels deep: a value given from Python is bounded as a file's JSON is, before any walk over it)."""
    try:
        check_value(obj)
    except JSONBoundsError as e:
        raise InputError(f"trace: {e}") from None
    if isinstance(obj, dict) and isinstance(obj.get("trace"), dict) and "info" in obj["trace"]:
        obj = obj["trace"]
    if isinstance(obj, dict) and ("info" in obj or "data" in obj):
        return parse_mlflow(obj)
    if isinstance(obj, dict) and any(k in obj for k in ("resourceSpans", "resource_spans", "spans")):
        return parse_otel(obj)
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        if all(("info" in x and "data" in x) for x in obj[:1]):
            raise InputError("this file holds several MLflow traces; pass one trace per file (or one per row with `run`)")
        return parse_otel({"spans": obj})
    keys = sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__
    raise InputError(
        "trace is neither an MLflow trace export (missing 'info' and 'data.spans') nor OpenTelemetry span JSON "
        f"(missing 'resourceSpans', 'spans' or a list of spans with 'spanId' and 'name'); found {keys}; see docs/traces.md"
    )
