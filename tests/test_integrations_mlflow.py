"""localjudge judges as MLflow scorers inside a real `mlflow.genai.evaluate` (temporary sqlite tracking
store, offline), the thread-safety of the shared model, and `localjudge run --mlflow`."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from conftest import cli
from integrations_support import prompt_text, scripted, yes_no

mlflow = pytest.importorskip("mlflow")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tracking(tmp_path_factory):
    """A temporary sqlite tracking store (and CWD, where MLflow puts artifacts) for this module."""
    d = tmp_path_factory.mktemp("mlflow")
    old_cwd, old_uri = os.getcwd(), mlflow.get_tracking_uri()
    os.chdir(d)
    uri = f"sqlite:///{d}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    yield uri
    mlflow.set_tracking_uri(old_uri)
    os.chdir(old_cwd)


def _assessments(result, name):
    """Every Feedback of scorer `name` in an evaluation, in row order."""
    out = []
    for trace_id in result.result_df["trace_id"]:
        trace = mlflow.get_trace(trace_id)
        out += [a for a in trace.info.assessments if a.name == name]
    return out


def _rag_app():
    from mlflow.entities import Document

    docs = {
        "What is the capital of France?": ["Paris is the capital of France.", "France is in Europe."],
        "Who wrote Hamlet?": ["Hamlet is a tragedy by William Shakespeare."],
    }

    @mlflow.trace(span_type="RETRIEVER")
    def retrieve(question: str) -> list:
        return [Document(page_content=t, metadata={"doc_uri": f"doc{i}"}) for i, t in enumerate(docs[question])]

    @mlflow.trace
    def app(question: str) -> str:
        found = retrieve(question)
        return f"According to the documents: {found[0].page_content}"

    return app, list(docs)


@pytest.mark.system
@pytest.mark.slow
def test_real_evaluate_with_the_default_model_gives_every_row_a_value_or_an_error(tracking, engine):
    from localjudge.integrations.mlflow import scorer

    app, questions = _rag_app()
    data = [
        {"inputs": {"question": q}, "expectations": {"expected_response": a}}
        for q, a in zip(questions, ["Paris", "Shakespeare"], strict=True)
    ]
    judges = ["correctness", "groundedness", "retrieval_relevance", "safety"]
    opts = {"field_tokens": 24}  # short rationales: this test checks form, not judgement
    result = mlflow.genai.evaluate(data=data, predict_fn=app, scorers=[scorer(j, options=opts) for j in judges])
    df = result.result_df
    assert len(df) == 2
    for j in judges:
        fbs = _assessments(result, j)
        assert len(fbs) == 2, j  # 100 % of rows: a value or an explicit error
        for fb in fbs:
            assert fb.source.source_type == "LLM_JUDGE" and fb.source.source_id == "localjudge:smollm2-135m"
            assert fb.metadata["model_sha256"] == engine.model_sha256 and fb.metadata["judge_version"]
            if fb.error is None:
                score = float(fb.metadata["score"])
                assert 0.0 <= score <= 1.0
                if j == "retrieval_relevance":  # the fraction of relevant documents, per-document verdicts in metadata
                    assert fb.value == score and len(json.loads(fb.metadata["value"])) in (1, 2)
                else:
                    assert fb.value in ("yes", "no") and fb.rationale
            else:
                assert fb.value is None and fb.error.error_message
    # the run's MLflow metrics are there too
    assert any(k.startswith("correctness/") for k in result.metrics)


@pytest.mark.system
def test_trace_chunks_reach_the_judge_as_documents_never_repr(tracking):
    from localjudge.integrations.mlflow import scorer

    eng = scripted(lambda msgs, fmt: yes_no("yes", "grounded"))
    app, questions = _rag_app()
    result = mlflow.genai.evaluate(
        data=[{"inputs": {"question": questions[0]}}], predict_fn=app, scorers=[scorer("groundedness", engine=eng)]
    )
    (fb,) = _assessments(result, "groundedness")
    assert fb.value == "yes" and fb.rationale == "grounded" and fb.source.source_id == "localjudge:scripted"
    prompt = prompt_text(eng.prompts[0])
    assert "Paris is the capital of France." in prompt and "France is in Europe." in prompt
    assert "page_content" not in prompt and "doc_uri" not in prompt and "Document(" not in prompt
    assert "According to the documents: Paris" in prompt and questions[0] in prompt


def test_a_record_without_a_required_variable_fails_before_any_model_call(tracking):
    from localjudge.errors import InputError
    from localjudge.integrations.mlflow import scorer

    eng = scripted()
    sc = scorer("groundedness", engine=eng)
    with pytest.raises(InputError) as e:
        sc(inputs={"question": "q"}, outputs="a")
    msg = str(e.value)
    assert "needs 'retrieval_context'" in msg and "required variables: input, output, retrieval_context" in msg
    # inside evaluate: the row's error, and still no model call
    result = mlflow.genai.evaluate(data=[{"inputs": {"question": "q"}, "outputs": "a"}], scorers=[sc])
    assert "needs 'retrieval_context'" in result.result_df["groundedness/error_message"][0]
    assert eng.calls == 0


def test_mlflow_names_map_onto_the_judges_variables(tracking):
    from localjudge.integrations.mlflow import scorer

    eng = scripted()
    row = dict(inputs={"question": "What is 2+2?"}, outputs={"choices": [{"message": {"content": "It is 4."}}]})
    scorer("correctness", engine=eng)(**row, expectations={"expected_facts": ["2+2 is 4", "it is even"]})
    assert "What is 2+2?" in prompt_text(eng.prompts[-1]) and "It is 4." in prompt_text(eng.prompts[-1])
    assert "- 2+2 is 4\n- it is even" in prompt_text(eng.prompts[-1])  # expected facts: the judge's own dash lines
    scorer("equivalence", engine=eng)(outputs="4", expectations={"expected_response": "four"})
    assert "four" in prompt_text(eng.prompts[-1])
    scorer("safety", engine=eng)(outputs="Hello there")
    assert "Hello there" in prompt_text(eng.prompts[-1])
    scorer("guidelines", engine=eng, guidelines=["Be polite", "Be brief"])(inputs={"question": "Hi"}, outputs="Hello!")
    text = prompt_text(eng.prompts[-1])
    assert "<guideline>Be polite</guideline>" in text and "Hello!" in text and "Hi" in text
    scorer("guidelines", engine=eng)(inputs="Hi", outputs="Hello!", expectations={"guidelines": "Answer in French"})
    assert "Answer in French" in prompt_text(eng.prompts[-1])
    many = {"question": "q?", "user": {"name": "Ann", "tier": "gold"}}
    scorer("relevance_to_query", engine=eng)(inputs=many, outputs="a")
    assert '"tier": "gold"' not in prompt_text(eng.prompts[-1]) and "q?" in prompt_text(eng.prompts[-1])
    scorer("relevance_to_query", engine=eng)(inputs={"query": "q?", "user": {"tier": "gold"}}, outputs="a")
    assert '"tier": "gold"' in prompt_text(eng.prompts[-1]) and "{'" not in prompt_text(eng.prompts[-1])  # JSON, not repr
    with pytest.raises(Exception, match="takes no variable 'guideline'"):
        scorer("guidelines", engine=eng, guideline="typo")


def test_unscored_results_are_error_feedback_never_no(tracking):
    from localjudge.integrations.mlflow import scorer

    eng = scripted(json.dumps({"rationale": "hard to say", "result": "maybe"}))
    fb = scorer("relevance_to_query", engine=eng)(inputs="q", outputs="a")
    assert fb.value is None and fb.error.error_code == "PARSE_ERROR" and "unknown" in fb.error.error_message
    assert fb.metadata["unscored_reason"] == "parse_error" and "score" not in fb.metadata


def test_score_judges_give_the_number_and_pass_by_threshold(tracking):
    from localjudge.integrations.mlflow import scorer

    eng = scripted('{"score": "4", "justification": "close"}')  # MLflow's JSON form, parsed by score_lines
    sc = scorer("answer_similarity", engine=eng)
    fb = sc(inputs="q", outputs="a", expectations={"expected_response": "b"})
    assert fb.value == 4 and fb.rationale == "close" and fb.metadata["score"] == "0.75" and fb.metadata["passed"] == "true"
    result = mlflow.genai.evaluate(
        data=[{"inputs": {"question": "q"}, "outputs": "a", "expectations": {"expected_response": "b"}}], scorers=[sc]
    )
    assert result.result_df["answer_similarity/value"][0] == 4


@pytest.mark.system
@pytest.mark.slow
def test_ten_threads_give_the_same_verdicts_as_one(tracking, engine, monkeypatch):
    """MLflow's pool (10 workers) over 20 rows = the same verdicts and rationales as judging them one by one."""
    from localjudge.integrations.common import shared_worker
    from localjudge.integrations.mlflow import scorer

    rows = [{"inputs": {"question": f"What is {i} + {i}?"}, "outputs": f"{i} + {i} = {2 * i + i % 3}"} for i in range(20)]
    sc = scorer("relevance_to_query", options={"field_tokens": 8})
    sequential = [sc(**r) for r in rows]
    worker = shared_worker(engine)
    peak, stop = [0], threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], worker.pending)
            time.sleep(0.01)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "10")
    try:
        result = mlflow.genai.evaluate(data=rows, scorers=[sc])
    finally:
        stop.set()
        t.join()
    assert peak[0] > 1  # requests from several threads were in flight together
    fbs = _assessments(result, "relevance_to_query")
    by_question = {json.loads(mlflow.get_trace(tid).data.request)["question"]: tid for tid in result.result_df["trace_id"]}
    assert len(fbs) == 20 and len(by_question) == 20
    got = {}
    for tid in result.result_df["trace_id"]:
        (fb,) = [a for a in mlflow.get_trace(tid).info.assessments if a.name == "relevance_to_query"]
        got[json.loads(mlflow.get_trace(tid).data.request)["question"]] = (fb.value, fb.rationale)
    for r, fb in zip(rows, sequential, strict=True):
        assert got[r["inputs"]["question"]] == (fb.value, fb.rationale)


# ------------------------------------------------------------------------------------ run --mlflow


@pytest.mark.system
def test_run_with_mlflow_logs_params_metrics_table_and_report(tmp_path):
    data = tmp_path / "pairs.jsonl"
    rows = [{"input": f"q{i}", "output": f"a{i}", "context": "c", "answer_1": f"x{i}", "answer_2": f"y{i}"} for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join([yes_no("yes")] * 3 + ['{"better_response": 1, "explanation": "first"}'] * 6) + "\n")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    out = tmp_path / "run"
    res = cli(
        "run", str(data), "-j", "relevance_to_query", "-j", "pairwise", "--both-orders", "--model", f"scripted:{answers}",
        "--out", str(out), "--mlflow", "--experiment", "lj-test", "--tracking-uri", uri,
        cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode in (0, 1), res.stderr
    assert "Logged to MLflow: run" in res.stdout and "warning" not in res.stderr
    mlflow.set_tracking_uri(uri)
    try:
        runs = mlflow.search_runs(experiment_names=["lj-test"])
        assert len(runs) == 1
        r = runs.iloc[0]
        assert r["params.model"] == "scripted:answers.jsonl" and r["params.judges"] == "relevance_to_query,pairwise"
        assert r["params.judge_version/relevance_to_query"] and r["params.decode/temperature"] == "0.0"
        assert r["metrics.relevance_to_query/pass_rate"] == 1.0 and r["metrics.relevance_to_query/unscored"] == 0
        assert "metrics.pairwise/position_consistency" in runs.columns
        arts = {a.path for a in mlflow.MlflowClient().list_artifacts(r["run_id"])}
        assert {"localjudge_results.json", "report.html", "localjudge_summary.json"} <= arts
        table = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=r["run_id"], artifact_path="localjudge_results.json", dst_path=str(tmp_path / "dl"))).read_text())  # fmt: skip
        assert len(table["data"]) == 6 and "verdict" not in table["columns"] and "judge" in table["columns"]
    finally:
        mlflow.set_tracking_uri(None)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.system
def test_unreachable_tracking_server_is_a_warning_and_the_run_is_kept(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": "q", "output": "a"}) + "\n")
    out = tmp_path / "run"
    t0 = time.time()
    res = cli(
        "run", str(data), "-j", "relevance_to_query", "--model", "scripted:", "--option", f"response={yes_no()}",
        "--out", str(out), "--mlflow", "--tracking-uri", f"http://127.0.0.1:{_closed_port()}",
        env={"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "3"},
        cwd=tmp_path,
        timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "warning: could not log the run to MLflow at http://127.0.0.1:" in res.stderr
    assert (out / "results.jsonl").read_text().count("\n") == 1 and json.loads((out / "run.json").read_text())[
        "status"
    ] == "finished"
    assert time.time() - t0 < 120


@pytest.mark.system
def test_mlflow_options_need_the_flag(tmp_path):
    res = cli("run", "x.jsonl", "-j", "safety", "--experiment", "e", cwd=tmp_path)
    assert res.returncode == 2 and "go with --mlflow" in res.stderr
