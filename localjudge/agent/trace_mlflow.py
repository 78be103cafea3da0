"""Reading an MLflow trace export (`Trace.to_json()`): `{"info": {...}, "data": {"spans": [...]}}`,
spans in the v3/v4 dict schema (`span_id`, `parent_span_id`, `start_time_unix_nano`, `status.code`) or
the v2 one (`context.span_id`, `parent_id`, `start_time`, `status_code`); attribute values are
JSON-encoded strings."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .trace_fields import (
    fill_previews,
    first_of,
    id_text,
    in_execution_order,
    json_or_raw,
    opt_ns,
    parse_duration_ms,
    span_status,
    time_ns,
)
from .trace_model import TYPE_KEYS, Span, SpanEvent, Trace


def parse_mlflow(obj: dict) -> Trace:
    """A `Trace` from an MLflow trace export dict; `InputError` names what is missing."""
    info, data = obj.get("info"), obj.get("data")
    missing = [k for k, v in (("info", info), ("data", data)) if not isinstance(v, dict)]
    if isinstance(data, dict) and not isinstance(data.get("spans"), list):
        missing.append("data.spans")
    if missing or not isinstance(info, dict) or not isinstance(data, dict):
        raise InputError(
            f"MLflow trace export is missing {', '.join(repr(m) for m in missing)}; "
            "export it with mlflow `trace.to_json()` (see docs/traces.md)"
        )
    spans = [_mlflow_span(s, i) for i, s in enumerate(data["spans"])]
    if not spans:
        raise InputError("MLflow trace export has an empty 'data.spans' list; there is nothing to judge")
    trace_id = info.get("trace_id") or info.get("request_id") or _attr_trace_id(spans)
    if not trace_id:
        raise InputError("MLflow trace export is missing 'info.trace_id' (or 'info.request_id'); add the trace id")
    start_ns = None
    if info.get("request_time") is not None:
        start_ns = time_ns(info["request_time"], "info.request_time")
    elif info.get("timestamp_ms") is not None:
        start_ns = int(info["timestamp_ms"]) * 1_000_000
    duration = parse_duration_ms(info.get("execution_duration", info.get("execution_time_ms")))
    metadata = info.get("trace_metadata") or info.get("request_metadata") or {}
    tags = info.get("tags") or {}
    if isinstance(tags, list):  # proto-style [{"key", "value"}]
        tags = {t.get("key"): t.get("value") for t in tags if isinstance(t, dict)}
    trace = Trace(
        trace_id=str(trace_id),
        source_format="mlflow",
        spans=in_execution_order(spans),
        state=info.get("state") or info.get("status"),
        start_ns=start_ns,
        duration_ms=duration,
        request_preview=info.get("request_preview") or metadata.get("mlflow.traceInputs"),
        response_preview=info.get("response_preview") or metadata.get("mlflow.traceOutputs"),
        metadata=dict(metadata),
        tags=dict(tags),
    )
    return fill_previews(trace)


def _mlflow_span(s: Any, i: int) -> Span:
    where = f"MLflow span #{i} in 'data.spans'"
    if not isinstance(s, dict):
        raise InputError(f"{where} is a {type(s).__name__}, not an object")
    v2 = "context" in s
    span_id = (s.get("context") or {}).get("span_id") if v2 else s.get("span_id")
    missing = [k for k, v in ((("context.span_id" if v2 else "span_id"), span_id), ("name", s.get("name"))) if not v]
    if missing:
        raise InputError(f"{where} is missing {', '.join(repr(m) for m in missing)}; each span needs an id and a name")
    attrs = {str(k): json_or_raw(v) for k, v in (s.get("attributes") or {}).items()}
    if v2:
        parent = s.get("parent_id")
        start, end = s.get("start_time"), s.get("end_time")
        status, message = s.get("status_code"), s.get("status_message")
    else:
        parent = s.get("parent_span_id")
        start, end = s.get("start_time_unix_nano"), s.get("end_time_unix_nano")
        st = s.get("status") or {}
        status, message = (st.get("code"), st.get("message")) if isinstance(st, dict) else (st, None)
    events = [
        SpanEvent(
            name=str(e.get("name", "")),
            time_ns=opt_ns(e.get("time_unix_nano", e.get("timestamp"))),
            attributes=dict(e.get("attributes") or {}),
        )
        for e in s.get("events") or []
        if isinstance(e, dict)
    ]
    return Span(
        span_id=id_text(span_id),
        parent_id=id_text(parent) if parent else None,
        name=str(s["name"]),
        span_type=first_of(attrs, TYPE_KEYS),
        start_ns=opt_ns(start),
        end_ns=opt_ns(end),
        status=span_status(status),
        status_message=message or None,
        inputs=attrs.get("mlflow.spanInputs"),
        outputs=attrs.get("mlflow.spanOutputs"),
        attributes=attrs,
        events=events,
    )


def _attr_trace_id(spans: list[Span]) -> str | None:
    for s in spans:
        if s.attributes.get("mlflow.traceRequestId"):
            return str(s.attributes["mlflow.traceRequestId"])
    return None
