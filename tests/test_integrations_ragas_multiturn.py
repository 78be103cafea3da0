"""A localjudge judge as a RAGAS multi-turn metric: `MultiTurnSample` <-> `Conversation`, and a real
`ragas.evaluate` over two multi-turn samples with the default model."""

from __future__ import annotations

import math
import warnings

import pytest

pytest.importorskip("ragas")

from ragas.dataset_schema import MultiTurnSample  # noqa: E402
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage  # noqa: E402
from ragas.metrics.base import MetricType  # noqa: E402

from localjudge.conversations import from_ragas  # noqa: E402
from localjudge.engine.base import ScriptedEngine  # noqa: E402
from localjudge.errors import InputError  # noqa: E402
from localjudge.integrations.ragas_multiturn import LocalJudgeMultiTurnMetric, judge_values, to_ragas  # noqa: E402

SAMPLES = [
    MultiTurnSample(
        user_input=[
            HumanMessage(content="Book a table for 2 at Golden Dragon at 8pm."),
            AIMessage(content="Booking it.", tool_calls=[ToolCall(name="book", args={"name": "Golden Dragon", "n": 2})]),
            ToolMessage(content="Booked for 20:00."),
            AIMessage(content="Your table at Golden Dragon is booked for 8pm."),
        ],
        reference="A table for 2 at Golden Dragon is booked for 8pm.",
        reference_tool_calls=[ToolCall(name="book", args={"name": "Golden Dragon", "n": 2})],
    ),
    MultiTurnSample(
        user_input=[
            HumanMessage(content="What's the weather in Paris?"),
            AIMessage(content="Sorry, I cannot check the weather."),
        ],
        reference="The user learns the weather in Paris.",
    ),
]


def test_a_sample_converts_to_a_conversation_and_back_unchanged():
    for s in SAMPLES:
        assert to_ragas(from_ragas(s)) == s


def test_a_judge_needing_what_a_sample_lacks_is_a_clear_error():
    metric = LocalJudgeMultiTurnMetric("topic_adherence", engine=ScriptedEngine([]))
    assert metric._required_columns[MetricType.MULTI_TURN] == {"user_input", "reference_topics"}
    with pytest.raises(InputError, match="'reference_topics'"):
        judge_values(metric.bound.judge, SAMPLES[0])


def test_scripted_outputs_give_the_judges_score_through_the_metric():
    import asyncio

    engine = ScriptedEngine(['{"user_goal": "book", "end_state": "booked"}', '{"reason": "same", "verdict": "1"}'])
    metric = LocalJudgeMultiTurnMetric("agent_goal_accuracy", engine=engine)
    assert metric._required_columns[MetricType.MULTI_TURN] == {"user_input", "reference"}
    assert asyncio.run(metric.multi_turn_ascore(SAMPLES[0])) == 1.0
    assert "Human: Book a table" in engine.prompts[0][-1].content
    assert "A table for 2 at Golden Dragon is booked for 8pm." in engine.prompts[1][-1].content


@pytest.mark.model
@pytest.mark.slow
def test_real_ragas_evaluate_scores_two_multi_turn_samples_with_the_default_model(_localjudge_home):
    from ragas import EvaluationDataset, evaluate

    from localjudge.engine import load_engine

    engine = load_engine(n_threads=1)
    metrics = [
        LocalJudgeMultiTurnMetric("agent_goal_accuracy", engine=engine),
        LocalJudgeMultiTurnMetric("agent_goal_accuracy_without_reference", engine=engine),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result = evaluate(EvaluationDataset(samples=SAMPLES), metrics=metrics, show_progress=False, raise_exceptions=True)
    df = result.to_pandas()
    assert len(df) == 2
    for col in ("agent_goal_accuracy", "agent_goal_accuracy_without_reference"):
        assert all(math.isnan(x) or x in (0.0, 1.0) for x in df[col]), (col, df[col].tolist())
        assert not all(math.isnan(x) for x in df[col]), (col, df[col].tolist())
