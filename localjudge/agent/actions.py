"""What the trace judge may say: one JSON action per turn, a tool call or the final rating.

`RatingType` (rating.py) is the user's result type (yes/no, bool, an int or float range, labels) and knows how
the `result` field is constrained, described in the prompt, checked and normalised.
`ActionFormat` is an `OutputFormat` whose regex is the union of every tool call (with its typed
arguments) and the rating object, so the decoder can emit nothing else:

    {"tool": "get_trace_info"}
    {"tool": "list_spans", "page": 2}
    {"tool": "get_span", "span_id": "..."}
    {"tool": "search_trace", "pattern": "..."}
    {"result": <typed value>, "rationale": "..."}     (MLflow's default order; `rationale_first` swaps it)

Free text (span_id, pattern, rationale) is unbounded in the regex and bounded by the engine's
per-field token budget (`field_tokens`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..errors import InputError, ParseError
from ..formats import JSON_STR, OutputFormat
from ..formats.base import as_number, as_text, json_objects, literal, lower_keys
from .rating import RatingKind as RatingKind  # kept importable from here
from .rating import RatingType
from .tools import TOOL_SPECS, ToolSpec


class ToolAction(BaseModel):
    """A tool call the model asked for."""

    tool: str
    arguments: dict[str, Any] = {}

    def label(self) -> str:
        """The call as text: `tool(arg='value', ...)`."""
        return f"{self.tool}(" + ", ".join(f"{k}={v!r}" for k, v in self.arguments.items()) + ")"


class RatingAction(BaseModel):
    """The final evaluation rating."""

    rationale: str
    result: str | bool | int | float


# A span id: letters, digits and `_ . : + / = -` (hex, base64, `tr-...`, `0x...` ids); this stops a
# small model from running on into the rest of a `list_spans` row. Its length is bounded in tokens.
SPAN_ID = r"[A-Za-z0-9_.:+/=\-]+"


def _arg_regex(kind: str) -> str:
    if kind == "int":
        return "[1-9][0-9]{0,2}"
    if kind == "id":
        return '"' + SPAN_ID + '"'
    return '"' + JSON_STR + '"'


class ActionFormat(OutputFormat):
    """One action: the union of the tool calls and the rating (either side can be switched off)."""

    kind = "trace_action"

    def __init__(
        self,
        rating: RatingType | str = "yes/no",
        tools: tuple[ToolSpec, ...] = TOOL_SPECS,
        allow_tools: bool = True,
        allow_rating: bool = True,
        field_tokens: int = 48,
        rationale_first: bool = False,
    ):
        super().__init__(field_tokens)
        if not (allow_tools and tools) and not allow_rating:
            raise InputError("an action format needs tools or the rating (or both)")
        self.rating = RatingType.parse(rating)
        self.tools = tuple(tools) if allow_tools else ()
        self.allow_rating = allow_rating
        self.rationale_first = rationale_first

    def tool_regex(self, t: ToolSpec) -> str:
        """`{"tool": "<name>", "<arg>": <value>, ...}` for tool `t`, arguments in its order: an int 1–999,
        a quoted span id, or a JSON string."""
        body = r'\{"tool": "' + literal(t.name) + '"'
        for a in t.args:
            body += ', "' + literal(a.name) + '": ' + _arg_regex(a.type)
        return body + r"\}"

    def rating_regex(self) -> str:
        """`{"result": <value>, "rationale": "..."}`, or the rationale first when `rationale_first`."""
        if self.rationale_first:
            return r'\{"rationale": "' + JSON_STR + r'", "result": ' + self.rating.value_regex() + r"\}"
        return r'\{"result": ' + self.rating.value_regex() + r', "rationale": "' + JSON_STR + r'"\}'

    def regex(self) -> str:
        """One of the allowed tool calls or (when allowed) the rating object."""
        alts = [self.tool_regex(t) for t in self.tools]
        if self.allow_rating:
            alts.append(self.rating_regex())
        return "(" + "|".join(alts) + ")"

    def max_tokens(self) -> int:
        """`field_tokens` for the one free-text field, plus 40 for the structure and the result's length."""
        return self.field_tokens + 40 + self.rating.value_chars()

    def parse(self, text: str) -> ToolAction | RatingAction:
        """The first JSON object with a `tool` key (tools allowed) or a `result` key (rating allowed): a tool call
        checked against its spec (known tool, every argument, no others) or a rating checked against the type."""
        objs = [lower_keys(o) for o in json_objects(text)]
        if not objs:
            raise ParseError(self.kind, "no JSON object found", text)
        for o in objs:
            if "tool" in o and self.tools:
                return self._tool(o, text)
            if "result" in o and self.allow_rating:
                return RatingAction(
                    rationale=as_text(o.get("rationale"), self.kind, "rationale", text),
                    result=self.rating.check(o["result"], self.kind, text),
                )
        want = " or ".join(x for x, ok in (("a 'tool' key", bool(self.tools)), ("a 'result' key", self.allow_rating)) if ok)
        raise ParseError(self.kind, f"JSON object lacks {want}", text)

    def _tool(self, o: dict, text: str) -> ToolAction:
        by_name = {t.name: t for t in self.tools}
        name = o["tool"]
        spec = by_name.get(name) if isinstance(name, str) else None
        if spec is None:
            raise ParseError(self.kind, f"unknown tool {name!r}; the tools are {', '.join(by_name)}", text)
        args: dict[str, Any] = {}
        for a in spec.args:
            if a.name not in o:
                raise ParseError(self.kind, f"{spec.name} needs the argument {a.name!r}", text)
            v = o[a.name]
            if a.type == "int":
                v = as_number(v, self.kind, a.name, text)
                if v != int(v) or v < 1:
                    raise ParseError(self.kind, f"{a.name} must be a positive integer, got {o[a.name]!r}", text)
                v = int(v)
            else:
                v = as_text(v, self.kind, a.name, text)
            args[a.name] = v
        extra = [k for k in o if k != "tool" and k not in args]
        if extra:
            raise ParseError(self.kind, f"{spec.name} takes no argument(s) {', '.join(extra)}", text)
        return ToolAction(tool=spec.name, arguments=args)

    def normalise(self, v: ToolAction | RatingAction) -> float | None:
        """The rating's score in [0, 1] (None for unscored labels); None for a tool call."""
        return self.rating.normalise(v.result) if isinstance(v, RatingAction) else None

    def value(self, v: ToolAction | RatingAction) -> Any:
        """The rating's result, or the tool call as a dict."""
        return v.result if isinstance(v, RatingAction) else v.model_dump()

    def rationale(self, v: ToolAction | RatingAction) -> str | None:
        """The rating's rationale; None for a tool call."""
        return v.rationale if isinstance(v, RatingAction) else None

    def params(self) -> dict[str, Any]:
        """The rating type, the tool names, whether the rating is allowed, rationale_first and field_tokens."""
        return {
            "rating": self.rating.spec(),
            "tools": [t.name for t in self.tools],
            "rating_allowed": self.allow_rating,
            "rationale_first": self.rationale_first,
            **super().params(),
        }
