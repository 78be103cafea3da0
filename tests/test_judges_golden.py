"""Rendered prompts are byte-identical to the sources' own rendering (tests/golden/, written by
scripts/golden/make_golden.py from the seed files without using localjudge's renderer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localjudge.judges import get_judge, list_judges, make_custom_prompt_judge, make_instructions_judge, make_metric

GOLDEN = Path(__file__).parent / "golden"
CASES = json.loads((GOLDEN / "cases.json").read_text(encoding="utf-8"))
FACTORIES = {
    "make_metric": make_metric,
    "make_instructions_judge": make_instructions_judge,
    "make_custom_prompt_judge": make_custom_prompt_judge,
}


def serialise(messages) -> str:
    return "".join(f"===== {m.role} =====\n{m.content}\n" for m in messages)


def build(case):
    if case.get("factory"):
        return FACTORIES[case["factory"]["fn"]](**case["factory"]["args"])
    return get_judge(case["judge"])


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_rendered_prompt_is_byte_identical_to_source(case):
    judge = build(case)
    v = case["variables"]
    if case["call"] == "requests":
        text = "".join(serialise(m) for m in judge.requests(**v))
    elif case["call"] == "stage2":
        text = serialise(judge.render_stage_two(case["statements"], **v))
    else:
        text = serialise(judge.render(**v))
    expected = (GOLDEN / f"{case['case']}.txt").read_text(encoding="utf-8")
    assert text == expected


def test_every_builtin_judge_has_a_golden_file():
    # a model-free judge (tool-call matching) sends no prompt: there is nothing to render
    missing = [j.name for j in list_judges(plugins=False) if j.traits.needs_model and not (GOLDEN / f"{j.name}.txt").exists()]
    assert missing == []
