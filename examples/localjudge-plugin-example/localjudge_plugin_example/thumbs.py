"""The `thumbs` output format: a one-line reason, then a thumb up or down.

    reason: the reply answers the question and is polite
    thumb: up

Up is a pass (score 1.0), down a fail (0.0). The constraint is a regex, so a llama: model can only
write these two lines; the parser is lenient for text produced without it (any case, extra spaces,
a bare "up"/"down", or the thumbs emoji).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

from localjudge.errors import ParseError
from localjudge.formats import OutputFormat
from localjudge.formats.base import FREE_LINE, LabelKind


class ThumbsVerdict(BaseModel):
    """A thumb up or down, and the reason given for it ("" when none)."""

    thumb: Literal["up", "down"]
    reason: str = ""


class Thumbs(OutputFormat):
    """`reason: <one line>` then `thumb: up|down`; `reason=False`: the thumb line alone (the fast variant)."""

    kind = "thumbs"
    value_prefix = "thumb: "  # the text just before the verdict: probability-weighted scores read the next token

    _THUMB = re.compile(r"^\W*thumbs?\W*[:=]?\s*\**\s*(up|down)\b", re.I | re.M)
    _BARE = re.compile(r"^\W*(up|down|👍|👎)\W*$", re.I | re.M)
    _REASON = re.compile(r"^\W*reason\W*[:=]\s*(.*)$", re.I | re.M)

    def __init__(self, field_tokens: int = 60, reason: bool = True):
        super().__init__(field_tokens)
        self.with_reason = reason

    def regex(self) -> str:
        """The two lines, the thumb being `up` or `down`."""
        thumb = "thumb: (up|down)"
        return ("reason: " + FREE_LINE + r"\n" + thumb) if self.with_reason else thumb

    def n_free_fields(self) -> int:
        """1 for the reason; 0 in the thumb-only variant."""
        return 1 if self.with_reason else 0

    def parse(self, text: str) -> ThumbsVerdict:
        """The `thumb:` line (or a bare up/down/👍/👎 line) and the `reason:` line if any; else `ParseError`."""
        m = self._THUMB.search(text) or self._BARE.search(text)
        if m is None:
            raise ParseError(self.kind, "no 'thumb: up' or 'thumb: down' line", text)
        word = m.group(1).lower()
        thumb: Literal["up", "down"] = "up" if word in ("up", "👍") else "down"
        r = self._REASON.search(text)
        return ThumbsVerdict(thumb=thumb, reason=r.group(1).strip() if r else "")

    def normalise(self, verdict: Any) -> float:
        """up → 1.0, down → 0.0."""
        return 1.0 if verdict.thumb == "up" else 0.0

    def value(self, verdict: Any) -> str:
        """`up` or `down`."""
        return str(verdict.thumb)

    def rationale(self, verdict: Any) -> str | None:
        """The reason line, or None when there was none."""
        return verdict.reason or None

    def value_scores(self) -> dict[str, float]:
        """`up` → 1.0, `down` → 0.0 (the token after `thumb: `)."""
        return {"up": 1.0, "down": 0.0}

    def fast(self) -> Thumbs:
        """The thumb line alone."""
        return Thumbs(self.field_tokens, reason=False)

    def params(self) -> dict[str, Any]:
        """field_tokens, plus `reason: False` in the thumb-only variant."""
        return {**super().params(), **({} if self.with_reason else {"reason": False})}

    @classmethod
    def label_kind(cls, params: Mapping[str, Any]) -> tuple[LabelKind, list[Any] | None]:
        """Categorical against human labels: up or down."""
        return "categorical", ["up", "down"]
