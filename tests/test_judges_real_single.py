"""Built-in judges on the real default model (SmolLM2-135M), two examples each: every one-call kind (single, per_item, v1_metric, four_line, two_stage) and the model-free tool-call matches. Each result is valid, typed
and scored (tests/judges_real_cases.py `check_typed`).

The cases are judged together, as `localjudge run` judges rows: by the batched runner on an engine that decodes
several sequences side by side (`batch_engine`), once per module (`results`); each case is still its own test, named
after its judge and example."""

from __future__ import annotations

import pytest
from judges_real_cases import OPTS, A, Q, case_ids, check_typed, judged, selected_cases

from localjudge.judges import get_judge, make_custom_prompt_judge, make_instructions_judge

pytestmark = pytest.mark.model
GROUP = "single"


@pytest.fixture(scope="module")
def results(request, batch_engine, tmp_path_factory):
    return judged(batch_engine, selected_cases(request, GROUP), tmp_path_factory.mktemp(GROUP))


@pytest.mark.parametrize("case", case_ids(GROUP), ids=lambda c: f"{c[0]}-{c[1] + 1}")
def test_builtin_judge_gives_a_typed_scored_result_on_the_real_model(results, batch_engine, case):
    check_typed(get_judge(case[0]), results[case], batch_engine)


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
