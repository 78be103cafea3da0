"""What a human may answer for a judge's cells, and the checks every label passes before it is stored.

`value_domain`/`judge_domain`: the values (and the labelling view's key for each) of a judge, from its format and
kind; `validate_label_fields`: the one set of field checks shared by the view's label API and `labels import`
(types, bounds, the judge's domain, the sampling probability of an `active` label), each failure one line naming
the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..errors import InputError
from ..formats.facts import score_range
from ..store.format_spec import FormatSpec, legacy_format_spec
from ..store.labels import SAMPLE_KINDS, SampleKind

if TYPE_CHECKING:
    from ..store.results import ResultRow


class Domain(BaseModel):
    """The values a human may give a judge's cells, with the key that gives each in the labelling view."""

    kind: Literal["categorical", "numeric", "pairwise"]
    values: list[Any]
    keys: list[str]


def value_domain(fmt: FormatSpec | str | None, kind: str, allowed: list[Any] | None, seen: Sequence[Any] = ()) -> Domain:
    """The label domain of a judge from its format (a typed spec; a `describe()` string from before it is read by
    the store's legacy reader), the kind and values agreement.judge_kind found, and values seen in its results
    (for a choice judge whose labels are not known). A numeric judge's range is its format's (1..5 when unknown)."""
    if kind == "pairwise":
        return Domain(kind="pairwise", values=[1, 2, "tie"], keys=["1", "2", "t"])
    if kind == "numeric":
        rng = score_range(legacy_format_spec(fmt) if isinstance(fmt, str) else fmt)
        lo, hi = (float(rng.lo), float(rng.hi)) if rng else (1.0, 5.0)
        decimals = rng.decimals if rng else 0
        if decimals == 0 and lo.is_integer() and hi.is_integer() and 0 < hi - lo + 1 <= 10:
            ints = list(range(int(lo), int(hi) + 1))
            keys = [str(v) for v in ints] if 0 <= lo and hi <= 9 else list("1234567890"[: len(ints)])
            return Domain(kind="numeric", values=ints, keys=keys)
        # a continuous range: five evenly spaced points keyed 1-5
        vals = [round(lo + (hi - lo) * i / 4, 3) for i in range(5)]
        return Domain(kind="numeric", values=vals, keys=["1", "2", "3", "4", "5"])
    values = list(allowed) if allowed else sorted({str(v) for v in seen if v is not None})[:9]
    if values == ["yes", "no"]:
        return Domain(kind="categorical", values=values, keys=["y", "n"])
    return Domain(kind="categorical", values=values, keys=[str(i + 1) for i in range(len(values))])


def judge_domain(rows: Sequence[ResultRow]) -> Domain | None:
    """The label domain of a judge from some of its stored results (the view reads the first 20), None when its
    results cannot be compared with labels (a statement list) or there are none."""
    from .agreement import judge_kind

    if not rows:
        return None
    try:
        kind, allowed = judge_kind(rows)
    except InputError:
        return None
    rec = rows[0].record_fields().get("format")
    fmt = legacy_format_spec(rec) if isinstance(rec, str) and rec.strip() else rows[0].result.format_spec
    return value_domain(fmt, kind, allowed, [r.result.value for r in rows])


# ----------------------------------------------------------------------------------- field checks

MAX_COMMENT_CHARS = 10_000
MAX_LABELLER_CHARS = 200
MAX_TIME_CHARS = 64
_MAX_ROW = 2**63 - 1


class LabelFields(BaseModel):
    """A label's fields after `validate_label_fields`: of the right types, bounded, in the judge's domain."""

    row_index: int
    value: Any = None
    comment: str | None = None
    labeller: str
    sample: SampleKind = "browse"
    labelled_at: str = ""
    probability: float | None = None


def _text(field: str, v: Any, limit: int) -> str:
    if not isinstance(v, str):
        raise InputError(f"field {field} must be text, got {type(v).__name__}")
    if len(v) > limit:
        raise InputError(f"field {field} has {len(v)} characters; at most {limit} are kept")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(f"field {field} holds a lone surrogate at character {e.start}, which is not valid Unicode") from None
    return v


def _in_domain(value: Any, domain: Domain | None, judge: str) -> Any:
    if value is None:  # withdraws the cell's label
        return None
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"field value={value!r} is not a finite number")
    if isinstance(value, str):
        _text("value", value, MAX_LABELLER_CHARS)
    if domain is None:
        if not isinstance(value, (str, int, float)):
            raise InputError(f"field value must be a single value for judge {judge!r}, got {type(value).__name__}")
        return value
    if domain.kind == "numeric":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"field value must be a number for judge {judge!r}")
        lo, hi = min(domain.values), max(domain.values)
        if not lo <= value <= hi:
            raise InputError(f"field value={value!r} is outside judge {judge!r}'s range {lo}..{hi}")
        return value
    if isinstance(value, (dict, list)) or not any(value == v and type(value) is type(v) for v in domain.values):
        shown = f"={value!r}" if isinstance(value, (str, int, float)) else f" (a {type(value).__name__})"
        raise InputError(f"field value{shown} is not a value of judge {judge!r}: {', '.join(map(str, domain.values))}")
    return value


def validate_label_fields(fields: Mapping[str, Any], domain: Domain | None, judge: str) -> LabelFields:
    """The checks every label passes before it is stored, by the view's label API and by `labels import` alike:
    `row_index` an integer (not a bool, a float or text), `value` None (a withdrawal) or one of the judge's values
    (a finite number in its range for a score judge), `comment` text of at most MAX_COMMENT_CHARS, `labeller`
    non-empty text of at most MAX_LABELLER_CHARS, `sample` one of SAMPLE_KINDS, `labelled_at` absent or an ISO
    8601 time; no text with a lone surrogate. InputError `field NAME ...` (one line) on the first bad field."""
    ri = fields.get("row_index")
    if not isinstance(ri, int) or isinstance(ri, bool):
        shown = repr(ri)[:40] if isinstance(ri, (str, int, float)) else f"a {type(ri).__name__}"
        raise InputError(f"field row_index must be an integer, got {shown}")
    if not 0 <= ri <= _MAX_ROW:
        raise InputError(f"field row_index={ri} is negative or too large (row numbers fit in 64 bits)"[:200])
    value = _in_domain(fields.get("value"), domain, judge)
    comment = fields.get("comment")
    if comment is not None:
        comment = _text("comment", comment, MAX_COMMENT_CHARS)
    labeller = fields.get("labeller")
    if labeller is not None and not isinstance(labeller, str):
        raise InputError(f"field labeller must be text, got {type(labeller).__name__}")
    if not isinstance(labeller, str) or not labeller.strip():
        raise InputError("field labeller is empty: type your name in the labeller box (key l)")
    labeller = _text("labeller", labeller, MAX_LABELLER_CHARS).strip()
    sample = fields.get("sample", "browse")
    if sample not in SAMPLE_KINDS:
        raise InputError(f"field sample must be one of {', '.join(SAMPLE_KINDS)}")
    prob = fields.get("probability")
    if prob is not None and (
        isinstance(prob, bool) or not isinstance(prob, (int, float)) or not math.isfinite(prob) or not 0 < prob <= 1
    ):
        raise InputError(
            f"field probability must be a number in (0, 1] (the row's sampling probability) or null, got {str(prob)[:40]!r}"
        )
    if prob is not None and sample != "active":
        raise InputError(f"field probability is for sample 'active' labels only, not {sample!r}; leave it out")
    if sample == "active" and prob is None:
        raise InputError("field probability is needed with sample 'active': the row's sampling probability from the active queue")
    when = fields.get("labelled_at")
    if when in (None, ""):
        when = ""
    else:
        when = _text("labelled_at", when, MAX_TIME_CHARS)
        try:
            datetime.fromisoformat(when)
        except ValueError:
            raise InputError(f"field labelled_at={when!r} is not an ISO 8601 time (like 2025-01-31T12:00:00+0000)") from None
    return LabelFields(
        row_index=ri,
        value=value,
        comment=comment,
        labeller=labeller,
        sample=sample,
        labelled_at=when,
        probability=None if prob is None else float(prob),
    )
