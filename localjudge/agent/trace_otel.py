"""Reading OpenTelemetry span JSON: OTLP/JSON (`resourceSpans` → `scopeSpans` → `spans`, camelCase or
snake_case, attributes as `[{"key", "value": {"stringValue": ...}}]`), `{"spans": [...]}` or a list of
spans; inputs and outputs from MLflow, OpenInference, OpenLLMetry or GenAI attributes."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..jsonio import JSONBoundsError, check_value
from .trace_fields import fill_previews, first_of, id_text, in_execution_order, json_or_raw, opt_ns, span_status
from .trace_model import INPUT_KEYS, OUTPUT_KEYS, TYPE_KEYS, Span, SpanEvent, Trace


def parse_otel(obj: dict) -> Trace:
    """A `Trace` from OpenTelemetry spans (OTLP/JSON or `{"spans": [...]}`); `InputError` names what is missing,
    or where `obj` nests more than 100 levels deep (checked before any walk: `_any_value` recurses)."""
    try:
        check_value(obj)
    except JSONBoundsError as e:
        raise InputError(f"OpenTelemetry trace: {e}") from None
    raw: list[dict] = []
    resource: dict[str, Any] = {}
    resource_spans = obj.get("resourceSpans", obj.get("resource_spans"))
    if resource_spans is not None:
        for rs in resource_spans or []:
            resource.update(_otel_attrs((rs.get("resource") or {}).get("attributes")))
            for ss in rs.get("scopeSpans", rs.get("scope_spans", rs.get("instrumentationLibrarySpans", []))) or []:
                raw.extend(ss.get("spans") or [])
    else:
        raw = list(obj.get("spans") or [])
    if not raw:
        raise InputError("OpenTelemetry trace has no spans (expected 'resourceSpans[].scopeSpans[].spans[]' or 'spans[]')")
    spans = [_otel_span(s, i) for i, s in enumerate(raw)]
    first: dict[str, int] = {}
    for i, s in enumerate(spans):  # one id, two spans: which a parent id, or "the last model call", means is unknown
        j = first.setdefault(s.span_id, i)
        if j != i:
            raise InputError(
                f"OpenTelemetry span #{i} has span id {s.span_id!r}, as span #{j} has; each span of a trace needs its own id"
            )
    trace_ids = [t for t in (_get(s, "traceId", "trace_id") or (s.get("context") or {}).get("trace_id") for s in raw) if t]
    trace_id = obj.get("trace_id") or obj.get("traceId") or (trace_ids[0] if trace_ids else None)
    if not trace_id:
        raise InputError("OpenTelemetry spans are missing 'traceId' (or 'trace_id'); every span needs the id of its trace")
    starts = [s.start_ns for s in spans if s.start_ns is not None]
    ends = [s.end_ns for s in spans if s.end_ns is not None]
    roots_err = any(s.status == "ERROR" for s in spans if not s.parent_id)
    trace = Trace(
        trace_id=id_text(trace_id),
        source_format="otel",
        spans=in_execution_order(spans),
        state="ERROR" if roots_err else "OK",
        start_ns=min(starts) if starts else None,
        duration_ms=(max(ends) - min(starts)) / 1e6 if starts and ends else None,
        metadata={**resource, **dict(obj.get("metadata") or {})},
        tags=dict(obj.get("tags") or {}),
    )
    return fill_previews(trace)


def _otel_span(s: Any, i: int) -> Span:
    where = f"OpenTelemetry span #{i}"
    if not isinstance(s, dict):
        raise InputError(f"{where} is a {type(s).__name__}, not an object")
    ctx: dict[str, Any] = s["context"] if isinstance(s.get("context"), dict) else {}
    span_id = _get(s, "spanId", "span_id") or ctx.get("span_id")
    missing = [k for k, v in (("spanId", span_id), ("name", s.get("name"))) if not v]
    if missing:
        raise InputError(
            f"{where} is missing {', '.join(repr(m) for m in missing)} (or snake_case 'span_id'); "
            "each span needs an id and a name"
        )
    attrs = _otel_attrs(s.get("attributes"))
    parent = _get(s, "parentSpanId", "parent_span_id") or s.get("parent_id")
    st = s.get("status") or {}
    if isinstance(st, dict):
        status, message = st.get("code", st.get("status_code")), st.get("message", st.get("description"))
    else:
        status, message = st, None
    events = []
    for e in s.get("events") or []:
        if isinstance(e, dict):
            events.append(
                SpanEvent(
                    name=str(e.get("name", "")),
                    time_ns=opt_ns(_get(e, "timeUnixNano", "time_unix_nano") or e.get("timestamp")),
                    attributes=_otel_attrs(e.get("attributes")),
                )
            )
    inputs, outputs = first_of(attrs, INPUT_KEYS), first_of(attrs, OUTPUT_KEYS)
    return Span(
        span_id=id_text(span_id),
        parent_id=id_text(parent) if parent else None,
        name=str(s["name"]),
        span_type=first_of(attrs, TYPE_KEYS) or _kind(s.get("kind")),
        start_ns=opt_ns(_get(s, "startTimeUnixNano", "start_time_unix_nano") or s.get("start_time")),
        end_ns=opt_ns(_get(s, "endTimeUnixNano", "end_time_unix_nano") or s.get("end_time")),
        status=span_status(status),
        status_message=message or None,
        inputs=json_or_raw(inputs),
        outputs=json_or_raw(outputs),
        attributes=attrs,
        events=events,
    )


def _otel_attrs(a: Any) -> dict[str, Any]:
    if isinstance(a, dict):
        return {str(k): v for k, v in a.items()}
    out: dict[str, Any] = {}
    for kv in a or []:
        if isinstance(kv, dict) and "key" in kv:
            out[str(kv["key"])] = _any_value(kv.get("value"))
    return out


def _any_value(v: Any) -> Any:
    """OTLP/JSON AnyValue → plain Python."""
    if not isinstance(v, dict):
        return v
    for k in ("stringValue", "string_value", "boolValue", "bool_value", "doubleValue", "double_value"):
        if k in v:
            return v[k]
    for k in ("intValue", "int_value"):
        if k in v:
            return int(v[k])
    for k in ("arrayValue", "array_value"):
        if k in v:
            return [_any_value(x) for x in (v[k] or {}).get("values", [])]
    for k in ("kvlistValue", "kvlist_value"):
        if k in v:
            return _otel_attrs((v[k] or {}).get("values", []))
    for k in ("bytesValue", "bytes_value"):
        if k in v:
            return v[k]
    return v


def _kind(k: Any) -> str | None:
    if k is None:
        return None
    names = {0: None, 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
    if isinstance(k, int):
        return names.get(k)
    return str(k).replace("SPAN_KIND_", "").replace("SpanKind.", "") or None


def _get(d: dict, *keys: str) -> Any:
    for k in keys:
        if d.get(k) not in (None, ""):
            return d[k]
    return None
