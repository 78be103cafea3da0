"""CONTRIBUTING's "How to add a judge", followed: a judge is a data file of one of the kinds; each kind is one row of
`judges.kinds.KINDS`, and nothing else in the package behaves by a kind's name."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import get_args

import pytest

from localjudge.errors import InputError
from localjudge.judges import get_judge
from localjudge.judges.kinds import KINDS, Kind

ROOT = Path(__file__).parent.parent
BUILTIN = ROOT / "localjudge" / "judges" / "builtin"

RECIPE_JUDGE = """\
name = "concise"
description = "Is the answer concise?"
template_style = "mustache"
pass_threshold = 0.5
[[variables]]
name = "output"
[[messages]]
role = "user"
template = '''Answer: {{output}}
Is this answer concise? Reply in JSON: {"rationale": "...", "result": "yes|no"}'''
[output]
kind = "yes_no_json"
field_tokens = 24
[source]
project = "localjudge tests"
url = "https://example.invalid/concise"
license = "Apache-2.0"
"""


def test_a_judge_file_written_by_the_recipe_loads_from_a_judges_dir_and_scores_an_output(tmp_path: Path):
    (tmp_path / "concise.toml").write_text(RECIPE_JUDGE)
    judge = get_judge("concise", judges_dir=tmp_path)
    assert judge.kind == "single" and judge.traits is KINDS["single"]
    res = judge.score_text('{"rationale": "short", "result": "yes"}', output="Paris.")
    assert (res.value, res.score, res.passed) == ("yes", 1.0, True)
    assert res.format_spec is not None and res.format_spec.kind == "yes_no_json"


def test_every_judge_kind_is_one_row_of_the_kinds_table_and_each_built_in_judge_has_its_kinds_traits():
    assert set(get_args(Kind)) == set(KINDS)
    seen = set()
    for path in sorted(BUILTIN.glob("[!_]*.toml")):
        kind = tomllib.loads(path.read_text()).get("kind", "single")
        judge = get_judge(path.stem)
        assert judge.traits is KINDS[kind], path.name
        seen.add(kind)
    # builder kinds (instructions, custom_prompt) come from factory.py; every other kind has built-in judge files
    assert seen == {k for k, t in KINDS.items() if t.built_from in (None, "metric", "match", "deepeval_geval")}


def test_a_kind_that_makes_several_calls_refuses_score_text_by_its_traits():
    judges = [get_judge(p.stem) for p in sorted(BUILTIN.glob("[!_]*.toml"))]
    several = [j for j in judges if j.traits.needs_model and not j.traits.single_call]
    several_kinds = {"per_item", "two_stage", "ragas_agent", "deepeval_agentic", "deepeval_conversation"}
    assert {j.kind for j in several} == several_kinds | {"deepeval_geval"}
    for j in several:
        with pytest.raises(InputError, match="makes several calls"):
            j.score_text("{}")
    model_free = [j for j in judges if not j.traits.needs_model]  # tool-call matching: no output to parse
    assert {j.kind for j in model_free} == {"tool_call_match"}
    for j in model_free:
        with pytest.raises(InputError, match="computes its score without a model"):
            j.score_text("{}")


KIND_TEST = re.compile(r"""kind\s*(==|!=|in|not in)\s*\(?\s*["'](""" + "|".join(KINDS) + r""")["']""")


def test_no_module_outside_the_kinds_table_tests_a_judge_kind_by_name():
    found = []
    for path in sorted((ROOT / "localjudge").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if KIND_TEST.search(line) and "fmt" not in line and "format" not in line:
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
