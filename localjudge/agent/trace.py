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
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import InputError

SpanStatus = Literal["OK", "ERROR", "UNSET"]

_INPUT_KEYS = ("mlflow.spanInputs", "input.value", "traceloop.entity.input", "gen_ai.prompt", "input")
_OUTPUT_KEYS = ("mlflow.spanOutputs", "output.value", "traceloop.entity.output", "gen_ai.completion", "output")
_TYPE_KEYS = ("mlflow.spanType", "openinference.span.kind", "traceloop.span.kind", "gen_ai.operation.name")
_HIDDEN_ATTRS = set(_INPUT_KEYS) | set(_TYPE_KEYS) | {"mlflow.traceRequestId"}


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
        return {k: v for k, v in self.attributes.items() if k not in _HIDDEN_ATTRS and k not in _OUTPUT_KEYS}


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


# ------------------------------------------------------------------------------------------ loading


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
        return json.loads(text)
    except json.JSONDecodeError as e:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1:  # JSON Lines: one span per line
            try:
                return [json.loads(ln) for ln in lines]
            except json.JSONDecodeError:
                pass
        raise InputError(f"{what} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); fix the file") from None


def parse_trace(obj: Any) -> Trace:
    """Detect the format of parsed JSON and read it; `InputError` names what is missing."""
    if isinstance(obj, dict) and isinstance(obj.get("trace"), dict) and "info" in obj["trace"]:
        obj = obj["trace"]
    if isinstance(obj, dict) and ("info" in obj or "data" in obj):
        return _parse_mlflow(obj)
    if isinstance(obj, dict) and any(k in obj for k in ("resourceSpans", "resource_spans", "spans")):
        return _parse_otel(obj)
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        if all(("info" in x and "data" in x) for x in obj[:1]):
            raise InputError("this file holds several MLflow traces; pass one trace per file (or one per row with `run`)")
        return _parse_otel({"spans": obj})
    keys = sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__
    raise InputError(
        "trace is neither an MLflow trace export (missing 'info' and 'data.spans') nor OpenTelemetry span JSON "
        f"(missing 'resourceSpans', 'spans' or a list of spans with 'spanId' and 'name'); found {keys}; see docs/traces.md"
    )


# ------------------------------------------------------------------------------------------- MLflow


def _parse_mlflow(obj: dict) -> Trace:
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
        start_ns = _time_ns(info["request_time"], "info.request_time")
    elif info.get("timestamp_ms") is not None:
        start_ns = int(info["timestamp_ms"]) * 1_000_000
    duration = _duration_ms(info.get("execution_duration", info.get("execution_time_ms")))
    metadata = info.get("trace_metadata") or info.get("request_metadata") or {}
    tags = info.get("tags") or {}
    if isinstance(tags, list):  # proto-style [{"key", "value"}]
        tags = {t.get("key"): t.get("value") for t in tags if isinstance(t, dict)}
    trace = Trace(
        trace_id=str(trace_id),
        source_format="mlflow",
        spans=_ordered(spans),
        state=info.get("state") or info.get("status"),
        start_ns=start_ns,
        duration_ms=duration,
        request_preview=info.get("request_preview") or metadata.get("mlflow.traceInputs"),
        response_preview=info.get("response_preview") or metadata.get("mlflow.traceOutputs"),
        metadata=dict(metadata),
        tags=dict(tags),
    )
    return _fill_previews(trace)


def _mlflow_span(s: Any, i: int) -> Span:
    where = f"MLflow span #{i} in 'data.spans'"
    if not isinstance(s, dict):
        raise InputError(f"{where} is a {type(s).__name__}, not an object")
    v2 = "context" in s
    span_id = (s.get("context") or {}).get("span_id") if v2 else s.get("span_id")
    missing = [k for k, v in ((("context.span_id" if v2 else "span_id"), span_id), ("name", s.get("name"))) if not v]
    if missing:
        raise InputError(f"{where} is missing {', '.join(repr(m) for m in missing)}; each span needs an id and a name")
    attrs = {str(k): _json_or_raw(v) for k, v in (s.get("attributes") or {}).items()}
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
            time_ns=_opt_ns(e.get("time_unix_nano", e.get("timestamp"))),
            attributes=dict(e.get("attributes") or {}),
        )
        for e in s.get("events") or []
        if isinstance(e, dict)
    ]
    return Span(
        span_id=_id_text(span_id),
        parent_id=_id_text(parent) if parent else None,
        name=str(s["name"]),
        span_type=_first(attrs, _TYPE_KEYS),
        start_ns=_opt_ns(start),
        end_ns=_opt_ns(end),
        status=_status(status),
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


# -------------------------------------------------------------------------------------------- OTel


def _parse_otel(obj: dict) -> Trace:
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
    trace_ids = [t for t in (_get(s, "traceId", "trace_id") or (s.get("context") or {}).get("trace_id") for s in raw) if t]
    trace_id = obj.get("trace_id") or obj.get("traceId") or (trace_ids[0] if trace_ids else None)
    if not trace_id:
        raise InputError("OpenTelemetry spans are missing 'traceId' (or 'trace_id'); every span needs the id of its trace")
    starts = [s.start_ns for s in spans if s.start_ns is not None]
    ends = [s.end_ns for s in spans if s.end_ns is not None]
    roots_err = any(s.status == "ERROR" for s in spans if not s.parent_id)
    trace = Trace(
        trace_id=_id_text(trace_id),
        source_format="otel",
        spans=_ordered(spans),
        state="ERROR" if roots_err else "OK",
        start_ns=min(starts) if starts else None,
        duration_ms=(max(ends) - min(starts)) / 1e6 if starts and ends else None,
        metadata={**resource, **dict(obj.get("metadata") or {})},
        tags=dict(obj.get("tags") or {}),
    )
    return _fill_previews(trace)


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
                    time_ns=_opt_ns(_get(e, "timeUnixNano", "time_unix_nano") or e.get("timestamp")),
                    attributes=_otel_attrs(e.get("attributes")),
                )
            )
    inputs, outputs = _first(attrs, _INPUT_KEYS), _first(attrs, _OUTPUT_KEYS)
    return Span(
        span_id=_id_text(span_id),
        parent_id=_id_text(parent) if parent else None,
        name=str(s["name"]),
        span_type=_first(attrs, _TYPE_KEYS) or _kind(s.get("kind")),
        start_ns=_opt_ns(_get(s, "startTimeUnixNano", "start_time_unix_nano") or s.get("start_time")),
        end_ns=_opt_ns(_get(s, "endTimeUnixNano", "end_time_unix_nano") or s.get("end_time")),
        status=_status(status),
        status_message=message or None,
        inputs=_json_or_raw(inputs),
        outputs=_json_or_raw(outputs),
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


# ------------------------------------------------------------------------------------------ helpers


def _get(d: dict, *keys: str) -> Any:
    for k in keys:
        if d.get(k) not in (None, ""):
            return d[k]
    return None


def _first(attrs: dict, keys: tuple[str, ...]) -> Any:
    for k in keys:
        if attrs.get(k) not in (None, ""):
            return attrs[k]
    return None


def _json_or_raw(v: Any) -> Any:
    if isinstance(v, str):
        t = v.strip()
        if t[:1] in ('"', "{", "[") or t in ("true", "false", "null") or t.replace(".", "", 1).lstrip("-").isdigit():
            try:
                return json.loads(t)
            except json.JSONDecodeError:
                return v
    return v


def _id_text(x: Any) -> str:
    """Ids as readable text: hex stays hex; 8- or 16-byte base64 (MLflow v3 dicts) becomes hex."""
    s = str(x).strip()
    if len(s) in (12, 24) and s.endswith("=") and not s.startswith("0x"):
        try:
            raw = base64.b64decode(s, validate=True)
            if len(raw) in (8, 16):
                return raw.hex()
        except ValueError:
            pass
    return s


def _status(x: Any) -> SpanStatus:
    if x is None:
        return "UNSET"
    if isinstance(x, int):
        return "OK" if x == 1 else "ERROR" if x == 2 else "UNSET"
    t = str(x).upper()
    if "ERROR" in t:
        return "ERROR"
    if t.endswith("OK"):
        return "OK"
    return "UNSET"


def _opt_ns(x: Any) -> int | None:
    return None if x in (None, "") else _time_ns(x, "time")


def _time_ns(x: Any, what: str) -> int:
    if isinstance(x, (int, float)):
        return int(x)
    s = str(x).strip()
    if s.isdigit():
        return int(s)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{what} {s!r} is neither unix nanoseconds nor an ISO-8601 time; fix the trace") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1e9)


def _duration_ms(x: Any) -> float | None:
    if x in (None, ""):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    s = str(x).strip()
    if s.endswith("s"):  # proto Duration JSON: "1.250s"
        try:
            return float(s[:-1]) * 1000
        except ValueError:
            return None
    try:
        return float(s)
    except ValueError:
        return None


def _ordered(spans: list[Span]) -> list[Span]:
    """Depth-first by start time: each parent before its children, siblings in time order."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[Span]] = {}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else None, []).append(s)

    def key(s: Span) -> tuple[bool, int]:
        return (s.start_ns is None, s.start_ns or 0)

    out: list[Span] = []
    seen: set[str] = set()

    def walk(parent: str | None) -> None:
        for s in sorted(children.get(parent, []), key=key):
            if s.span_id not in seen:
                seen.add(s.span_id)
                out.append(s)
                walk(s.span_id)

    walk(None)
    out.extend(s for s in spans if s.span_id not in seen)  # cycles: keep them, in file order
    return out


def _fill_previews(trace: Trace) -> Trace:
    roots = trace.roots()
    if roots:
        if trace.request_preview is None and roots[0].inputs is not None:
            trace.request_preview = _compact(roots[0].inputs)
        if trace.response_preview is None and roots[0].outputs is not None:
            trace.response_preview = _compact(roots[0].outputs)
    return trace


def _compact(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
