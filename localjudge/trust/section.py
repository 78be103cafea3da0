"""`TrustSection`: one judge's trust figures as sentences, what judge_trust.py makes and the report (report/build.py,
a layer above) shows in "How far to trust the numbers"."""

from __future__ import annotations

from pydantic import BaseModel


class TrustSection(BaseModel):
    """One judge's trust figures as sentences: `lines` are shown as they are, `flagged` ones (a significant bias)
    stand out."""

    judge: str
    lines: list[str]
    flagged: list[str] = []
