"""A reasoning answer's two parts: the think block (`reasoning_content`) and the answer (`content`), for a
whole answer (`split_reasoning`) and for one still being streamed (`ThinkSplit`: only prefixes the rest of
the text cannot change, so a stream never sends what it would have to take back)."""

from __future__ import annotations

import re

from ...formats.base import strip_think, think_text

_OPEN = re.compile(r"\A\s*<(think|thinking|reasoning)>")  # the opening markers strip_think knows
_TAGS = ("<think>", "<thinking>", "<reasoning>")


def split_reasoning(text: str) -> tuple[str | None, str]:
    """The whole answer of a reasoning request as (reasoning, content): the leading think block's inner text
    (None when there is none) and the text after it. A block opened but never closed (the request was
    cut off while thinking) is all reasoning."""
    reasoning = think_text(text)
    if reasoning is not None:
        return reasoning, strip_think(text)
    m = _OPEN.match(text)
    if m:
        return text[m.end() :].strip(), ""
    return None, text


class ThinkSplit:
    """The certain prefixes of a reasoning answer's two parts while it is still being written.

    `parts(text)` takes the whole text so far and returns (reasoning, content): each is a prefix of what
    `split_reasoning` will return for the finished text, so a stream may send what grew since the last
    call. `hold` characters at the end of the content are held back (a stop sequence may begin there)."""

    def __init__(self, hold: int = 0):
        self.hold = hold

    def parts(self, text: str) -> tuple[str, str]:
        """(reasoning so far, content so far) that the rest of the text cannot change."""
        m = _OPEN.match(text)
        if m is None:
            lead = text.lstrip()
            if any(tag.startswith(lead) for tag in _TAGS):  # may still become an opening marker
                return "", ""
            return "", text[: max(0, len(text) - self.hold)]
        close = f"</{m.group(1)}>"
        inner = text[m.end() :]
        end = inner.find(close)
        if end < 0:  # still thinking: an end that may be the start of the closing marker is held back
            part = next((k for k in range(min(len(close) - 1, len(inner)), 0, -1) if close.startswith(inner[-k:])), 0)
            return inner[: len(inner) - part].strip(), ""
        content = inner[end + len(close) :].lstrip()
        return inner[:end].strip(), content[: max(0, len(content) - self.hold)]
