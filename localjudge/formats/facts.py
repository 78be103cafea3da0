"""What a result's format says about the results, asked from its typed spec (`FormatSpec`, what a stored result
carries): how they compare with human labels, whether they pick one of two responses, the range a score lies in.

Each answer is the format's own (`OutputFormat.label_kind`, `is_pairwise`, `score_range`); this module only finds
the format a spec names, so agreement, labels, reports, trust and integrations never read a format string.
A spec whose kind is not installed (a plugin format gone) has no facts: each function says what it answers then.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..store.format_spec import FormatSpec
from .base import LabelKind, NumberRange, OutputFormat


def as_spec(fmt: FormatSpec | OutputFormat | dict[str, Any] | None) -> FormatSpec | None:
    """A typed spec from a spec, a format, or the flat dict `OutputFormat.spec()` gives (None for anything else)."""
    if isinstance(fmt, FormatSpec) or fmt is None:
        return fmt
    if isinstance(fmt, OutputFormat):
        return fmt.format_spec()
    return FormatSpec.from_flat(fmt)


def _class(spec: FormatSpec | None) -> type[OutputFormat] | None:
    from . import format_class

    return format_class(spec.kind) if spec is not None else None


def label_kind(fmt: FormatSpec | OutputFormat | dict[str, Any] | None) -> tuple[LabelKind, list[Any] | None] | None:
    """How results of this format compare with labels, and the values it can produce (None: any); None when the
    format does not say (the results' values decide) or is not installed."""
    spec = as_spec(fmt)
    cls = _class(spec)
    return cls.label_kind(spec.params) if cls is not None and spec is not None else None


def is_pairwise(fmt: FormatSpec | OutputFormat | dict[str, Any] | None) -> bool:
    """Whether results of this format pick the better of two responses (False when not installed)."""
    spec = as_spec(fmt)
    cls = _class(spec)
    return cls is not None and spec is not None and cls.is_pairwise(spec.params)


def score_range(fmt: FormatSpec | OutputFormat | dict[str, Any] | None) -> NumberRange | None:
    """The closed range a result's number lies in; None when the format has none, is not installed, or its
    spec does not build (a spec read from an old store that lacks a parameter)."""
    if isinstance(fmt, OutputFormat):
        return fmt.score_range()
    spec = as_spec(fmt)
    if _class(spec) is None or spec is None:
        return None
    from . import make_format

    try:
        return make_format(spec).score_range()
    except (InputError, ValueError):
        return None
