"""`localjudge.testing.assert_judge` (failure messages, the cache across runs, the example suite CI runs)
and pandas in / pandas out through `localjudge.evaluate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from integrations_support import prompt_text, scripted, yes_no

from localjudge.testing import STATS, assert_judge

ROOT = Path(__file__).resolve().parent.parent


def _scripted_spec(answer: str) -> dict:
    return {"model": "scripted:", "model_options": {"response": answer}}


def test_a_failing_judgement_names_verdict_score_and_rationale():
    with pytest.raises(AssertionError) as e:
        assert_judge("relevance_to_query", input="What is 2+2?", output="Bananas.", **_scripted_spec(yes_no("no", "off topic")))
    msg = str(e.value)
    assert msg.startswith("relevance_to_query judged 'no' (score 0.00), below the judge's pass threshold")
    assert "rationale: off topic" in msg and "input: What is 2+2?" in msg and "output: Bananas." in msg


def test_min_score_and_the_returned_result():
    spec = _scripted_spec('{"score": 2, "justification": "partly"}')
    with pytest.raises(AssertionError, match=r"answer_similarity judged 2 \(score 0.25\), below min_score 0.5"):
        assert_judge("answer_similarity", input="q", output="a", ground_truth="b", min_score=0.5, **spec)
    r = assert_judge("answer_similarity", input="q", output="a", ground_truth="b", min_score=0.25, **spec)
    assert r.value == 2 and r.rationale == "partly"


def test_an_unscored_judgement_fails_with_its_reason():
    with pytest.raises(AssertionError, match=r"could not score this \(parse_error\).*unknown"):
        assert_judge("safety", output="hello", **_scripted_spec(json.dumps({"rationale": "r", "result": "maybe"})))


def test_a_repeated_judgement_comes_from_the_cache_without_a_model_call():
    eng = scripted(yes_no("yes", "fine"))
    before = STATS.cached
    first = assert_judge("safety", output="A unique answer for the cache test.", engine=eng)
    again = assert_judge("safety", output="A unique answer for the cache test.", engine=eng)
    assert eng.calls == 1 and STATS.cached == before + 1
    assert again.value == first.value == "yes" and again.rationale == "fine"


def _run_example(home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LOCALJUDGE_HOME": str(home)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "localjudge.testing",
            "-q",
            "-p",
            "no:cacheprovider",
            str(ROOT / "examples" / "test_my_app.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=900,
    )


@pytest.mark.system
@pytest.mark.slow
def test_the_example_suite_passes_and_a_rerun_costs_nothing(tmp_path, _localjudge_home):
    home = tmp_path / "home"
    home.mkdir()
    fsm = Path(_localjudge_home) / "fsm"  # the session's compiled constraint indexes (not its store)
    fsm.mkdir(exist_ok=True)
    (home / "fsm").symlink_to(fsm, target_is_directory=True)
    first = _run_example(home)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (
        "2 passed" in first.stdout
        and "localjudge: 2 judgements: 2 judged now, 0 from the cache; model loaded: yes" in first.stdout
    )
    again = _run_example(home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "localjudge: 2 judgements: 0 judged now, 2 from the cache; model loaded: no" in again.stdout


# ------------------------------------------------------------------------------------------ pandas


def test_a_dataframe_in_gives_a_dataframe_out_with_judge_columns():
    pd = pytest.importorskip("pandas")
    import localjudge

    eng = scripted(yes_no("yes", "ok"))
    df = pd.DataFrame(
        {
            "question": ["What is the capital of France?", "Who wrote Hamlet?"],
            "answer": ["Paris.", ""],
            "context": [["Paris is the capital of France.", "France is in Europe."], ["Hamlet is by Shakespeare."]],
        },
        index=["a", "b"],
    )
    out = localjudge.evaluate(df, judges=["groundedness", "relevance_to_query"], engine=eng)
    assert isinstance(out, pd.DataFrame) and list(out.index) == ["a", "b"]
    assert list(out.columns[:3]) == ["question", "answer", "context"]
    for j in ("groundedness", "relevance_to_query"):
        assert [f"{j}/{f}" for f in ("value", "score", "passed", "rationale", "unscored_reason", "error")] == [
            c for c in out.columns if c.startswith(j + "/")
        ]
        assert (
            out.loc["a", f"{j}/value"] == "yes" and out.loc["a", f"{j}/score"] == 1.0 and out.loc["a", f"{j}/rationale"] == "ok"
        )
        assert out.loc["b", f"{j}/unscored_reason"] == "empty_value" and "answer" in out.loc["b", f"{j}/error"]
        assert pd.isna(out.loc["b", f"{j}/score"])
    assert out[f"{j}/score"].dtype == "float64" and out.attrs["localjudge_run_id"]
    ground_prompt = prompt_text(eng.prompts[0])
    assert "Paris is the capital of France." in ground_prompt and "France is in Europe." in ground_prompt


def test_other_inputs_still_give_the_run_result(tmp_path):
    import localjudge
    from localjudge.api import to_frame
    from localjudge.run.types import RunResult

    rows = [{"input": "q", "output": "a"}]
    run = localjudge.evaluate(rows, judges=["relevance_to_query"], engine=scripted(), out=tmp_path / "run")
    assert isinstance(run, RunResult) and run.to_pandas().shape[0] == 1
    wide = to_frame(run)
    assert wide.shape == (1, 6) and wide.loc[0, "relevance_to_query/value"] == "yes"
