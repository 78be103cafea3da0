"""Judging your own app's answers in pytest, with a local model (CI runs this file: tests/test_testing_and_frames.py).

    pytest -p localjudge.testing examples/test_my_app.py

`assert_judge` fails with the verdict, score and rationale when a judge says no. Judgements are cached
in $LOCALJUDGE_HOME: running the suite again with the same answers loads no model and judges nothing.
The default model (SmolLM2-135M) checks form, not truth: it says "yes" to almost anything. Point
$LOCALJUDGE_TEST_MODEL at a larger GGUF for judgements you trust.
"""

from localjudge.testing import assert_judge

DOCS = {"What is the capital of France?": ["Paris is the capital and largest city of France."]}


def my_app(question: str) -> str:
    """Stands in for your application (a RAG pipeline, an agent, ...)."""
    return "Paris is the capital of France."


def test_answer_is_relevant_to_the_question():
    q = "What is the capital of France?"
    assert_judge("relevance_to_query", input=q, output=my_app(q), min_score=0.5)


def test_answer_is_grounded_in_the_retrieved_documents():
    q = "What is the capital of France?"
    assert_judge("groundedness", input=q, output=my_app(q), retrieval_context=DOCS[q])
