"""The judge's tools over one trace: each returns bounded text, never raises at the model.

    get_trace_info()        metadata, timing, span counts, errors, request/response previews
    list_spans(page)        one page of spans: id, parent, name, type, status, duration, inputs/outputs (truncated)
    get_span(span_id)       one span in full (each field and the whole text bounded)
    search_trace(pattern)   case-insensitive regex over every span field, with context around each match

Every value longer than its limit is cut with a marker saying how much was cut; every tool result is
capped at `ToolLimits.result_chars`. search_trace runs the model's pattern with the `regex` module (the
same syntax as `re`) under a limit of `SEARCH_SECONDS` of this thread's CPU time for one search (CPU, not
wall-clock time: a busy machine that gives the search less of a core does not refuse a search an idle one answers;
`SEARCH_WALL_SECONDS` of wall-clock time still stops a search starved for longer): a pattern that backtracks
without end (`(a|a)+$`) raises `SearchTimeLimit`, and the trace judge refuses the judgement (unscored,
`tool_time_limit`) instead of holding it. The limit refuses, it never answers: an `Error:` text shown to the
model would make the verdict depend on how fast the machine is. Mistakes (unknown span id, bad regex, page out of range, wrong
argument type) come back as text starting with `Error:` so the loop can continue.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from .trace_model import Span, Trace

SEARCH_SECONDS = 1.0  # one search_trace call's CPU time, over every span (not in ToolLimits: it is not in the cache key)
SEARCH_WALL_SECONDS = 30.0  # and its wall-clock time, however little CPU a busy machine gave it


class SearchTimeLimit(Exception):
    """A search_trace pattern ran past SEARCH_SECONDS: the judgement is refused, never answered differently."""


ArgType = Literal["int", "str", "id"]  # id: a string without whitespace or quotes


class ToolLimits(BaseModel):
    """How much text each tool may return (characters)."""

    page_size: int = Field(5, ge=1)
    value_chars: int = Field(160, ge=16)  # inputs/outputs in list_spans, previews in get_trace_info
    field_chars: int = Field(600, ge=32)  # each field of get_span
    context_chars: int = Field(60, ge=0)  # search_trace context either side of a match
    max_matches: int = Field(5, ge=1)
    result_chars: int = Field(1800, ge=200)  # any tool result as a whole


@dataclass(frozen=True)
class ArgSpec:
    """One tool argument as the model sees it: name, type (`int`, `str`, or `id`: a span id) and description."""

    name: str
    type: ArgType
    description: str


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, what it does, typed arguments."""

    name: str
    description: str
    args: tuple[ArgSpec, ...] = ()

    def example(self) -> str:
        """An example call as JSON: `{"tool": "<name>", ...}` with 1 for an int and `"<arg>"` for a text argument."""
        parts = [f'"tool": "{self.name}"'] + [f'"{a.name}": ' + ("1" if a.type == "int" else f'"<{a.name}>"') for a in self.args]
        return "{" + ", ".join(parts) + "}"


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_trace_info",
        "trace metadata: id, state, start time, duration, number and types of spans, errors, the request and the response",
    ),
    ToolSpec(
        "list_spans",
        "one page of spans, each with its span_id, parent, name, type, status, duration and truncated inputs and outputs",
        (ArgSpec("page", "int", "page number, starting at 1"),),
    ),
    ToolSpec(
        "get_span",
        "one span in full: inputs, outputs, attributes, events and errors",
        (ArgSpec("span_id", "id", "a span_id shown by list_spans"),),
    ),
    ToolSpec(
        "search_trace",
        "search every span for a regular expression (case-insensitive); shows each match in context",
        (ArgSpec("pattern", "str", "a regular expression or a plain word"),),
    ),
)
TOOLS_BY_NAME = {t.name: t for t in TOOL_SPECS}


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[truncated: {len(text) - limit} of {len(text)} chars cut]"


def show(value: Any) -> str:
    """A value as one compact text (strings as they are, the rest as JSON)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _ms(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}"


def _iso(ns: int | None) -> str:
    if ns is None:
        return "?"
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TraceTools:
    """The four tools bound to one trace. `call(name, args)` always returns text."""

    def __init__(self, trace: Trace, limits: ToolLimits | None = None):
        self.trace = trace
        self.limits = limits or ToolLimits()

    @property
    def n_pages(self) -> int:
        """How many pages `list_spans` has (at least 1, even for a trace without spans)."""
        return max(1, -(-len(self.trace.spans) // self.limits.page_size))

    def call(self, name: str, args: dict[str, Any] | None = None) -> str:
        """Run tool `name`; any mistake is returned as `Error: ...` text, never raised."""
        spec = TOOLS_BY_NAME.get(name)
        if spec is None:
            return f"Error: unknown tool {name!r}; the tools are {', '.join(TOOLS_BY_NAME)}."
        args = dict(args or {})
        clean: dict[str, Any] = {}
        for a in spec.args:
            if a.name not in args:
                return f"Error: {name} needs the argument {a.name!r} ({a.description})."
            v = args.pop(a.name)
            if a.type == "int":
                try:
                    v = int(v)
                except (TypeError, ValueError):
                    return f"Error: {a.name} must be an integer, got {v!r}."
            else:
                v = str(v)
            clean[a.name] = v
        if args:
            return f"Error: {name} takes no argument(s) {', '.join(map(repr, args))}."
        text = getattr(self, name)(**clean)
        return clip(text, self.limits.result_chars)

    # ---------------------------------------------------------------------------------------- tools

    def get_trace_info(self) -> str:
        """The trace overview: id, format, state, start, duration, span counts by type, root span, failed spans
        (first 5 named), request and response previews, tags and metadata."""
        t, lim = self.trace, self.limits
        types = ", ".join(f"{n} {k}" for k, n in t.type_counts().most_common())
        errs = t.errors()
        roots = t.roots()
        lines = [
            f"trace_id: {t.trace_id}",
            f"format: {'MLflow trace export' if t.source_format == 'mlflow' else 'OpenTelemetry spans'}",
            f"state: {t.state or '?'}",
            f"start: {_iso(t.start_ns)}",
            f"duration_ms: {_ms(t.duration_ms)}",
            f"spans: {len(t.spans)} ({types}); pages of list_spans: {self.n_pages}",
            f"root span: {roots[0].name} (span_id {roots[0].span_id})" if roots else "root span: ?",
            f"failed spans: {len(errs)}"
            + (" (" + ", ".join(f"{s.name} span_id {s.span_id}" for s in errs[:5]) + ")" if errs else ""),
            f"request: {clip(t.request_preview or 'null', lim.value_chars)}",
            f"response: {clip(t.response_preview or 'null', lim.value_chars)}",
        ]
        if t.tags:
            lines.append(f"tags: {clip(show(t.tags), lim.value_chars)}")
        if t.metadata:
            lines.append(f"metadata: {clip(show(t.metadata), lim.value_chars)}")
        return "\n".join(lines)

    def list_spans(self, page: int = 1) -> str:
        """Page `page` (1-based) of spans: each span's head line, clipped inputs and outputs, and error if it failed;
        a page out of range is an `Error:` text."""
        lim, spans = self.limits, self.trace.spans
        if page < 1 or page > self.n_pages:
            return f"Error: page {page} does not exist; the trace has {len(spans)} spans on {self.n_pages} page(s) of {lim.page_size}."
        lo = (page - 1) * lim.page_size
        chunk = spans[lo : lo + lim.page_size]
        out = [f"spans {lo + 1}-{lo + len(chunk)} of {len(spans)} (page {page} of {self.n_pages}):"]
        for s in chunk:
            out.append(self._head(s))
            out.append(f"  inputs: {clip(show(s.inputs), lim.value_chars)}")
            out.append(f"  outputs: {clip(show(s.outputs), lim.value_chars)}")
            if s.status == "ERROR":
                out.append(f"  error: {clip(s.error_text() or '?', lim.value_chars)}")
        if page < self.n_pages:
            out.append(f"more spans: call list_spans with page {page + 1}")
        return "\n".join(out)

    def get_span(self, span_id: str) -> str:
        """One span in full, each field clipped to `field_chars`: head, start, inputs, outputs, status message,
        attributes, first 5 events, up to 10 children; an unknown id is an `Error:` text with hints."""
        s = self.trace.find_span(span_id)
        if s is None:
            return self._unknown_span(span_id)
        lim = self.limits
        lines = [
            self._head(s),
            f"start: {_iso(s.start_ns)}",
            f"inputs: {clip(show(s.inputs), lim.field_chars)}",
            f"outputs: {clip(show(s.outputs), lim.field_chars)}",
        ]
        if s.status == "ERROR" or s.status_message:
            lines.append(f"status message: {clip(s.status_message or '', lim.field_chars)}")
        attrs = s.visible_attributes()
        if attrs:
            lines.append(f"attributes: {clip(show(attrs), lim.field_chars)}")
        for ev in s.events[:5]:
            lines.append(f"event {ev.name}: {clip(show(ev.attributes), lim.field_chars)}")
        if len(s.events) > 5:
            lines.append(f"({len(s.events) - 5} more events not shown)")
        kids = [c for c in self.trace.spans if c.parent_id == s.span_id]
        if kids:
            lines.append("children: " + ", ".join(f"{c.name} (span_id {c.span_id})" for c in kids[:10]))
        return "\n".join(lines)

    def search_trace(self, pattern: str) -> str:
        """Case-insensitive regex search over every span field: the total match count and the first `max_matches`
        non-empty matches with `context_chars` either side; an empty or invalid pattern is an `Error:` text."""
        import regex

        if not pattern.strip():
            return "Error: the search pattern is empty; give a word or a regular expression."
        try:
            re.compile(pattern, re.IGNORECASE)  # the syntax check (and its messages) of Python's own re
            rx = regex.compile(pattern, regex.IGNORECASE)
        except (re.error, regex.error, ValueError, OverflowError, RecursionError) as e:
            return (
                f"Error: {pattern!r} is not a valid regular expression ({e}); escape special characters "
                "such as ( ) [ ] * + ? or search for a plain word."
            )
        hits: list[str] = []
        total = 0
        cpu0, wall_end = time.thread_time(), time.monotonic() + SEARCH_WALL_SECONDS
        for s in self.trace.spans:
            for field, text in self._fields(s):
                while True:
                    # the regex module's timeout is wall-clock: a field that runs past what is left of the CPU
                    # budget without spending it (the machine was busy) is searched again from its start
                    left = min(SEARCH_SECONDS - (time.thread_time() - cpu0), wall_end - time.monotonic())
                    if left <= 0:
                        raise SearchTimeLimit(
                            f"search_trace({pattern[:80]!r}) ran past its time limit of {SEARCH_SECONDS:g} s of CPU time "
                            "(nested repetition such as (a+)+ backtracks without end); the judgement is refused rather "
                            "than answered without it"
                        )
                    mark = len(hits)
                    try:
                        total += self._search_field(rx, s, field, text, hits, max(1e-3, left))
                        break
                    except TimeoutError:
                        del hits[mark:]
        if not total:
            return f"no match for {pattern!r} in {len(self.trace.spans)} spans."
        head = f"{total} match(es) for {pattern!r}" + (f"; showing the first {len(hits)}" if total > len(hits) else "") + ":"
        return "\n".join([head, *hits])

    def _search_field(self, rx: Any, s: Span, field: str, text: str, hits: list[str], timeout: float) -> int:
        """Matches of `rx` in one field (appending the first ones to `hits`); TimeoutError past `timeout` seconds."""
        lim = self.limits
        total = 0
        for m in rx.finditer(text, timeout=timeout):
            if m.end() == m.start():
                continue
            total += 1
            if len(hits) < lim.max_matches:
                a, b = max(0, m.start() - lim.context_chars), min(len(text), m.end() + lim.context_chars)
                match = clip(m.group(0), 200)
                ctx = (
                    ("…" if a else "")
                    + text[a : m.start()]
                    + "«"
                    + match
                    + "»"
                    + text[m.end() : b]
                    + ("…" if b < len(text) else "")
                )
                hits.append(f"- span_id {s.span_id} ({s.name}) {field}: {ctx}")
        return total

    # -------------------------------------------------------------------------------------- helpers

    @staticmethod
    def _head(s: Span) -> str:
        return (
            f"- span_id {s.span_id} | parent {s.parent_id or '-'} | name {s.name} | type {s.span_type or '?'} | "
            f"status {s.status} | duration_ms {_ms(s.duration_ms)}"
        )

    @staticmethod
    def _fields(s: Span) -> list[tuple[str, str]]:
        out = [("name", s.name), ("inputs", show(s.inputs)), ("outputs", show(s.outputs))]
        if s.status_message:
            out.append(("status message", s.status_message))
        attrs = s.visible_attributes()
        if attrs:
            out.append(("attributes", show(attrs)))
        for ev in s.events:
            out.append((f"event {ev.name}", show(ev.attributes)))
        return out

    def _unknown_span(self, span_id: str) -> str:
        ids = [s.span_id for s in self.trace.spans]
        by_name = [s for s in self.trace.spans if s.name.strip().lower() == span_id.strip().strip("\"'").lower()]
        hint = f" {span_id!r} is a span name; its span_id is {by_name[0].span_id}." if by_name else ""
        known = ", ".join(ids[:12]) + (f" (+{len(ids) - 12} more)" if len(ids) > 12 else "")
        return f"Error: no span with span_id {span_id!r}.{hint} Known span ids: {known}."
