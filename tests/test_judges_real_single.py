"""Built-in judges on the real default model (SmolLM2-135M), two examples each: every one-call kind (single, per_item,
v1_metric, four_line, two_stage) and the model-free tool-call matches. The cases are judged together by the batched
runner, once per module; each is its own test (tests/judges_real_cases.py `group_tests`)."""

from __future__ import annotations

import pytest
from judges_real_cases import OPTS, A, Q, group_tests

from localjudge.judges import make_custom_prompt_judge, make_instructions_judge

pytestmark = pytest.mark.model
results, test_builtin_judge_gives_a_typed_scored_result_on_the_real_model = group_tests("single")


def test_instructions_and_custom_prompt_judges_run_on_the_real_model(engine):
    j = make_instructions_judge("stars", "Rate from 1 to 5 how well {{ outputs }} answers {{ inputs }}.", "int", min=1, max=5)
    r = j.evaluate(engine, options=OPTS, inputs=Q, outputs=A)
    assert r.unscored_reason is None and r.value in range(1, 6) and r.score == (r.value - 1) / 4
    c = make_custom_prompt_judge(
        "formality",
        "Is this formal? <response>{{response}}</response>\n[[formal]] [[casual]]",
        numeric_values={"formal": 1, "casual": 0},
    )
    r = c.evaluate(engine, options=OPTS, response=A)
    assert r.value in ("formal", "casual") and r.score == (1.0 if r.value == "formal" else 0.0)
