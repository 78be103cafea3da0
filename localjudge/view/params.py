"""The view's numeric query parameters, every one read through `parse`: a finite number inside the parameter's
range, or an InputError (the view answers 400) of one line naming the parameter and the range it takes.

The ranges live here, beside the checker, so a route cannot read a number without one. A parameter's text is cut at
`MAX_CHARS` before it is parsed or quoted back."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

MAX_CHARS = 32  # longer than any number a parameter takes; quoted back cut to this
MAX_INDEX = 2**62  # page, pos, expand: SQLite's 64-bit integers hold (page - 1) * per and row numbers below it


@dataclass(frozen=True)
class Range:
    """What a parameter takes: integers or reals from `lo` to `hi` (`open_lo`/`open_hi`: that end left out), and
    an example for the error line."""

    lo: float
    hi: float
    integer: bool = True
    open_lo: bool = False
    open_hi: bool = False
    example: str = ""

    def text(self) -> str:
        kind = "an integer" if self.integer else "a number"
        left, right = "(" if self.open_lo else "[", ")" if self.open_hi else "]"
        tail = f", like {self.example}" if self.example else ""
        return f"{kind} in {left}{self.lo:g}, {self.hi:g}{right}{tail}"

    def holds(self, x: float) -> bool:
        above = x > self.lo if self.open_lo else x >= self.lo
        below = x < self.hi if self.open_hi else x <= self.hi
        return above and below


MIN_WIDTH = 1e-4  # a target ±0.01 points: already some 10^8 labels; below it the answer means nothing

RANGES: dict[str, Range] = {
    "page": Range(1, MAX_INDEX),
    "per": Range(1, 500),
    "pos": Range(0, MAX_INDEX),
    "expand": Range(0, MAX_INDEX),
    "seed": Range(0, 2**63 - 1),
    "budget": Range(0, 10_000_000),  # 0: the default; active.py checks it against the judge's scored rows
    "width": Range(MIN_WIDTH, 1, integer=False, open_hi=True, example="0.05 for ±5 points"),
}


def integer(request: Any, name: str, default: int) -> int:
    """The integer query parameter `name` (one of RANGES), `default` when absent or empty."""
    return int(parse(name, request.query_params.get(name), default))


def real(request: Any, name: str, default: float) -> float:
    """The real query parameter `name` (one of RANGES), `default` when absent or empty."""
    return float(parse(name, request.query_params.get(name), default))


def parse(name: str, raw: str | None, default: float) -> float:
    """`raw`, the text of parameter `name`, checked against RANGES[name]; `default` when None or empty."""
    rng = RANGES[name]
    if raw is None or raw == "":
        return default
    cut = raw[:MAX_CHARS]
    try:
        x: float = int(cut) if rng.integer else float(cut)
    except ValueError:
        raise InputError(f"parameter {name}={cut!r} must be {rng.text()}") from None
    if len(raw) > MAX_CHARS or not math.isfinite(x) or not rng.holds(x):
        why = (
            f"is longer than {MAX_CHARS} characters"
            if len(raw) > MAX_CHARS
            else "is not finite"
            if not math.isfinite(x)
            else "is too large"
            if x > rng.lo
            else "is too small"
        )
        raise InputError(f"parameter {name}={cut!r} {why}: it must be {rng.text()}")
    return x
