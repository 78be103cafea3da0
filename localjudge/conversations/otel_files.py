"""OpenTelemetry trace files as a run's conversations (`localjudge run --otel-traces PATH`).

PATH is one trace file (OTLP/JSON, or `{"spans": [...]}`), a JSON Lines file of such traces (one per line:
`.jsonl`, or a file whose text is not one JSON value but whose lines are), or a directory whose `*.json`
files are one trace each (read in name order). Each trace is read by `traces.from_otel_trace`: the last GenAI
model-call span's input then output messages.

Grouping: traces whose conversation id (`gen_ai.conversation.id`, else `session.id`, on any span) is the same
make one conversation; a trace without one is a conversation of its own (id: its trace id). A conversation's
traces are taken in order of their start time (the earliest span start; traces without one keep their read
order, as do ties), and each adds its turns after those before it; a trace whose turns begin with the whole
conversation so far (a model call sent the history again) adds only the turns after it, and leading system
turns equal to the conversation's own are not repeated. Conversations come in the read order of their first
trace.

Bounds (`readers.Bounds`): at most `max_traces` traces, `max_bytes` of JSON per trace (per file, or per JSONL
line), `max_spans` spans per trace, and each conversation's turns and text; anything over, or unreadable, is
one `InputError` line naming the file (and line) and the span or field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..agent.trace_model import Trace
from ..agent.trace_otel import parse_otel
from ..errors import InputError
from ..jsonio import JSONBoundsError, loads
from .model import Conversation, Turn
from .readers import DEFAULT_BOUNDS, Bounds, build, check_bounds, read_json
from .traces import from_otel_trace

_CONTAINERS = ("resourceSpans", "resource_spans", "spans")


def read_otel_traces(path: str | Path, *, bounds: Bounds = DEFAULT_BOUNDS) -> list[Conversation]:
    """The conversations of the trace file(s) at `path` (see the module docstring)."""
    path = Path(path)
    read: list[tuple[str, Trace, Conversation]] = []
    for where, obj in _objects(path, bounds):
        if len(read) >= bounds.max_traces:
            raise InputError(f"{where}: more than {bounds.max_traces} traces; judge fewer at a time")
        trace = _trace(obj, where, bounds)
        try:
            conv = from_otel_trace(trace, bounds=bounds)
        except InputError as e:
            raise InputError(f"{where}: {e}") from None
        read.append((where, trace, conv))
    if not read:
        raise InputError(f"{path}: no OpenTelemetry traces to judge (a trace file, JSONL of traces, or *.json files)")
    groups: dict[str, list[tuple[str, Trace, Conversation]]] = {}
    for item in read:
        groups.setdefault(item[2].id or item[1].trace_id, []).append(item)
    return [_merged(cid, items, bounds) for cid, items in groups.items()]


def _objects(path: Path, bounds: Bounds) -> Iterator[tuple[str, Any]]:
    """(where, parsed JSON) for each trace at `path`, each no larger than `bounds.max_bytes`."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        if len(files) > bounds.max_traces:
            raise InputError(f"{path}: {len(files)} *.json files, more than the limit of {bounds.max_traces}")
        for f in files:
            yield str(f), _read_file(f, bounds)
        return
    if not path.is_file():
        raise InputError(f"--otel-traces {str(path)!r}: no such file or directory")
    if path.suffix != ".jsonl" and path.stat().st_size <= bounds.max_bytes:
        text = path.read_bytes()
        try:
            yield str(path), loads(text)
            return
        except JSONBoundsError as e:
            if e.kind == "too_deep":  # never read as JSON Lines: its first line would be named as the fault
                raise InputError(f"{path}: {e}") from None
            if len(text.strip().splitlines()) < 2:
                yield str(path), read_json(text, bounds, str(path))  # the one-line error
                return
    elif path.suffix != ".jsonl":
        raise InputError(f"{path}: {path.stat().st_size} bytes, more than the limit of {bounds.max_bytes} for one trace")
    with path.open("rb") as fh:
        n = 0
        while line := fh.readline(bounds.max_bytes + 2):  # a line is never read whole past the bound
            n += 1
            if len(line.rstrip(b"\r\n")) > bounds.max_bytes:
                raise InputError(f"{path} line {n}: more than {bounds.max_bytes} bytes of JSON for one trace")
            if line.strip():
                yield f"{path} line {n}", read_json(line, bounds, f"{path} line {n}")


def _read_file(f: Path, bounds: Bounds) -> Any:
    size = f.stat().st_size
    if size > bounds.max_bytes:
        raise InputError(f"{f}: {size} bytes, more than the limit of {bounds.max_bytes} for one trace")
    return read_json(f.read_bytes(), bounds, str(f))


def _trace(obj: Any, where: str, bounds: Bounds) -> Trace:
    """One trace read with `parse_otel`, its shape and span count checked first."""
    if not isinstance(obj, dict) or not any(k in obj for k in _CONTAINERS):
        found = sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__
        raise InputError(f"{where}: not an OpenTelemetry trace (no 'resourceSpans' or 'spans'); found {found}")
    n = _span_count(obj, where)
    if n > bounds.max_spans:
        raise InputError(f"{where}: {n} spans, more than the limit of {bounds.max_spans} for one trace")
    try:
        return parse_otel(obj)
    except InputError as e:
        raise InputError(f"{where}: {e}") from None
    except (TypeError, ValueError, AttributeError, KeyError) as e:  # a field of an unexpected type
        raise InputError(f"{where}: a span field of an unexpected type ({type(e).__name__}: {e})") from None


def _span_count(obj: dict[str, Any], where: str) -> int:
    rs = obj.get("resourceSpans", obj.get("resource_spans"))
    if rs is None:
        spans = obj.get("spans")
        if not isinstance(spans, list):
            raise InputError(f"{where}: 'spans' is a {type(spans).__name__}, not a list")
        return len(spans)
    if not isinstance(rs, list) or not all(isinstance(r, dict) for r in rs):
        raise InputError(f"{where}: 'resourceSpans' is not a list of objects")
    total = 0
    for i, r in enumerate(rs):
        scopes = r.get("scopeSpans", r.get("scope_spans", r.get("instrumentationLibrarySpans", []))) or []
        if not isinstance(scopes, list) or not all(isinstance(s, dict) for s in scopes):
            raise InputError(f"{where}: 'resourceSpans[{i}].scopeSpans' is not a list of objects")
        for j, s in enumerate(scopes):
            spans = s.get("spans") or []
            if not isinstance(spans, list):
                raise InputError(f"{where}: 'resourceSpans[{i}].scopeSpans[{j}].spans' is not a list")
            total += len(spans)
    return total


def _merged(cid: str, items: list[tuple[str, Trace, Conversation]], bounds: Bounds) -> Conversation:
    """One conversation from the traces sharing its id (see the module docstring for the rule)."""
    if any(t.start_ns is None for _, t, _ in items):
        ordered = items
    else:
        ordered = sorted(items, key=lambda item: item[1].start_ns or 0)
    turns: list[Turn] = []
    for _, _, conv in ordered:
        new = conv.turns
        if turns and new[: len(turns)] == turns:
            new = new[len(turns) :]
        else:
            k = 0
            while k < len(new) and k < len(turns) and new[k].role == "system" and new[k] == turns[k]:
                k += 1
            new = new[k:]
        turns += new
    where = f"OpenTelemetry conversation {cid!r} ({len(items)} traces)"
    meta = {"trace_ids": [t.trace_id for _, t, _ in ordered], "files": [w for w, _, _ in ordered]}
    return check_bounds(build(where, id=cid, turns=turns, metadata=meta), bounds, where)
