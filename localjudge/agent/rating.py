"""The trace judge's rating type: the user's result type (yes/no, bool, an int or float range, labels), parsed
from its spec, and how each kind constrains, describes, checks and normalises the `result` field (one behaviour
object per kind, `_BEHAVIOURS`, instead of tests of the kind in every method)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel

from ..errors import InputError, ParseError
from ..formats import NumberRange
from ..formats.base import as_number, as_text, literal

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

    def _behaviour(self) -> _Behaviour:
        return _BEHAVIOURS[self.kind]

    def value_regex(self) -> str:
        """The regex of the `result` value: quoted yes/no or a quoted label, `true|false`, or the number range."""
        return self._behaviour().value_regex(self)

    def value_chars(self) -> int:
        """About how many characters the longest `result` value takes (for the action's token budget)."""
        return self._behaviour().value_chars(self)

    def type_name(self) -> str:
        """The field type as the prompt shows it (MLflow style)."""
        return self._behaviour().type_name(self)

    def describe(self) -> str:
        """The `result` field as the prompt describes it, e.g. `the evaluation rating: an integer from 1 to 5`."""
        return "the evaluation rating: " + self._behaviour().describe(self)

    def example(self) -> str:
        """An example `result` value as JSON: `"yes"`, `true`, the first label (quoted) or the range's maximum."""
        return self._behaviour().example(self)

    def check(self, value: Any, fmt: str, text: str) -> str | bool | int | float:
        """A raw `result` value → the typed rating, or `ParseError`."""
        return self._behaviour().check(self, value, fmt, text)

    def normalise(self, value: Any) -> float | None:
        """A checked rating as a score in [0, 1]: yes/true 1.0, no/false 0.0, numbers scaled over the range,
        labels by their values (None when the labels carry none)."""
        return self._behaviour().normalise(self, value)

    def spec(self) -> dict[str, Any]:
        """The rating type as a dict without its unset fields (for specs and cache keys)."""
        return self.model_dump(exclude_none=True)


# ------------------------------------------------------------------------------ each kind's behaviour


class _Behaviour:
    """How one rating kind constrains, describes, checks and scores the `result` value (the default: a number in the range)."""

    def value_regex(self, r: RatingType) -> str:
        return r.range().regex()

    def value_chars(self, r: RatingType) -> int:
        return 5

    def type_name(self, r: RatingType) -> str:
        return r.kind

    def describe(self, r: RatingType) -> str:
        raise NotImplementedError

    def example(self, r: RatingType) -> str:
        return f"{r.range().hi:g}"

    def check(self, r: RatingType, value: Any, fmt: str, text: str) -> str | bool | int | float:
        raise NotImplementedError

    def normalise(self, r: RatingType, value: Any) -> float | None:
        return r.range().normalise(float(value))


class _YesNo(_Behaviour):
    def value_regex(self, r: RatingType) -> str:
        return '"(yes|no)"'

    def type_name(self, r: RatingType) -> str:
        return "Literal['yes', 'no']"

    def describe(self, r: RatingType) -> str:
        return '"yes" or "no"'

    def example(self, r: RatingType) -> str:
        return '"yes"'

    def check(self, r: RatingType, value: Any, fmt: str, text: str) -> str:
        if not isinstance(value, str) or value.strip().lower() not in ("yes", "no"):
            raise ParseError(fmt, f"result must be 'yes' or 'no', got {value!r}", text)
        return value.strip().lower()

    def normalise(self, r: RatingType, value: Any) -> float:
        return 1.0 if value == "yes" else 0.0


class _Bool(_Behaviour):
    def value_regex(self, r: RatingType) -> str:
        return "(true|false)"

    def type_name(self, r: RatingType) -> str:
        return "bool"

    def describe(self, r: RatingType) -> str:
        return "true or false"

    def example(self, r: RatingType) -> str:
        return "true"

    def check(self, r: RatingType, value: Any, fmt: str, text: str) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ParseError(fmt, f"result must be true or false, got {value!r}", text)

    def normalise(self, r: RatingType, value: Any) -> float:
        return 1.0 if value else 0.0


class _Labels(_Behaviour):
    def value_regex(self, r: RatingType) -> str:
        return '"(' + "|".join(literal(x) for x in sorted(r.labels or [], key=len, reverse=True)) + ')"'

    def value_chars(self, r: RatingType) -> int:
        return max(len(x) for x in r.labels or ["x"]) + 2

    def type_name(self, r: RatingType) -> str:
        return "Literal[" + ", ".join(repr(x) for x in r.labels or []) + "]"

    def describe(self, r: RatingType) -> str:
        return "one of " + ", ".join(f'"{x}"' for x in r.labels or [])

    def example(self, r: RatingType) -> str:
        return f'"{(r.labels or ["?"])[0]}"'

    def check(self, r: RatingType, value: Any, fmt: str, text: str) -> str:
        s = as_text(value, fmt, "result", text).strip()
        for lab in r.labels or []:
            if s.lower() == lab.lower():
                return lab
        raise ParseError(fmt, f"result must be one of {r.labels}, got {value!r}", text)

    def normalise(self, r: RatingType, value: Any) -> float | None:
        return r.values[value] if r.values else None


class _Int(_Behaviour):
    """An integer in the rating's range."""

    def value_chars(self, r: RatingType) -> int:
        return max(len(str(int(r.lo or 0))), len(str(int(r.hi or 0)))) + 1 + r.decimals

    def describe(self, r: RatingType) -> str:
        rng = r.range()
        return f"an integer from {rng.lo:g} to {rng.hi:g}"

    def check(self, r: RatingType, value: Any, fmt: str, text: str) -> int | float:
        return int(r.range().check(as_number(value, fmt, "result", text), fmt, text))


class _Float(_Int):
    """A number in the rating's range, with at most its decimals."""

    def describe(self, r: RatingType) -> str:
        rng = r.range()
        return f"a number from {rng.lo:g} to {rng.hi:g} with at most {rng.decimals} decimals"

    def check(self, r: RatingType, value: Any, fmt: str, text: str) -> int | float:
        return r.range().check(as_number(value, fmt, "result", text), fmt, text)


_BEHAVIOURS: dict[str, _Behaviour] = {
    "yes_no": _YesNo(),
    "bool": _Bool(),
    "labels": _Labels(),
    "int": _Int(),
    "float": _Float(),
}
