"""docs/trust.md ("How much to trust the numbers"): every Python snippet run verbatim in its own process (scripted
judges, so the printed figures are the page's), and every shell block introduced by the reason it is not run here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "trust.md"
EXPECTED = [  # what each snippet prints, in page order
    ["observed 62.0%, TPR 85%, TNR 80%", "corrected 64.6% ["],
    ["['relevance_to_query', 'relevance_to_query@a', 'relevance_to_query@b', 'relevance_to_query@c']", "0.0 -0.5"],
    ["0.5 1"],
    ["0.5 1", "['yes', 'no']"],
    ["C = 0.", "escalated, agreement on trusted"],
]


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_page_is_titled_and_every_shell_block_says_why_it_is_not_run_here():
    text = PAGE.read_text(encoding="utf-8")
    assert text.startswith("# How much to trust the numbers\n")
    assert len(snippets()) == len(EXPECTED)
    for m in re.finditer(r"```console\n", text):
        before = text[: m.start()].rsplit("\n\n", 2)[-2:]
        assert "not run by the docs test" in " ".join(before).lower(), text[m.start() - 300 : m.start()]


@pytest.mark.system
@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_each_snippet_runs_and_prints_what_the_page_says(tmp_path: Path, index: int):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", snippets()[index]], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    for needle in EXPECTED[index]:
        assert needle in r.stdout, r.stdout
