"""A local model as RAGAS's LLM and embeddings: a real `ragas.evaluate` (faithfulness, answer relevancy)
and RAGAS 0.4's collections metrics, every answer decoded under the response model RAGAS asks for."""

from __future__ import annotations

import asyncio
import json
import math
import warnings

import pytest
from integrations_support import scripted

pytest.importorskip("ragas")

ROWS = [
    {
        "user_input": "What is the capital of France?",
        "response": "Paris is the capital of France.",
        "retrieved_contexts": ["Paris is the capital and largest city of France."],
    },
    {
        "user_input": "Who wrote Hamlet?",
        "response": "William Shakespeare wrote Hamlet.",
        "retrieved_contexts": ["Hamlet is a tragedy written by William Shakespeare."],
    },
]


def _in_unit(x: float) -> bool:
    return not math.isnan(x) and -1e-9 <= x <= 1 + 1e-9  # cosine similarity can overshoot 1 by rounding


@pytest.mark.model
@pytest.mark.slow
def test_real_ragas_evaluate_scores_every_row_with_the_default_model(engine):
    from ragas import EvaluationDataset, evaluate
    from ragas.metrics import answer_relevancy, faithfulness

    from localjudge.integrations.ragas import LocalEmbeddings, LocalJudgeRagasLLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result = evaluate(
            EvaluationDataset.from_list(ROWS),
            metrics=[faithfulness, answer_relevancy],
            llm=LocalJudgeRagasLLM(field_tokens=32),
            embeddings=LocalEmbeddings(),
            show_progress=False,
            raise_exceptions=True,
        )
    df = result.to_pandas()
    assert len(df) == 2
    for col in ("faithfulness", "answer_relevancy"):
        assert all(_in_unit(x) for x in df[col]), (col, df[col].tolist())


@pytest.mark.model
@pytest.mark.slow
def test_collections_metrics_score_every_row(engine):
    from ragas.metrics.collections import AnswerRelevancy, Faithfulness

    from localjudge.integrations.ragas import LocalEmbeddings, LocalJudgeRagasLLM

    llm = LocalJudgeRagasLLM(field_tokens=32)
    faith = Faithfulness(llm=llm)
    relevancy = AnswerRelevancy(llm=llm, embeddings=LocalEmbeddings(), strictness=2)

    async def score_all():
        jobs = [faith.ascore(**r) for r in ROWS]
        jobs += [relevancy.ascore(user_input=r["user_input"], response=r["response"]) for r in ROWS]
        return await asyncio.gather(*jobs)  # concurrent jobs share the one engine worker

    results = asyncio.run(score_all())
    assert len(results) == 4 and all(_in_unit(r.value) for r in results), [r.value for r in results]


def test_generate_returns_the_validated_response_model_and_binary_fields_stay_binary():
    from ragas.metrics.collections.faithfulness.util import NLIStatementOutput

    from localjudge.integrations.ragas import LocalJudgeRagasLLM, binary_schema

    seen = []

    def answer(msgs, fmt):
        seen.append(fmt.regex())
        return json.dumps({"statements": [{"statement": "s", "reason": "r", "verdict": 1}]})

    llm = LocalJudgeRagasLLM(engine=scripted(answer))
    out = llm.generate("judge these", NLIStatementOutput)
    assert isinstance(out, NLIStatementOutput) and out.statements[0].verdict == 1
    assert asyncio.run(llm.agenerate("again", NLIStatementOutput)) == out
    js = binary_schema(NLIStatementOutput)
    assert js["$defs"]["StatementFaithfulnessAnswer"]["properties"]["verdict"] == {
        "description": "the verdict(0/1) of the faithfulness",
        "title": "Verdict",
        "type": "integer",
        "minimum": 0,
        "maximum": 1,
    }
    assert '"verdict": (0|1)' in seen[0] or '"verdict": (1|0)' in seen[0] or '"verdict": [01]' in seen[0], seen[0][-200:]


def test_scripted_answers_run_a_collections_metric_end_to_end():
    from ragas.metrics.collections import Faithfulness

    from localjudge.integrations.ragas import LocalJudgeRagasLLM

    def answer(msgs, fmt):
        if fmt.schema["title"] == "StatementGeneratorOutput":
            return json.dumps({"statements": ["Paris is the capital of France.", "Paris is big."]})
        return json.dumps(
            {"statements": [{"statement": "Paris is the capital of France.", "reason": "stated", "verdict": 1},
                            {"statement": "Paris is big.", "reason": "not stated", "verdict": 0}]}
        )  # fmt: skip

    result = asyncio.run(Faithfulness(llm=LocalJudgeRagasLLM(engine=scripted(answer))).ascore(**ROWS[0]))
    assert result.value == 0.5


@pytest.mark.model
def test_local_embeddings_are_unit_vectors_from_the_local_model():
    import numpy as np

    from localjudge.integrations.ragas import LocalEmbeddings

    emb = LocalEmbeddings()
    a, b, c = emb.embed_documents(
        ["What is the capital of France?", "Which city is the capital of France?", "Bananas are yellow."]
    )
    assert len(a) == len(b) == len(c) > 100
    assert abs(np.linalg.norm(a) - 1) < 1e-4
    assert np.dot(a, b) > np.dot(a, c)  # the paraphrase is nearer than the unrelated sentence
    assert emb.embed_query("What is the capital of France?") == pytest.approx(a, abs=1e-5)
    assert asyncio.run(emb.aembed_text("What is the capital of France?")) == pytest.approx(a, abs=1e-5)
