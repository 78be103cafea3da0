"""`response_format: {"type": "json_object"}` with the schema the client states in the conventional place.

instructor's JSON mode (`Mode.JSON`, what RAGAS 0.4's `llm_factory` uses with the OpenAI client) sends
`json_object` and appends to the first system message (or sends one) the text

    As a genius expert, your task is to understand the content and provide
    the parsed objects in json that match the following json_schema:
    <the response model's JSON schema, indented>
    Make sure to return an instance of the JSON, not the schema itself

(`instructor/v2/providers/openai/handlers.py`, `OpenAIJSONHandler.prepare_request`). Any JSON object is
what the client asked for, but it validates the answer against that schema, so `stated_schema` finds it
and the server constrains to it: the answer is then valid by construction instead of a JSON object that
echoes the schema. The work is bounded: only the first `MAX_SCAN_CHARS` of each system message are
searched, the schema text must fit the same byte bound as a client `json_schema`, and it is checked
exactly like one (`validate.check_schema`: size, `$ref` depth and loops, metaschema). A schema that is
absent, not JSON, or fails those checks leaves the request as it was: any JSON object.
"""

from __future__ import annotations

import json
from typing import Any

from ... import jsonio
from ...engine.base import Message
from ...formats.llg_schema import LLG_MAX_SCHEMA_BYTES
from .errors import APIError
from .validate import check_schema

# instructor's fixed text around the schema (both lines verbatim, whitespace aside)
LEAD = "the parsed objects in json that match the following json_schema:"
TAIL = "Make sure to return an instance of the JSON, not the schema itself"
OPENING = "As a genius expert, your task is to understand the content and provide"
MAX_SCAN_CHARS = 4 * LLG_MAX_SCHEMA_BYTES  # the lead must start within this much of a system message
SCHEMA_NAME = "instructor_json"  # the schema name the plan carries (what the answer was constrained to)


def stated_schema(messages: list[Message]) -> dict[str, Any] | None:
    """The JSON schema an instructor JSON-mode system message states, checked like a client `json_schema`;
    None when no system message states one (or what it states is not a usable schema)."""
    for m in messages:
        if m.role != "system":
            continue
        schema = _schema_in(m.content)
        if schema is not None:
            return schema
    return None


def without_instructions(messages: list[Message]) -> list[Message]:
    """`messages` without a leading system message that holds nothing but instructor's JSON-mode text (the one
    instructor sends when the client sent none), so the client's own prompt can be recognised."""
    if messages and messages[0].role == "system":
        text = messages[0].content.strip()
        if text.startswith(OPENING) and text.endswith(TAIL) and _schema_in(text) is not None:
            return messages[1:]
    return messages


def _schema_in(text: str) -> dict[str, Any] | None:
    start = text.find(LEAD, 0, MAX_SCAN_CHARS)
    if start < 0:
        return None
    start += len(LEAD)
    end = text.find(TAIL, start, start + LLG_MAX_SCHEMA_BYTES + 1024)  # the schema, indented, and a few newlines
    if end < 0:
        return None
    blob = text[start:end].strip()
    if not blob.startswith("{") or len(blob.encode()) > 2 * LLG_MAX_SCHEMA_BYTES:  # indent counts: recheck below
        return None
    try:
        schema = jsonio.loads(blob, max_depth=jsonio.PARSER_DEPTH)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(schema, dict):
        return None
    try:
        check_schema(schema, "messages (instructor's json_schema)")
    except APIError:
        return None
    return schema
