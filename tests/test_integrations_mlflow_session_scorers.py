"""localjudge conversation judges as session-level scorers in a real `mlflow.genai.evaluate` over the sessions
of a real sqlite tracking store: one Feedback per session on its first trace, the same value and rationale as
`localjudge run --granularity session` stores, an unscored result as an error Feedback, never dropped."""

from __future__ import annotations

import hashlib
import json

import pytest
from integrations_support import prompt_text, scripted
from test_conversation_runs import sessions_store  # noqa: F401 - the shared 3 sessions x 4 turns store

mlflow = pytest.importorskip("mlflow")


def _evaluate(uri, exp_id, scorers):
    """`mlflow.genai.evaluate` over every trace of the experiment; each session's traces, in the order they were logged."""
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment_id=exp_id)
    try:
        traces = mlflow.search_traces(locations=[exp_id], return_type="list")
        result = mlflow.genai.evaluate(data=traces, scorers=scorers)
        after = mlflow.search_traces(locations=[exp_id], return_type="list", order_by=["timestamp_ms ASC"])
    finally:
        mlflow.set_tracking_uri(None)
    sessions: dict[str, list] = {}
    for t in sorted(after, key=_logged):
        sessions.setdefault(t.info.trace_metadata["mlflow.trace.session"], []).append(t)
    return result, sessions


def _logged(trace):
    """A trace's place in the order it was logged: its millisecond, then its first span's start in nanoseconds (the
    fixture logs several traces per millisecond, and the store returns those in no fixed order)."""
    return trace.info.timestamp_ms, min(s.start_time_ns for s in trace.data.spans)


def _ours(trace, name):
    return [a for a in trace.info.assessments if a.name == name and a.source.source_id.startswith("localjudge:")]


def _the_one(traces, name):
    """A session's one assessment of ours: on one of the traces of its earliest millisecond, none on the others.
    MLflow's evaluate puts a session's assessment on the session's first trace by its own sort, the millisecond alone
    (which of the traces sharing it is the store's order); `traces` are in logged order."""
    carrying = [t for t in traces if _ours(t, name)]
    assert len(carrying) == 1 and len(_ours(carrying[0], name)) == 1, [len(_ours(t, name)) for t in traces]
    assert carrying[0].info.timestamp_ms == traces[0].info.timestamp_ms
    return _ours(carrying[0], name)[0]


def _hashed(messages, fmt):
    """A verdict and rationale that depend on every byte of the prompt."""
    h = hashlib.sha256(prompt_text(messages).encode()).hexdigest()
    return json.dumps({"rationale": f"prompt {h[:12]}", "result": "yes" if int(h, 16) % 2 else "no"})


def test_the_scorer_is_session_level_by_mlflows_own_rule():
    from localjudge.integrations.mlflow_session_scorers import session_scorer

    s = session_scorer("user_frustration", engine=scripted())
    assert s.is_session_level_scorer and s.name == "user_frustration"


def test_a_judge_without_a_conversation_is_refused_naming_its_variables():
    from localjudge.errors import InputError
    from localjudge.integrations.mlflow_session_scorers import session_scorer

    with pytest.raises(InputError, match=r"judge 'correctness' takes no 'conversation' variable \(it takes .*input"):
        session_scorer("correctness", engine=scripted())


@pytest.mark.system
@pytest.mark.slow  # the real default model judges 3 sessions on one thread
def test_acceptance_evaluate_sessions_with_the_real_model_gives_one_assessment_per_session_on_its_first_trace(
    sessions_store,  # noqa: F811
    engine,
):
    from localjudge.integrations.mlflow_session_scorers import session_scorer

    uri, exp_id = sessions_store
    s = session_scorer("conversation_completeness", model_options={"n_threads": 1}, options={"field_tokens": 24})
    result, sessions = _evaluate(uri, exp_id, [s])
    assert sorted(sessions) == ["s1", "s2", "s3"]
    for sid, traces in sessions.items():
        fb = _the_one(traces, "conversation_completeness")
        assert fb.source.source_type == "LLM_JUDGE" and fb.source.source_id == "localjudge:smollm2-135m"
        assert fb.metadata["conversation_id"] == sid and fb.metadata["mlflow.trace.session"] == sid
        assert json.loads(fb.metadata["trace_ids"]) == [t.info.trace_id for t in traces]
        assert fb.metadata["model_sha256"] == engine.model_sha256
        if fb.error is None:
            assert fb.value in ("yes", "no") and fb.rationale
        else:
            assert fb.value is None and fb.error.error_message


@pytest.mark.system
def test_value_and_rationale_equal_what_run_granularity_session_stores(sessions_store, tmp_path):  # noqa: F811
    import localjudge
    from localjudge.conversations.dataset import MlflowSessions
    from localjudge.integrations.mlflow_session_scorers import session_scorer

    uri, exp_id = sessions_store
    engine = scripted(_hashed)
    run = localjudge.evaluate(
        MlflowSessions(tracking_uri=uri, experiment="chats"), ["conversation_completeness"], engine=engine, out=tmp_path / "r"
    )
    stored = {
        r["conversation_id"]: (r["result"]["value"], r["result"]["rationale"])
        for r in map(json.loads, (tmp_path / "r" / "results.jsonl").read_text().splitlines())
    }
    assert len(run.results) == 3 and len(set(stored.values())) > 1  # the prompts differ per session
    _, sessions = _evaluate(uri, exp_id, [session_scorer("conversation_completeness", engine=engine, name="cc_scripted")])
    got = {}
    for sid, traces in sessions.items():
        fb = _the_one(traces, "cc_scripted")
        got[sid] = (fb.value, fb.rationale)
    assert got == stored


@pytest.mark.system
def test_an_unscored_session_is_an_error_feedback_with_its_reason_never_dropped(sessions_store):  # noqa: F811
    from localjudge.integrations.mlflow_session_scorers import session_scorer

    uri, exp_id = sessions_store
    s = session_scorer("user_frustration", engine=scripted("not json at all"), name="uf_unscored")
    _, sessions = _evaluate(uri, exp_id, [s])
    for traces in sessions.values():
        fb = _the_one(traces, "uf_unscored")
        assert fb.value is None
        assert fb.error.error_code and fb.error.error_message
        assert fb.metadata["unscored_reason"]


@pytest.mark.system
@pytest.mark.slow  # the docs snippet on the real default model, in its own process
def test_docs_session_scorer_snippet_runs_and_logs_one_assessment_per_session(tmp_path, _localjudge_home):
    import os
    import subprocess
    import sys

    from docs_snippets import section_snippets

    (code,) = section_snippets("docs/integrations.md", "Judge MLflow sessions with session-level scorers")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**os.environ, "HOME": str(tmp_path), "MLFLOW_TRACKING_URI": uri, "MLFLOW_DISABLE_TELEMETRY": "true"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    mlflow.set_tracking_uri(uri)
    try:
        traces = mlflow.search_traces(locations=["0"], return_type="list", order_by=["timestamp_ms ASC"])
    finally:
        mlflow.set_tracking_uri(None)
    per_session: dict[str, list] = {}
    for t in sorted(traces, key=_logged):
        per_session.setdefault(t.info.trace_metadata["mlflow.trace.session"], []).append(t)
    assert {k: len(v) for k, v in per_session.items()} == {"alice": 2, "bob": 2}
    for session in per_session.values():
        _the_one(session, "conversation_completeness")


def test_a_user_toml_judge_sees_the_session_as_mlflow_renders_it_and_its_fixed_variables(sessions_store, tmp_path):  # noqa: F811
    from mlflow.genai.utils.trace_utils import resolve_conversation_from_session

    from localjudge.integrations.mlflow_session_scorers import session_scorer

    (tmp_path / "on_goal.toml").write_text(
        'name = "on_goal"\n[[variables]]\nname = "conversation"\n[[variables]]\nname = "goal"\n'
        '[[messages]]\nrole = "user"\ntemplate = "Goal: {{goal}}\\n<c>{{conversation}}</c>\\nDid it stay on the goal?"\n'
        '[output]\nkind = "yes_no_json"\n'
    )
    prompts: list[str] = []

    def answer(messages, fmt):
        prompts.append(prompt_text(messages))
        return json.dumps({"rationale": "seen", "result": "yes"})

    s = session_scorer("on_goal", judges_dir=str(tmp_path), engine=scripted(answer), goal="answer maths")
    uri, exp_id = sessions_store
    mlflow.set_tracking_uri(uri)
    try:
        traces = mlflow.search_traces(locations=[exp_id], return_type="list")
    finally:
        mlflow.set_tracking_uri(None)
    # in logged order: MLflow sorts by the millisecond alone (ties in the store's order, not fixed), localjudge breaks
    # such ties by the spans' nanoseconds; the rendering is what is compared
    s2 = sorted((t for t in traces if t.info.trace_metadata["mlflow.trace.session"] == "s2"), key=_logged)
    fb = s(session=s2)
    assert fb.value == "yes" and fb.rationale == "seen" and fb.metadata["conversation_id"] == "s2"
    mlflow_text = json.dumps(resolve_conversation_from_session(s2), default=str, indent=2, ensure_ascii=False)
    assert prompts == [f"Goal: answer maths\n<c>{mlflow_text}</c>\nDid it stay on the goal?"]
    assert "s2 question 3" in mlflow_text


def test_traces_of_two_sessions_are_refused_naming_them(sessions_store):  # noqa: F811
    from localjudge.errors import InputError
    from localjudge.integrations.mlflow_session_scorers import session_scorer

    uri, exp_id = sessions_store
    mlflow.set_tracking_uri(uri)
    try:
        traces = mlflow.search_traces(locations=[exp_id], return_type="list")
    finally:
        mlflow.set_tracking_uri(None)
    with pytest.raises(InputError, match=r"the traces of one session .* sessions s1, s2, s3"):
        session_scorer("user_frustration", engine=scripted())(session=traces)
