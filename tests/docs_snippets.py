"""Reading the fenced code snippets out of the docs pages (docs/*.md, README.md, CONTRIBUTING.md), for the
tests that run them verbatim and for the check that every python/bash snippet is run or listed with a reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Snippet:
    """One fenced block: the page it is on (relative to the repository root), its language and its code."""

    page: str
    lang: str
    code: str


def page_text(page: str) -> str:
    """A page's Markdown, by its path relative to the repository root (e.g. "docs/serve.md")."""
    return (ROOT / page).read_text(encoding="utf-8")


def fenced(text: str, page: str = "") -> list[Snippet]:
    """Every fenced code block of `text`, in order (its language as written after the fence, or "")."""
    return [Snippet(page, m.group(2).lower(), m.group(3)) for m in FENCE.finditer(text)]


def section(page: str, heading: str) -> str:
    """The text under an H2 heading of a page, up to the next H2 (its H3 subsections included).
    Fails loudly if the heading is gone: a snippet test must never pass on an empty section."""
    text = page_text(page)
    marker = f"## {heading}\n"
    if marker not in text:
        raise AssertionError(f"{page} has no heading '## {heading}'")
    return text.split(marker, 1)[1].split("\n## ", 1)[0]


def section_snippets(page: str, heading: str, lang: str = "python") -> list[str]:
    """The code of every `lang` snippet under the H2 `heading` of `page`, in order."""
    return [s.code for s in fenced(section(page, heading), page) if s.lang == lang]


def doc_pages() -> list[str]:
    """Every page the docs site and the repository show to users: docs/*.md, README.md, CONTRIBUTING.md."""
    return sorted(str(p.relative_to(ROOT)) for p in DOCS.glob("*.md")) + ["README.md", "CONTRIBUTING.md"]
