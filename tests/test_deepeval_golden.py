"""DeepEval's several-call judges (knowledge retention, conversation completeness, role adherence, argument
correctness, task completion) have golden first prompts: tests/golden/<name>.txt is what the installed package's own metric sends
first for a fixed case (recorded from the real metric), and each judge's own first prompt for the same case is that
text, byte for byte."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

pytest.importorskip("deepeval")

ROOT = Path(__file__).resolve().parent.parent
make = importlib.import_module("scripts.golden.make_deepeval_golden")


@pytest.mark.parametrize("name", sorted(make.PORTS))
def test_the_first_prompt_is_the_golden_file_the_package_sent(name):
    from localjudge.judges import get_judge

    expected = (ROOT / "tests" / "golden" / f"{name}.txt").read_text(encoding="utf-8")
    assert expected == make.golden(name)
    (msg,) = get_judge(name).render(**make.variables(name))
    assert f"===== {msg.role} =====\n{msg.content}\n" == expected
