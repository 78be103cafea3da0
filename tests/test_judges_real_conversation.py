"""Built-in judges on the real default model (SmolLM2-135M), two examples each: DeepEval's several-call conversation
programs (kind deepeval_conversation): knowledge retention, conversation completeness, role and topic adherence, goal
accuracy, and the turn-level RAG metrics. The cases are judged together by the batched runner, once per module; each
is its own test (tests/judges_real_cases.py `group_tests`)."""

from __future__ import annotations

import pytest
from judges_real_cases import group_tests

pytestmark = pytest.mark.model
results, test_builtin_judge_gives_a_typed_scored_result_on_the_real_model = group_tests("conversation")
