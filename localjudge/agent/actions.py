"""What the trace judge may say: one JSON action per turn, a tool call or the final rating.

`RatingType` is the user's result type (yes/no, bool, an int or float range, labels) and knows how
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

import re
from typing import Any, Literal

from pydantic import BaseModel

from ..errors import InputError, ParseError
from ..formats import JSON_STR, NumberRange, OutputFormat
from ..formats.base import as_number, as_text, json_objects, literal, lower_keys
from .tools import TOOL_SPECS, ToolSpec

RatingKind = Literal["yes_no", "bool", "int", "float", "labels"]


class RatingType(BaseModel):
    """The type of the `result` field of the final rating."""

    kind: RatingKind
    lo: float | None = None
    hi: float | None = None
    decimals: int = 0
    labels: list[str] | None = None
    values: dict[str, float] | None = None  # label → score in [0, 1]

    @classmethod
    def parse(cls, spec: Any) -> RatingType:
        """`yes/no`, `bool`, `int:1-5`, `float:0-1` (`float:0-1:2` = 2 decimals), `labels:a,b,c`
        (`labels:good=1,bad=0` with scores), the Python types `bool`, `int`, `float`, or the judge
        catalog's result spec (`{"type", "min", "max", "decimals", "labels", "label_values"}`)."""
        if isinstance(spec, RatingType):
            return spec
        if isinstance(spec, BaseModel):
            spec = spec.model_dump()
        if isinstance(spec, dict):
            return cls._from_dict(spec)
        if spec is bool:
            return cls(kind="bool")
        if spec is int:
            return cls(kind="int", lo=1, hi=5)
        if spec is float:
            return cls(kind="float", lo=0, hi=1, decimals=2)
        s = str(spec).strip()
        low = s.lower().replace(" ", "")
        if low in ("yes/no", "yes_no", "yesno", "yes|no"):
            return cls(kind="yes_no")
        if low in ("bool", "boolean", "true/false", "true|false"):
            return cls(kind="bool")
        m = re.fullmatch(r"(int|float)?:?([+-]?\d+)(?:-|\.\.)([+-]?\d+)(?::(\d))?", low)
        if m:
            kind = m.group(1) or "int"
            decimals = int(m.group(4)) if m.group(4) else (2 if kind == "float" else 0)
            if kind == "int" and m.group(4):
                raise InputError(
                    f"result type {s!r}: an int range takes no decimals; use float:{m.group(2)}-{m.group(3)}:{m.group(4)}"
                )
            rt = cls(kind=kind, lo=float(m.group(2)), hi=float(m.group(3)), decimals=decimals)
            rt.range()  # validates bounds
            return rt
        if low.startswith("labels:") or "|" in s or "," in s:
            body = s.split(":", 1)[1] if low.startswith("labels:") else s
            items = [x.strip() for x in re.split(r"[,|]", body) if x.strip()]
            labels, values = [], {}
            for it in items:
                name, _, val = it.partition("=")
                labels.append(name.strip())
                if val:
                    try:
                        values[name.strip()] = float(val)
                    except ValueError:
                        raise InputError(f"result type {s!r}: score of label {name!r} must be a number, got {val!r}") from None
            if values and len(values) != len(labels):
                raise InputError(f"result type {s!r}: give a score to every label or to none")
            from ..formats import Choice

            Choice(labels, values or None)  # same label rules as the choice format
            return cls(kind="labels", labels=labels, values=values or None)
        raise InputError(f"unknown result type {s!r}; use yes/no, bool, int:1-5, float:0-1 or labels:a,b,c")

    @classmethod
    def _from_dict(cls, d: dict) -> RatingType:
        kind = str(d.get("type", "yes_no"))
        if kind in ("yes_no", "bool"):
            return cls(kind=kind)
        if kind in ("int", "float"):
            default = (1, 5) if kind == "int" else (0, 1)
            lo: Any = d.get("min") if d.get("min") is not None else default[0]
            hi: Any = d.get("max") if d.get("max") is not None else default[1]
            rt = cls(kind=kind, lo=float(lo), hi=float(hi), decimals=0 if kind == "int" else int(d.get("decimals", 2)))
            rt.range()
            return rt
        if kind == "labels":
            from ..formats import Choice

            labels = [str(x) for x in d.get("labels") or []]
            values = d.get("label_values") or None
            Choice(labels, values)
            return cls(kind="labels", labels=labels, values={k: float(v) for k, v in values.items()} if values else None)
        raise InputError(f"unknown result type {kind!r}; use yes_no, bool, int, float or labels")

    def range(self) -> NumberRange:
        """The `NumberRange` of an int or float rating (unset bounds: 0..1); `InputError` for invalid bounds."""
        return NumberRange(self.lo if self.lo is not None else 0, self.hi if self.hi is not None else 1, self.decimals)

    def value_regex(self) -> str:
        """The regex of the `result` value: quoted yes/no or a quoted label, `true|false`, or the number range."""
        if self.kind == "yes_no":
            return '"(yes|no)"'
        if self.kind == "bool":
            return "(true|false)"
        if self.kind == "labels":
            return '"(' + "|".join(literal(x) for x in sorted(self.labels or [], key=len, reverse=True)) + ')"'
        return self.range().regex()

    def value_chars(self) -> int:
        """About how many characters the longest `result` value takes (for the action's token budget)."""
        if self.kind == "labels":
            return max(len(x) for x in self.labels or ["x"]) + 2
        if self.kind in ("int", "float"):
            return max(len(str(int(self.lo or 0))), len(str(int(self.hi or 0)))) + 1 + self.decimals
        return 5

    def type_name(self) -> str:
        """The field type as the prompt shows it (MLflow style)."""
        if self.kind == "yes_no":
            return "Literal['yes', 'no']"
        if self.kind == "bool":
            return "bool"
        if self.kind == "labels":
            return "Literal[" + ", ".join(repr(x) for x in self.labels or []) + "]"
        return self.kind

    def describe(self) -> str:
        """The `result` field as the prompt describes it, e.g. `the evaluation rating: an integer from 1 to 5`."""
        if self.kind == "yes_no":
            return 'the evaluation rating: "yes" or "no"'
        if self.kind == "bool":
            return "the evaluation rating: true or false"
        if self.kind == "labels":
            return "the evaluation rating: one of " + ", ".join(f'"{x}"' for x in self.labels or [])
        r = self.range()
        if self.kind == "int":
            return f"the evaluation rating: an integer from {r.lo:g} to {r.hi:g}"
        return f"the evaluation rating: a number from {r.lo:g} to {r.hi:g} with at most {r.decimals} decimals"

    def example(self) -> str:
        """An example `result` value as JSON: `"yes"`, `true`, the first label (quoted) or the range's maximum."""
        if self.kind == "yes_no":
            return '"yes"'
        if self.kind == "bool":
            return "true"
        if self.kind == "labels":
            return f'"{(self.labels or ["?"])[0]}"'
        return f"{self.range().hi:g}"

    def check(self, value: Any, fmt: str, text: str) -> str | bool | int | float:
        """A raw `result` value → the typed rating, or `ParseError`."""
        if self.kind == "yes_no":
            if not isinstance(value, str) or value.strip().lower() not in ("yes", "no"):
                raise ParseError(fmt, f"result must be 'yes' or 'no', got {value!r}", text)
            return value.strip().lower()
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            raise ParseError(fmt, f"result must be true or false, got {value!r}", text)
        if self.kind == "labels":
            s = as_text(value, fmt, "result", text).strip()
            for lab in self.labels or []:
                if s.lower() == lab.lower():
                    return lab
            raise ParseError(fmt, f"result must be one of {self.labels}, got {value!r}", text)
        x = self.range().check(as_number(value, fmt, "result", text), fmt, text)
        return int(x) if self.kind == "int" else x

    def normalise(self, value: Any) -> float | None:
        """A checked rating as a score in [0, 1]: yes/true 1.0, no/false 0.0, numbers scaled over the range,
        labels by their values (None when the labels carry none)."""
        if self.kind == "yes_no":
            return 1.0 if value == "yes" else 0.0
        if self.kind == "bool":
            return 1.0 if value else 0.0
        if self.kind == "labels":
            return self.values[value] if self.values else None
        return self.range().normalise(float(value))

    def spec(self) -> dict[str, Any]:
        """The rating type as a dict without its unset fields (for specs and cache keys)."""
        return self.model_dump(exclude_none=True)


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
