"""Built-in judges on the real default model (SmolLM2-135M), two examples each: the other several-call programs: DeepEval's agentic metrics (argument correctness, task completion, step efficiency, plan adherence), RAGAS's agent metrics and DeepEval's ConversationalGEval. Each result is valid, typed
and scored (tests/judges_real_cases.py `check_typed`).

The cases are judged together, as `localjudge run` judges rows: by the batched runner on an engine that decodes
several sequences side by side (`batch_engine`), once per module (`results`); each case is still its own test, named
after its judge and example."""

from __future__ import annotations

import pytest
from judges_real_cases import case_ids, check_typed, judged, selected_cases

from localjudge.judges import get_judge

pytestmark = pytest.mark.model
GROUP = "agentic"


@pytest.fixture(scope="module")
def results(request, batch_engine, tmp_path_factory):
    return judged(batch_engine, selected_cases(request, GROUP), tmp_path_factory.mktemp(GROUP))


@pytest.mark.parametrize("case", case_ids(GROUP), ids=lambda c: f"{c[0]}-{c[1] + 1}")
def test_builtin_judge_gives_a_typed_scored_result_on_the_real_model(results, batch_engine, case):
    check_typed(get_judge(case[0]), results[case], batch_engine)
