"""Conversations through the run: a `messages` column or MLflow sessions judged session-level and per turn,
stored with their conversation id and turn index, aggregated per conversation, logged back to MLflow as
assessments; prompts that do not fit are unscored results naming the tokens, never cut."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

import localjudge
from localjudge.engine.base import ScriptedEngine

CHATS = [
    {
        "id": "c1",
        "messages": [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4."},
            {"role": "user", "content": "And times 3?"},
            {"role": "assistant", "content": "12."},
            {"role": "user", "content": "Minus 2?"},
            {"role": "assistant", "content": "10."},
        ],
    },
    {
        "id": "c2",
        "messages": json.dumps([{"role": "user", "content": "Capital of France?"}, {"role": "assistant", "content": "Paris."}]),
    },
]


def _verdicts(answers):
    """A scripted engine answering each prompt by the last assistant text in it: `answers[text]` is yes/no."""

    def answer(messages, fmt):
        conv = json.loads(messages[-1].content.removeprefix("conversation: "))
        last = [m["content"] for m in conv if m["role"] == "assistant"][-1]
        return json.dumps({"rationale": f"judged {last}", "result": answers[last]})

    return ScriptedEngine(answer)


def test_messages_rows_judged_per_turn_store_positions_and_aggregate_per_conversation(tmp_path):
    engine = _verdicts({"4.": "yes", "12.": "no", "10.": "yes", "Paris.": "yes"})
    run = localjudge.evaluate(CHATS, ["conversation_completeness"], engine=engine, out=tmp_path / "r", conversation="turn")
    rows = list(run.results)
    assert [(r.conversation_id, r.turn_index, r.row_id, r.result.value) for r in rows] == [
        ("c1", 0, "c1:0", "yes"),
        ("c1", 1, "c1:1", "no"),
        ("c1", 2, "c1:2", "yes"),
        ("c2", 0, "c2:0", "yes"),
    ]
    # the second turn's row sees the turns before it and ends with the turn it judges
    second = json.loads(rows[1].inputs["conversation"])
    assert [m["content"] for m in second] == ["What is 2+2?", "4.", "And times 3?", "12."]
    agg = run.summary.run["conversations"]["judges"]["conversation_completeness"]
    assert agg["c1"] == {"turns": 3, "scored": 3, "mean": pytest.approx(2 / 3), "min": 0.0, "pass_fraction": pytest.approx(2 / 3)}
    assert agg["c2"]["min"] == 1.0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["run"]["conversations"]["judges"]["conversation_completeness"]["c1"]["turns"] == 3
    # the positions are in the store's own columns (migration 005_conversations) and in results.jsonl
    db = sqlite3.connect(tmp_path / "r" / "results.sqlite")
    got = db.execute("SELECT conversation_id, turn_index, tool_call_index FROM results ORDER BY row_index").fetchall()
    assert got == [("c1", 0, None), ("c1", 1, None), ("c1", 2, None), ("c2", 0, None)]
    line = json.loads((tmp_path / "r" / "results.jsonl").read_text().splitlines()[1])
    assert line["conversation_id"] == "c1" and line["turn_index"] == 1 and "tool_call_index" not in line
    # resumed: every cell is reused, nothing judged again
    again = localjudge.evaluate(CHATS, ["conversation_completeness"], engine=engine, out=tmp_path / "r", conversation="turn")
    assert again.counts.reused == 4 and again.counts.evaluated == 0


def test_a_messages_column_is_judged_session_level_by_default_for_a_conversation_judge(tmp_path):
    engine = _verdicts({"10.": "no", "Paris.": "yes"})
    run = localjudge.evaluate(CHATS, ["conversation_completeness"], engine=engine, out=tmp_path / "r")
    rows = list(run.results)
    assert [(r.conversation_id, r.turn_index, r.result.value) for r in rows] == [("c1", None, "no"), ("c2", None, "yes")]
    assert len(json.loads(rows[0].inputs["conversation"])) == 6
    assert run.summary.run["conversations"] == {}  # nothing per turn to aggregate


def test_single_turn_rows_store_no_conversation_and_write_results_as_before(tmp_path):
    engine = ScriptedEngine([json.dumps({"rationale": "fine", "result": "yes"})])
    run = localjudge.evaluate(
        [{"messages": "not used", "input": "q", "output": "a"}], ["relevance_to_query"], engine=engine, out=tmp_path / "r"
    )
    (row,) = run.results
    assert row.conversation_id is None and "conversation" not in run.summary.run
    line = json.loads((tmp_path / "r" / "results.jsonl").read_text())
    assert not {"conversation_id", "turn_index", "tool_call_index"} & set(line)


def test_an_unreadable_conversation_is_one_error_row_naming_row_and_field_and_the_others_run(tmp_path):
    data = [{"id": "bad", "messages": [{"role": "user"}]}, CHATS[1]]
    run = localjudge.evaluate(data, ["conversation_completeness"], engine=_verdicts({"Paris.": "yes"}), out=tmp_path / "r")
    bad, good = list(run.results)
    assert bad.error == (
        "records:row 0: column 'messages': messages[0].content: missing; only an assistant message that calls tools may "
        "have no content"
    )
    assert good.result.value == "yes" and run.exit_code == 1


def test_tool_call_judge_reads_the_conversation_with_its_tool_calls(tmp_path):
    msgs = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "function": {"name": "get", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "sun"},
        {"role": "assistant", "content": "Sunny."},
    ]
    engine = ScriptedEngine([json.dumps({"rationale": "r", "result": "yes"})], cycle=True)
    judges = ["conversational_tool_call_efficiency", "conversation_completeness"]
    run = localjudge.evaluate([{"messages": msgs}], judges, engine=engine, out=tmp_path / "r")
    by_judge = {r.judge: r.inputs["conversation"] for r in run.results}
    assert "Tool: get" in by_judge["conversational_tool_call_efficiency"]
    assert "Tool: get" not in by_judge["conversation_completeness"]


@pytest.mark.model
def test_a_session_that_does_not_fit_the_context_is_unscored_naming_tokens_and_context(tmp_path, _localjudge_home):
    long = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "words " * 60} for i in range(20)]
    run = localjudge.evaluate(
        [{"id": "long", "messages": long}],
        ["conversation_completeness"],
        out=tmp_path / "r",
        model_options={"n_ctx": 1024, "n_threads": 1},
    )
    (row,) = run.results
    assert row.result.unscored_reason == "prompt_too_long"
    assert "> context window 1024" in row.error and "prompt is " in row.error and "'conversation'" in row.error
    assert len(json.loads(row.inputs["conversation"])) == 20  # never cut


@pytest.mark.model
def test_truncate_conversation_keeps_the_last_turns_that_fit_and_records_the_cut(tmp_path, _localjudge_home):
    long = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "words " * 60} for i in range(20)]
    run = localjudge.evaluate(
        [{"id": "long", "messages": long}],
        ["conversation_completeness"],
        out=tmp_path / "r",
        model_options={"n_ctx": 1024, "n_threads": 1},
        conversation={"truncate": True},
    )
    (row,) = run.results
    kept = json.loads(row.inputs["conversation"])
    assert row.result.unscored_reason != "prompt_too_long" and row.error is None
    assert 0 < len(kept) < 20 and row.truncated_turns == 20 - len(kept)
    assert kept[-1]["content"] == long[-1]["content"]  # the last turns are the ones kept
    line = json.loads((tmp_path / "r" / "results.jsonl").read_text())
    assert line["truncated_turns"] == row.truncated_turns


@pytest.fixture(scope="module")
def sessions_store(tmp_path_factory):
    """A real sqlite tracking store: 3 sessions x 4 turns logged by a traced function."""
    import mlflow

    root = tmp_path_factory.mktemp("mlruns")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    exp = mlflow.get_experiment(mlflow.create_experiment("chats", artifact_location=(root / "artifacts").as_uri()))
    mlflow.set_experiment(experiment_id=exp.experiment_id)

    @mlflow.trace
    def assistant(question: str, session: str) -> str:
        mlflow.update_current_trace(metadata={"mlflow.trace.session": session})
        return f"Here is the answer to {question}."

    for s in ("s1", "s2", "s3"):
        for t in range(4):
            assistant(f"{s} question {t}", s)
    mlflow.flush_trace_async_logging()
    mlflow.set_tracking_uri(None)
    return uri, exp.experiment_id


@pytest.mark.model
def test_acceptance_mlflow_sessions_judged_session_level_and_per_turn_and_logged_as_assessments(
    sessions_store, tmp_path, _localjudge_home
):
    import mlflow

    from localjudge.cli import main

    uri, exp_id = sessions_store
    base = ["run", "--mlflow-sessions", uri, "--experiment", "chats", "-j", "conversation_completeness", "--threads", "1"]
    session = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "session"), "--log-assessments"])
    assert session.exit_code in (0, 1), session.output
    assert "Logged 3 assessments" in session.output
    turn = CliRunner().invoke(main, [*base, "--granularity", "turn", "--out", str(tmp_path / "turn"), "--log-assessments"])
    assert turn.exit_code in (0, 1), turn.output
    assert "Logged 12 assessments" in turn.output and "Per conversation" in turn.output

    def rows(d):
        return [json.loads(x) for x in (tmp_path / d / "results.jsonl").read_text().splitlines()]

    assert [(r["conversation_id"], r.get("turn_index")) for r in rows("session")] == [("s1", None), ("s2", None), ("s3", None)]
    per_turn = rows("turn")
    assert [(r["conversation_id"], r["turn_index"]) for r in per_turn] == [(s, t) for s in ("s1", "s2", "s3") for t in range(4)]
    assert all(r["result"]["value"] in ("yes", "no") or r["error"] for r in per_turn)
    # in MLflow: one assessment per session on its first trace, one per turn on that turn's trace
    mlflow.set_tracking_uri(uri)
    try:
        traces = mlflow.search_traces(locations=[exp_id], return_type="list", order_by=["timestamp_ms ASC"])
    finally:
        mlflow.set_tracking_uri(None)
    by_session: dict[str, list] = {}
    # in logged order: the fixture logs several traces per millisecond, and the store returns those in no fixed order
    for t in sorted(traces, key=lambda t: (t.info.timestamp_ms, min(s.start_time_ns for s in t.data.spans))):
        by_session.setdefault(t.info.trace_metadata["mlflow.trace.session"], []).append(t)
    for s, ts in by_session.items():
        counts = [
            [
                a
                for a in t.info.assessments
                if a.name == "conversation_completeness" and a.source.source_id.startswith("localjudge:")
            ]
            for t in ts
        ]
        assert [len(c) for c in counts] == [2, 1, 1, 1], s  # the first trace: its session's and its turn's
        turns = sorted(json.loads(a.metadata["turn_index"]) for c in counts for a in c if "turn_index" in a.metadata)
        assert turns == [0, 1, 2, 3]


def test_evaluate_a_dataframe_of_conversations_gives_one_row_per_conversation_or_per_turn(tmp_path):
    import pandas as pd

    df = pd.DataFrame(CHATS, index=["a", "b"])
    engine = _verdicts({"4.": "yes", "12.": "no", "10.": "yes", "Paris.": "yes"})
    sessions = localjudge.evaluate(df, ["conversation_completeness"], engine=engine, out=tmp_path / "s")
    assert list(sessions.index) == ["a", "b"] and list(sessions["conversation_completeness/value"]) == ["yes", "yes"]
    turns = localjudge.evaluate(df, ["conversation_completeness"], engine=engine, out=tmp_path / "t", conversation="turn")
    assert list(zip(turns["conversation_id"], turns["turn_index"], turns["conversation_completeness/value"], strict=True)) == [
        ("c1", 0, "yes"),
        ("c1", 1, "no"),
        ("c1", 2, "yes"),
        ("c2", 0, "yes"),
    ]


@pytest.mark.model
@pytest.mark.slow  # every command of the page on the real model (about a minute on an idle core)
def test_docs_conversations_page_bash_snippet_runs(sessions_store, tmp_path, monkeypatch, _localjudge_home):
    import re
    import shlex
    from pathlib import Path

    from localjudge.cli import main

    page = (Path(__file__).resolve().parent.parent / "docs/conversations.md").read_text(encoding="utf-8")
    # the page's command block (its other bash block runs the bench, a script: tests/test_docs.py lists it)
    (block,) = [b for b in re.findall(r"```bash\n(.*?)```", page, re.S) if b.startswith("localjudge ")]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chats.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CHATS), encoding="utf-8")
    for line in block.strip().splitlines():
        argv = shlex.split(line.replace("sqlite:///mlflow.db", sessions_store[0]))
        assert argv[0] == "localjudge"
        r = CliRunner().invoke(main, [*argv[1:], "--threads", "1", "--quiet"])
        assert r.exit_code in (0, 1), (line, r.output)
    assert len((tmp_path / "runs/chats-turns/results.jsonl").read_text().splitlines()) == 4


def test_report_shows_the_per_conversation_aggregation(tmp_path):
    from localjudge.report import build_report

    engine = _verdicts({"4.": "yes", "12.": "no", "10.": "yes", "Paris.": "yes"})
    localjudge.evaluate(CHATS, ["conversation_completeness"], engine=engine, out=tmp_path / "r", conversation="turn")
    html = build_report(tmp_path / "r", tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="conversations"' in html and "<td>c1</td><td>3 / 3</td>" in html
