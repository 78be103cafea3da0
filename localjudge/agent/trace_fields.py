"""Span fields as both trace readers read them: attribute values, ids, statuses, times and durations,
the spans' execution order, and the trace's request/response previews taken from its root span."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from ..errors import InputError
from ..jsonio import JSONBoundsError, loads
from .trace_model import Span, SpanStatus, Trace


def first_of(attrs: dict, keys: tuple[str, ...]) -> Any:
    """The value of the first of `keys` that the attributes hold (not None or ""), or None."""
    for k in keys:
        if attrs.get(k) not in (None, ""):
            return attrs[k]
    return None


def json_or_raw(v: Any) -> Any:
    """A JSON-encoded attribute string decoded (`localjudge.jsonio.loads`); anything else (or text that is not
    JSON, or nests more than 100 levels deep) as it is."""
    if isinstance(v, str):
        t = v.strip()
        if t[:1] in ('"', "{", "[") or t in ("true", "false", "null") or t.replace(".", "", 1).lstrip("-").isdigit():
            try:
                return loads(t)
            except JSONBoundsError:
                return v
    return v


def id_text(x: Any) -> str:
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


def span_status(x: Any) -> SpanStatus:
    """OK, ERROR or UNSET from a status code (OTLP numbers 1/2) or its name in any spelling."""
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


def opt_ns(x: Any) -> int | None:
    """A timestamp in unix nanoseconds, or None when it is missing."""
    return None if x in (None, "") else time_ns(x, "time")


def time_ns(x: Any, what: str) -> int:
    """Unix nanoseconds from a number, digits or an ISO-8601 time (UTC when it has no zone); `InputError` else."""
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
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1e9)


def parse_duration_ms(x: Any) -> float | None:
    """Milliseconds from a number or a proto Duration (`"1.250s"`), or None when missing or unreadable."""
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


def in_execution_order(spans: list[Span]) -> list[Span]:
    """Depth-first by start time: each parent before its children, siblings in time order."""
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[Span]] = {}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else None, []).append(s)

    def key(s: Span) -> tuple[bool, int]:
        return (s.start_ns is None, s.start_ns or 0)

    out: list[Span] = []
    seen: set[str] = set()
    # an explicit stack, not recursion: a parent chain as deep as the span bound (10,000) is walked like a flat one
    stack = sorted(children.get(None, []), key=key)[::-1]  # popped from the end: earliest first, ties in file order
    while stack:
        s = stack.pop()
        if s.span_id not in seen:
            seen.add(s.span_id)
            out.append(s)
            stack.extend(sorted(children.get(s.span_id, []), key=key)[::-1])
    out.extend(s for s in spans if s.span_id not in seen)  # cycles: keep them, in file order
    return out


def fill_previews(trace: Trace) -> Trace:
    """The trace with missing request/response previews taken from its first root span's inputs/outputs."""
    roots = trace.roots()
    if roots:
        if trace.request_preview is None and roots[0].inputs is not None:
            trace.request_preview = _compact(roots[0].inputs)
        if trace.response_preview is None and roots[0].outputs is not None:
            trace.response_preview = _compact(roots[0].outputs)
    return trace


def _compact(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
