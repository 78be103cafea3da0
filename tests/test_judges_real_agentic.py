"""Built-in judges on the real default model (SmolLM2-135M), two examples each: the other several-call programs:
DeepEval's agentic metrics (argument correctness, task completion, step efficiency, plan adherence), RAGAS's agent
metrics and DeepEval's ConversationalGEval. The cases are judged together by the batched runner, once per module; each
is its own test (tests/judges_real_cases.py `group_tests`)."""

from __future__ import annotations

import pytest
from judges_real_cases import group_tests

pytestmark = pytest.mark.model
results, test_builtin_judge_gives_a_typed_scored_result_on_the_real_model = group_tests("agentic")
