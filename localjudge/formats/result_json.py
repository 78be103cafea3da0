"""`result_json`: `{"rationale": str, "result": <bool | number>}` for the instructions judge.

MLflow's field-based instructions judge asks for a JSON object with `rationale` and `result`, where
the result's type is the user's choice. yes/no and label results use `YesNoJSON` and `Choice`;
this format covers the typed ones: a JSON boolean, or a number in a closed range
(integers, or decimals with a fixed number of places), constrained like every other format.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from ..errors import InputError, ParseError
from .base import JSON_STR, NumberRange, OutputFormat, as_number, as_text, first_json_with, number_schema, object_schema

_TRUE = {"true", "yes", "y", "pass", "1"}
_FALSE = {"false", "no", "n", "fail", "0"}


class ResultVerdict(BaseModel):
    """A rationale and a typed result (a bool or a number)."""

    rationale: str
    result: bool | float


class ResultJSON(OutputFormat):
    """Rationale first, then a typed result: `bool`, `int` (min..max) or `float` (min..max, decimals)."""

    kind = "result_json"

    def __init__(
        self,
        type: Literal["bool", "int", "float"] = "bool",
        min: float | None = None,
        max: float | None = None,
        decimals: int = 2,
        field_tokens: int = 80,
    ):
        super().__init__(field_tokens)
        if type not in ("bool", "int", "float"):
            raise InputError(f"result_json type must be bool, int or float, got {type!r}")
        self.type = type
        self.range: NumberRange | None = None
        if type != "bool":
            if min is None or max is None:
                raise InputError(f"a {type} result needs min and max so it can be constrained; add both")
            self.range = NumberRange(min, max, 0 if type == "int" else decimals)

    def regex(self) -> str:
        """`{"rationale": "...", "result": V}`: V is `true|false`, or a number enumerated over min..max."""
        value = "(true|false)" if self.range is None else self.range.regex()
        return r'\{"rationale": "' + JSON_STR + r'", "result": ' + value + r"\}"

    def json_schema(self) -> dict[str, Any]:
        """`{"rationale": string, "result": boolean | min..max}` (decimals as `multipleOf`)."""
        r = self.range
        result = {"type": "boolean"} if r is None else number_schema(r.lo, r.hi, r.decimals)
        return object_schema({"rationale": {"type": "string"}, "result": result})

    def parse(self, text: str) -> ResultVerdict:
        """The first JSON object with `result`: a bool result takes true/false, yes/no, y/n, pass/fail or 1/0
        (as JSON or text, any case); a number must lie in min..max (an integer for int). The rationale is optional."""
        o = first_json_with(text, self.kind, ("result",))
        raw = o["result"]
        rationale = as_text(o.get("rationale"), self.kind, "rationale", text)
        if self.range is None:
            if isinstance(raw, bool):
                return ResultVerdict(rationale=rationale, result=raw)
            s = str(raw).strip().lower()
            if s in _TRUE or s in _FALSE:
                return ResultVerdict(rationale=rationale, result=s in _TRUE)
            raise ParseError(self.kind, f"result must be true or false, got {raw!r}", text)
        x = self.range.check(as_number(raw, self.kind, "result", text), self.kind, text)
        return ResultVerdict(rationale=rationale, result=x)

    def normalise(self, v: ResultVerdict) -> float:
        """A bool as 1.0 / 0.0; a number scaled to [0, 1] as (x − min) / (max − min)."""
        if self.range is None:
            return 1.0 if v.result else 0.0
        return self.range.normalise(float(v.result))

    def value(self, v: ResultVerdict) -> Any:
        """The result as a bool, an int or a float, per `type`."""
        if self.range is None:
            return bool(v.result)
        return int(v.result) if self.type == "int" else float(v.result)

    def rationale(self, v: ResultVerdict) -> str:
        """The rationale (possibly empty)."""
        return v.rationale

    def params(self) -> dict[str, Any]:
        """type and field_tokens; min and max for numbers; decimals for floats."""
        p: dict[str, Any] = {"type": self.type}
        if self.range is not None:
            p.update(min=self.range.lo, max=self.range.hi)
            if self.type == "float":
                p["decimals"] = self.range.decimals
        return {**p, **super().params()}
