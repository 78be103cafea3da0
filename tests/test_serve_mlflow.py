"""MLflow's own judges pointed at `localjudge serve` (OPENAI_API_BASE + `openai:/MODEL`, as a user sets it):
a real `mlflow.genai.evaluate` on real traces with retrieval spans, a temporary sqlite tracking store,
the built-in Correctness and RetrievalGroundedness plus one `make_judge` judge: every row gets a
feedback of the right form from every judge (the 135M model's judgement may be poor; its form never is)."""

from __future__ import annotations

from typing import Literal

import pytest

mlflow = pytest.importorskip("mlflow")

pytestmark = [pytest.mark.system, pytest.mark.slow]

DOCS = {"capital": "Paris is the capital and largest city of France.", "spider": "Spiders have eight legs and two body parts."}
DATA = [
    {"inputs": {"question": "What is the capital of France?"}, "expectations": {"expected_response": "Paris"}},
    {"inputs": {"question": "How many legs has a spider?"}, "expectations": {"expected_response": "Eight"}},
]


def test_mlflow_builtin_and_make_judge_judges_score_every_row(judge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_BASE", judge_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_MODEL_CATALOG_URI", "")
    from mlflow.entities import Document
    from mlflow.genai.judges import make_judge
    from mlflow.genai.scorers import Correctness, RetrievalGroundedness

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    model = f"openai:/{judge_server.model}"

    @mlflow.trace(span_type="RETRIEVER")
    def retrieve(question: str) -> list[Document]:
        return [Document(page_content=DOCS["capital" if "capital" in question else "spider"], metadata={"doc_uri": "kb"})]

    @mlflow.trace
    def predict_fn(question: str) -> str:
        retrieve(question)
        return "Paris." if "capital" in question else "Six."

    concise = make_judge(
        name="concise",
        instructions="Is the answer in {{ outputs }} a concise reply to the question in {{ inputs }}? Answer yes or no.",
        model=model,
        feedback_value_type=Literal["yes", "no"],
    )
    scorers = [Correctness(model=model), RetrievalGroundedness(model=model), concise]
    for s in scorers:
        s.timeout = 0  # a loaded CI box can be slow; MLflow's default per-scorer timeout is 300 s
    result = mlflow.genai.evaluate(data=DATA, predict_fn=predict_fn, scorers=scorers)
    df = result.result_df
    assert len(df) == 2
    for name in ("correctness", "retrieval_groundedness", "concise"):
        assert f"{name}/error_message" not in df or df[f"{name}/error_message"].isna().all(), df.get(f"{name}/error_message")
        values = df[f"{name}/value"].tolist()
        assert all(isinstance(v, str) and v.strip() for v in values), (name, values)
        assert all(isinstance(r, str) and r for r in df[f"{name}/rationale"].tolist())
    assert set(df["concise/value"]) <= {"yes", "no"}  # its schema's enum: constrained by construction
