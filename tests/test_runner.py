"""Batch runner with a scripted engine: results, records, cache and resume, bad input, exports."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from runner_support import TinyJudge, failing_engine, scripted_engine

from localjudge import evaluate
from localjudge.api import execute
from localjudge.errors import InputError, ModelError, PromptTooLongError
from localjudge.formats import ScoreJSON
from localjudge.run.exports import CSV_COLUMNS
from localjudge.run.spec import RunSpec
from localjudge.store.db import ResultRow, Store

DATA = Path(__file__).parent / "data"
QA = DATA / "runner_qa.jsonl"


def judges(version: str = "v1"):
    return [TinyJudge("tiny_yes_no", version=version), TinyJudge("tiny_score", fmt=ScoreJSON(min=1, max=5))]


def test_every_row_and_judge_gets_one_result_with_its_record(tmp_path):
    eng = scripted_engine()
    run = evaluate(QA, judges(), engine=eng, out=tmp_path)
    rows = list(run.results)
    assert [(r.row_index, r.judge) for r in rows] == [(i, j) for i in range(6) for j in ("tiny_yes_no", "tiny_score")]
    assert eng.calls == 12 and run.counts.evaluated == 12
    first = rows[0]
    assert first.row_id == "q1" and first.source == "runner_qa.jsonl:line 1"
    assert first.inputs["context"] == ["Paris is the capital of France.", "France is in Europe."]  # lists stay lists
    assert first.result.value == "yes" and first.result.score == 1.0
    rec = first.record
    assert rec.model_sha256 == eng.model_sha256 and rec.judge_version == "v1" and rec.seed == 0
    assert rec.format == {"kind": "yes_no_json", "field_tokens": 80}
    assert rec.prompt_hash.startswith("v1:") and rec.localjudge_version
    assert rows[3].result.value == 1  # "six, which is wrong" on the 1-5 judge
    assert rows[10].inputs["output"] == "4"  # a number is written as text


def test_rerun_of_a_finished_run_makes_no_engine_call(tmp_path):
    evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path)
    eng = failing_engine()
    run = evaluate(QA, judges(), engine=eng, out=tmp_path)
    assert eng.calls == 0 and run.counts.evaluated == 0 and run.counts.reused == 12
    assert len(run.results) == 12


def test_a_limited_rerun_keeps_the_full_exports_of_an_earlier_run(tmp_path):
    evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path, limit=2)
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 4
    evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path)
    run = evaluate(QA, judges(), engine=failing_engine(), out=tmp_path, limit=2)
    assert run.counts.rows == 2 and run.counts.reused == 4  # this invocation looked at 2 rows...
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 12  # ...the exports keep all 6
    assert len(run.results) == 12 and run.summary.judges["tiny_score"].n == 6


def test_cache_serves_a_judgement_the_run_lost(tmp_path):
    evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path)
    with Store(tmp_path / "results.sqlite") as st:
        st.conn.execute("DELETE FROM results WHERE row_index = 2")
    eng = failing_engine()
    run = evaluate(QA, judges(), engine=eng, out=tmp_path)
    assert eng.calls == 0 and run.counts.cached == 2 and run.counts.reused == 10
    assert len(run.results) == 12


def test_changing_a_judge_version_reruns_only_that_judge(tmp_path):
    evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path)
    eng = scripted_engine()
    run = evaluate(QA, judges(version="v2"), engine=eng, out=tmp_path)
    assert eng.calls == 6 and {p[0].content for p in eng.prompts} == {"You are a judge."}
    assert all("[tiny_yes_no]" in p[1].content for p in eng.prompts)
    assert {r.record.judge_version for r in run.results if r.judge == "tiny_yes_no"} == {"v2"}


def test_changing_one_row_reruns_only_that_row(tmp_path):
    lines = QA.read_text().splitlines()
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(lines) + "\n")
    evaluate(data, judges(), engine=scripted_engine(), out=tmp_path / "run")
    row = json.loads(lines[1])
    row["answer"] = "eight"
    lines[1] = json.dumps(row)
    data.write_text("\n".join(lines) + "\n")
    eng = scripted_engine()
    run = evaluate(data, judges(), engine=eng, out=tmp_path / "run")
    assert eng.calls == 2 and run.counts.reused == 10
    assert {r.result.value for r in run.results if r.row_index == 1} == {"yes", 5}


def test_changing_decode_options_or_model_reruns_everything(tmp_path):
    evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path)
    eng = scripted_engine()
    evaluate(QA, judges(), engine=eng, out=tmp_path, options={"seed": 7})
    assert eng.calls == 12
    other = scripted_engine(model_id="another-model")
    evaluate(QA, judges(), engine=other, out=tmp_path, options={"seed": 7})
    assert other.calls == 12


def test_default_mapping_takes_aliases_and_explicit_map_wins(tmp_path):
    run = evaluate(QA, judges()[:1], engine=scripted_engine(), out=tmp_path, mapping=["output=ground_truth"])
    r = next(iter(run.results))
    assert r.inputs == {
        "input": "What is the capital of France?",
        "output": "Paris",
        "context": ["Paris is the capital of France.", "France is in Europe."],
    }
    assert run.summary.run["mapping"]["tiny_yes_no"] == {
        "input": "question",
        "output": "ground_truth",
        "context": "retrieval_context",
    }


def test_missing_mapped_column_fails_before_inference_listing_columns(tmp_path):
    eng = scripted_engine()
    with pytest.raises(InputError, match=r"no column 'nope'.*columns: id, question, answer, ground_truth, retrieval_context"):
        evaluate(QA, judges(), engine=eng, out=tmp_path, mapping={"output": "nope"})
    j = TinyJudge("needs_rubric", required=("input", "output", "rubric"))
    with pytest.raises(InputError, match=r"needs 'rubric'.*columns: id, question.*--map rubric=COLUMN"):
        evaluate(QA, [j], engine=eng, out=tmp_path)
    with pytest.raises(
        InputError, match=r"--map expectd=\.\.\.: no judge takes a variable 'expectd'; they take context, input, output"
    ):
        evaluate(QA, judges(), engine=eng, out=tmp_path, mapping=["expectd=ground_truth"])
    assert eng.calls == 0 and not (tmp_path / "results.sqlite").exists()


def test_bad_jsonl_rows_get_error_results_and_the_rest_run(tmp_path):
    run = evaluate(DATA / "runner_bad.jsonl", [TinyJudge()], engine=scripted_engine(), out=tmp_path)
    by_row = {r.row_index: r for r in run.results}
    assert len(by_row) == 9  # the blank line is not a row
    assert by_row[0].result.scored and by_row[8].result.scored and by_row[8].source == "runner_bad.jsonl:line 10"
    expect = {
        1: ("bad_row", "runner_bad.jsonl:line 2: malformed JSON"),
        2: ("missing_value", "runner_bad.jsonl:line 3: column 'output' (variable 'output'): missing"),
        3: ("empty_value", "runner_bad.jsonl:line 4: column 'output' (variable 'output'): empty value"),
        4: ("wrong_type", "runner_bad.jsonl:line 5: column 'output' (variable 'output'): wrong type: an object"),
        5: ("bad_row", "runner_bad.jsonl:line 7: expected a JSON object, got a list"),
        6: ("wrong_type", "runner_bad.jsonl:line 8: column 'output' (variable 'output'): wrong type: a boolean"),
        7: ("wrong_type", "runner_bad.jsonl:line 9: column 'output' (variable 'output'): wrong type: a list holding an object"),
    }
    for i, (reason, msg) in expect.items():
        assert by_row[i].result.unscored_reason == reason and by_row[i].error.startswith(msg), by_row[i].error
        assert by_row[i].result.score is None and by_row[i].result.passed is None
    assert run.exit_code == 1 and run.counts.failed == 7 and run.counts.evaluated == 2
    s = run.summary.judges["tiny"]
    assert (s.n, s.n_scored, s.n_unscored, s.pass_rate) == (9, 2, 7, 1.0)  # unscored never counted as "no"


def test_bad_csv_rows_get_error_results_and_json_list_cells_stay_text(tmp_path):
    run = evaluate(DATA / "runner_bad.csv", [TinyJudge()], engine=scripted_engine(), out=tmp_path)
    by_row = {r.row_index: r for r in run.results}
    assert by_row[0].result.scored and by_row[0].source == "runner_bad.csv:line 2"
    assert by_row[1].error.startswith("runner_bad.csv:line 3: column 'output' (variable 'output'): missing in this row")
    assert by_row[2].error.startswith("runner_bad.csv:line 4: record has 5 fields, the header has 3")
    assert by_row[3].error.startswith("runner_bad.csv:line 5: column 'output' (variable 'output'): empty value")
    assert by_row[4].source == "runner_bad.csv:line 6" and by_row[4].inputs["output"] == "quoted, with comma\nand newline"
    assert by_row[4].inputs["context"] == '["doc a", "doc b"]'
    assert by_row[5].source == "runner_bad.csv:line 8" and "context" not in by_row[5].inputs  # empty optional: left out
    listed = evaluate(
        DATA / "runner_bad.csv", [TinyJudge()], engine=scripted_engine(), out=tmp_path / "l", mapping=["context=context:list"]
    )
    rows = {r.row_index: r for r in listed.results}
    assert rows[4].inputs["context"] == ["doc a", "doc b"]
    assert rows[0].result.unscored_reason == "wrong_type" and "not a JSON list" in rows[0].error


def test_prompt_too_long_is_a_row_error_naming_the_longest_column(tmp_path):
    base = scripted_engine()

    def fn(messages, fmt):
        if len(messages[-1].content) > 300:
            raise PromptTooLongError("prompt is 900 tokens + 120 output tokens > context window 512", 900, 512, 120)
        return '{"rationale": "ok", "result": "yes"}'

    base._fn = fn
    recs = [{"input": "q", "output": "short"}, {"input": "q", "output": "long " * 100}, {"input": "q2", "output": "fine"}]
    run = evaluate(recs, [TinyJudge()], engine=base, out=tmp_path)
    r = {x.row_index: x for x in run.results}
    assert r[0].result.scored and r[2].result.scored
    assert r[1].result.unscored_reason == "prompt_too_long"
    assert r[1].error.startswith("records:row 1: prompt is 900 tokens") and "longest column 'output' (500 chars)" in r[1].error
    again = failing_engine()
    assert evaluate(recs, [TinyJudge()], engine=again, out=tmp_path).counts.evaluated == 0  # too long is cached too


def test_a_raising_judgement_is_a_row_error_and_is_retried_on_resume(tmp_path):
    eng = scripted_engine()
    real = eng._fn

    def flaky(messages, fmt):
        if "q3" in messages[-1].content:
            raise RuntimeError("llama_decode returned -1")
        return real(messages, fmt)

    eng._fn = flaky
    recs = [{"input": f"q{i}", "output": "answer"} for i in range(6)]
    run = evaluate(recs, [TinyJudge()], engine=eng, out=tmp_path)
    bad = [r for r in run.results if r.error]
    assert [r.row_index for r in bad] == [3] and "RuntimeError: llama_decode returned -1" in bad[0].error
    eng2 = scripted_engine()
    run2 = evaluate(recs, [TinyJudge()], engine=eng2, out=tmp_path)
    assert eng2.calls == 1 and run2.exit_code == 0


def test_many_failing_judgements_in_a_row_stop_the_run_as_a_model_error(tmp_path):
    eng = failing_engine()
    recs = [{"input": f"q{i}", "output": "a"} for i in range(30)]
    with pytest.raises(ModelError, match="10 judgements in a row failed"):
        evaluate(recs, [TinyJudge()], engine=eng, out=tmp_path)
    assert eng.calls == 10
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "failed"


def test_parquet_and_dataframe_inputs_keep_lists(tmp_path):
    pd = pytest.importorskip("pandas")
    df = pd.read_json(QA, lines=True, dtype={"answer": str, "ground_truth": str})
    df.loc[1, "answer"] = None
    path = tmp_path / "qa.parquet"
    df.to_parquet(path)
    for data, src in ((df, "DataFrame:row 0"), (path, "qa.parquet:row 0")):
        out = tmp_path / "runs" / src.split(":")[0]  # execute: the RunResult for a DataFrame too
        run = execute(RunSpec.build(data, [TinyJudge()], engine=scripted_engine(), out=out))
        rows = list(run.results)
        assert rows[0].source == src and rows[0].inputs["context"] == ["Paris is the capital of France.", "France is in Europe."]
        assert rows[1].result.unscored_reason == "empty_value"
        assert rows[5].inputs["output"] == "4" and rows[5].row_id == "q6"


def test_exports_read_back_equal_with_csv_and_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    run = evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path)
    jl = [ResultRow.model_validate_json(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r.model_dump() for r in jl] == [r.model_dump() for r in run.results]
    with open(tmp_path / "results.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == CSV_COLUMNS and len(rows) == 12
    tricky = rows[4]
    assert json.loads(tricky["inputs"])["output"] == 'Shakespeare,\nwith a newline, a comma and "quotes"'
    df = pd.read_csv(tmp_path / "results.csv", dtype=str, keep_default_na=False)
    assert df.to_dict(orient="records") == rows
    frame = run.to_pandas()
    assert list(frame.columns) == CSV_COLUMNS and frame.loc[4, "inputs"] == tricky["inputs"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    s = summary["judges"]["tiny_yes_no"]
    assert (s["n"], s["n_scored"], s["n_unscored"], s["unscored_reasons"]) == (6, 5, 1, {"parse_error": 1})
    assert s["distribution"] == {"no": 1, "yes": 4} and s["pass_rate"] == 0.8 and len(s["pass_rate_ci"]) == 2
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["schema_version"] == 1 and meta["status"] == "finished" and meta["run_id"] == run.run_id
    assert not list(tmp_path.glob(".*tmp*"))


def test_progress_reports_rows_rate_and_running_pass_rates(tmp_path):
    seen = []
    evaluate(QA, judges(), engine=scripted_engine(), out=tmp_path, progress=seen.append, chunk_size=4)
    assert [p.cells_done for p in seen if p.cells_done] == sorted(p.cells_done for p in seen if p.cells_done)
    last = seen[-1]
    assert (last.rows_done, last.rows_total, last.cells_done, last.cells_total) == (6, 6, 12, 12)
    assert last.pass_rates == {"tiny_yes_no": (4, 5), "tiny_score": (4, 5)} and last.eta_s == 0
    assert {p.rows_done for p in seen} == {0, 4, 6}


def test_run_without_out_dir_exports_nothing_and_still_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALJUDGE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    first = evaluate(QA, judges(), engine=scripted_engine())
    eng = failing_engine()
    second = evaluate(QA, judges(), engine=eng)
    assert first.out is None and first.run_id != second.run_id and eng.calls == 0
    assert second.counts.cached == 12 and len(second.results) == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def catalog_text(messages, fmt) -> str:
    """Valid output for any catalog format: 'no' when the rendered prompt mentions 'mice', else 'yes'."""
    from localjudge.formats import Statements, VerdictList, YesNoJSON

    verdict = "no" if "mice" in messages[-1].content else "yes"
    if isinstance(fmt, YesNoJSON):
        return json.dumps({"rationale": "Let's think step by step.", "result": verdict})
    if isinstance(fmt, Statements):
        return json.dumps({"statements": ["one claim", "another claim"]})
    if isinstance(fmt, VerdictList):
        return json.dumps({"verdicts": [{"verdict": verdict, "reason": "r"}] * fmt.n})
    raise AssertionError(f"unexpected format {fmt.describe()}")


def test_catalog_judges_map_their_own_aliases_and_run_the_mixed_dataset(tmp_path):
    pytest.importorskip("localjudge.judges")
    from localjudge.engine.base import ScriptedEngine

    eng = ScriptedEngine(catalog_text)
    names = ["correctness", "relevance_to_query", "groundedness", "answer_relevancy"]
    run = evaluate(DATA / "runner_mixed30.jsonl", names, engine=eng, out=tmp_path)
    assert run.summary.run["mapping"]["groundedness"] == {"input": "question", "output": "answer", "retrieval_context": "context"}
    assert run.summary.run["mapping"]["correctness"]["ground_truth"] == "ground_truth"
    rows = list(run.results)
    assert len(rows) == 120 and run.counts.failed == 3  # row 13's blank answer, for the judges that need one
    row13 = {r.judge: r for r in rows if r.row_index == 13}
    assert {j: r.result.unscored_reason for j, r in row13.items() if j != "answer_relevancy"} == dict.fromkeys(
        names[:3], "empty_value"
    )
    assert row13["answer_relevancy"].result.scored and row13["answer_relevancy"].inputs["output"] == ""  # its output may be empty
    ground = [r for r in rows if r.judge == "groundedness"]
    assert ground[0].inputs["retrieval_context"][0].startswith("Kendra and Quinton") and isinstance(
        ground[1].inputs["retrieval_context"], str
    )
    assert any("Kendra and Quinton travel to and from school" in p[-1].content for p in eng.prompts)
    rel = run.summary.judges["answer_relevancy"]
    assert rel.n_scored == 30 and rel.mean_score is not None
    calls = eng.calls
    assert evaluate(DATA / "runner_mixed30.jsonl", names, engine=failing_engine(), out=tmp_path).counts.evaluated == 0
    assert calls == 29 * 3 + 30 * 2  # answer_relevancy makes two calls per row


def test_csv_records_with_bad_bytes_are_row_errors_and_reading_goes_on(tmp_path):
    data = tmp_path / "d.csv"
    data.write_bytes(b'input,output\nq0,fine\nq1,caf\xe9 in latin-1\nq2,"bad"quoting\nq3,also fine\nq4,"unterminated\n')
    run = evaluate(data, [TinyJudge()], engine=scripted_engine(), out=tmp_path / "run")
    r = {x.row_index: x for x in run.results}
    assert r[0].result.scored and r[3].result.scored and r[3].source == "d.csv:line 5"
    assert r[1].error == "d.csv:line 3: not valid UTF-8; save the file as UTF-8"
    assert r[2].error.startswith("d.csv:line 4: unreadable CSV record (',' expected after '\"')")
    assert r[2].result.unscored_reason == "bad_row" and r[4].error.startswith("d.csv:line 6: unreadable CSV record")


def test_guidelines_from_csv_json_columns_reach_the_prompt_as_mlflow_renders_them(tmp_path):
    from localjudge.engine.base import ScriptedEngine

    data = tmp_path / "g.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["rules", "ctx"])
        w.writerow([json.dumps(["Be polite.", "Answer in English."]), json.dumps({"request": "Hi?", "response": "Hello!"})])
        w.writerow([json.dumps("One sentence only."), json.dumps({"request": "Why?", "retrieved_context": "Because."})])
    eng = ScriptedEngine(lambda m, f: '{"rationale": "ok", "result": "yes"}')
    run = evaluate(
        data, ["guidelines"], engine=eng, out=tmp_path / "run", mapping=["guidelines=rules:json", "guidelines_context=ctx:json"]
    )
    assert run.counts.failed == 0 and [r.result.value for r in run.results] == ["yes", "yes"]
    first, second = (p[-1].content for p in eng.prompts)
    assert "<guideline>Be polite.</guideline>\n<guideline>Answer in English.</guideline>" in first
    assert "<request>Hi?</request>" in first and "<response>Hello!</response>" in first
    assert "<guideline>One sentence only.</guideline>" in second and "<retrieved_context>Because.</retrieved_context>" in second
    # a cell that starts like JSON but is not is a row error naming the line and column, not a crash
    bad = tmp_path / "bad.csv"
    bad.write_text('rules,ctx\n"[""x""]","{""request"": oops}"\n', encoding="utf-8")
    run = evaluate(
        bad, ["guidelines"], engine=eng, out=tmp_path / "run2", mapping=["guidelines=rules:json", "guidelines_context=ctx:json"]
    )
    assert run.counts.failed == 1
    err = next(iter(run.results)).error
    assert "line 2" in err and "ctx" in err and "not valid JSON" in err, err
