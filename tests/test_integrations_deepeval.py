"""A local model as DeepEval's judge: real DeepEval metrics (Faithfulness, AnswerRelevancy, GEval) through
`deepeval.evaluate` and `metric.measure`, every answer decoded under the schema DeepEval asks for."""

from __future__ import annotations

import json

import pytest
from integrations_support import scripted

pytest.importorskip("deepeval")


@pytest.fixture
def deepeval_dir(tmp_path, monkeypatch):
    """DeepEval writes .deepeval/ in the working directory: keep it in a temporary one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEPEVAL_RESULTS_FOLDER", str(tmp_path / "results"))
    # DeepEval's own per-task deadline (180 s) makes a case's outcome depend on the machine's speed: on the busy
    # 2-core machine of a whole-suite run the real evaluate ran past it once (TimeoutError). A test's answer must not
    # depend on the clock, so DeepEval's timeouts are off here; every assertion stays.
    monkeypatch.setenv("DEEPEVAL_DISABLE_TIMEOUTS", "1")
    return tmp_path


CASES = [
    dict(
        input="What is the capital of France?",
        actual_output="Paris is the capital of France.",
        expected_output="Paris",
        retrieval_context=["Paris is the capital and largest city of France."],
    ),
    dict(
        input="Who wrote Hamlet?",
        actual_output="Hamlet was written by William Shakespeare around 1600.",
        expected_output="William Shakespeare",
        retrieval_context=["Hamlet is a tragedy written by William Shakespeare.", "It was written around 1600."],
    ),
]


def _metrics(llm, async_mode=True):
    from deepeval.metrics import AnswerRelevancyMetric, FaithfulnessMetric, GEval
    from deepeval.test_case import SingleTurnParams

    geval = GEval(
        name="Correctness",
        criteria="Is the actual output factually correct given the expected output?",
        evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT, SingleTurnParams.EXPECTED_OUTPUT],
        model=llm,
        async_mode=async_mode,
    )
    return [FaithfulnessMetric(model=llm, async_mode=async_mode), AnswerRelevancyMetric(model=llm, async_mode=async_mode), geval]


@pytest.mark.system
@pytest.mark.slow
def test_real_deepeval_evaluate_scores_every_case_with_the_default_model(deepeval_dir, engine):
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig
    from deepeval.test_case import LLMTestCase

    from localjudge.integrations.deepeval import LocalJudgeLLM

    llm = LocalJudgeLLM(field_tokens=32)
    result = evaluate(
        [LLMTestCase(**c) for c in CASES],
        metrics=_metrics(llm),
        async_config=AsyncConfig(run_async=True, max_concurrent=8),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
        cache_config=CacheConfig(write_cache=False, use_cache=False),
        error_config=ErrorConfig(ignore_errors=False),
    )
    assert len(result.test_results) == 2
    for tr in result.test_results:
        assert len(tr.metrics_data) == 3
        for md in tr.metrics_data:
            assert md.error is None, md.error  # no "invalid JSON": every answer was valid by construction
            assert md.score is not None and 0.0 <= md.score <= 1.0, (md.name, md.score)
            assert md.evaluation_model == "localjudge:smollm2-135m"


@pytest.mark.system
@pytest.mark.slow
def test_metric_measure_sync_mode_returns_a_score(deepeval_dir, engine):
    from deepeval.test_case import LLMTestCase

    from localjudge.integrations.deepeval import LocalJudgeLLM

    metric = _metrics(LocalJudgeLLM(field_tokens=32), async_mode=False)[2]  # GEval: steps, then the score
    score = metric.measure(LLMTestCase(**CASES[0]))
    assert metric.error is None and score == metric.score and 0.0 <= score <= 1.0
    assert float(metric.score * 10).is_integer()  # held to the integer 0..10 range GEval's prompt asks for


def test_generate_returns_the_validated_schema_instance_not_text():
    from deepeval.metrics.faithfulness.schema import Truths, Verdicts

    from localjudge.integrations.deepeval import LocalJudgeLLM

    answers = iter([json.dumps({"truths": ["a", "b"]}), '{"verdicts": [{"verdict": "yes", "reason": null}]}', json.dumps("free")])
    eng = scripted(lambda msgs, fmt: next(answers))
    llm = LocalJudgeLLM(engine=eng)
    t = llm.generate("Extract truths", schema=Truths)
    assert isinstance(t, Truths) and t.truths == ["a", "b"]
    v = llm.generate_with_schema("Judge", schema=Verdicts)
    assert isinstance(v, Verdicts) and v.verdicts[0].verdict == "yes"
    assert llm.generate("Say something") == "free"
    assert llm.get_model_name() == "localjudge:scripted"


def test_a_scripted_model_runs_real_metrics_with_nothing_to_repair(deepeval_dir):
    """The same metric code paths, with answers that are valid for each schema (a scripted engine sees the
    format DeepEval asked for and answers accordingly)."""
    from deepeval.test_case import LLMTestCase

    from localjudge.integrations.deepeval import LocalJudgeLLM

    def answer(msgs, fmt):
        title = fmt.schema.get("title")
        return json.dumps(
            {
                "Truths": {"truths": ["Paris is the capital of France."]},
                "Claims": {"claims": ["Paris is the capital of France."]},
                "Verdicts": {"verdicts": [{"verdict": "yes", "reason": "supported"}]},
                "Statements": {"statements": ["Paris is the capital of France."]},
                "FaithfulnessScoreReason": {"reason": "all claims supported"},
                "AnswerRelevancyScoreReason": {"reason": "relevant"},
                "Steps": {"steps": ["Compare the output with the expected output."]},
                "ReasonScore": {"reason": "correct", "score": 9},
            }[title]
        )

    llm = LocalJudgeLLM(engine=scripted(answer))
    scores = [m.measure(LLMTestCase(**CASES[0])) for m in _metrics(llm, async_mode=False)]
    assert scores == [1.0, 1.0, 0.9]
