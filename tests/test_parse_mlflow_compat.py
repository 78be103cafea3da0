"""Our parsers accept what MLflow's own parsers accept.

score_lines: the cases of MLflow's `test_extract_score_and_justification` (tests/metrics/genai in the
MLflow repository, checked against mlflow 3.17.2's `_extract_score_and_justification`), plus its one-line
text form. yes_no_json: MLflow's verdict spellings (`_sanitize_scorer_feedback` with the affirmative and
negative value sets of mlflow/genai/judges/constants.py); what MLflow reads as "unknown" is unscored here.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from localjudge.errors import ParseError
from localjudge.formats import make_format

J = "This is a justification"

# (text, score, justification) exactly as MLflow's test cases expect them
MLFLOW_SCORE_CASES = [
    ('{"score": 4, "justification": "This is a justification"}', 4, J),
    ("score: 2 \njustification: This is a justification", 2, J),
    ('{\n    "score": 3,\n    "justification": "This is a justification"\n}', 3, J),
    ('{"score": "4", "justification": "This is a justification"}', 4, J),
    (" Score: 2 \nJustification:\nThis is a justification", 2, J),
    ("Score: 2 \nJUSTIFICATION: This is a justification", 2, J),
    # the one-line forms of MLflow's two regular expressions
    ("score: 5, justification: This is a justification", 5, J),
    ("Score: 3 Justification: This is a justification", 3, J),
]


@pytest.mark.parametrize(("text", "score", "justification"), MLFLOW_SCORE_CASES)
def test_score_lines_accepts_every_form_mlflow_extracts(text, score, justification):
    v = make_format("score_lines").parse(text)
    assert (v.score, v.justification) == (score, justification)


@pytest.mark.parametrize(("text", "score", "justification"), MLFLOW_SCORE_CASES)
def test_mlflow_itself_extracts_the_same_score(text, score, justification):
    genai_metric = pytest.importorskip("mlflow.metrics.genai.genai_metric")
    got_score, got_justification = genai_metric._extract_score_and_justification(text)
    assert got_score == score and got_justification.strip() == justification


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"score": 4, "justification": {"foo": "bar"}}', "'justification' must be a string"),  # MLflow: (None, failure)
        ('{"score": 9, "justification": "x"}', "outside 1..5"),
        ('{"score": "high", "justification": "x"}', "must be a number"),
        ("", "no 'score:' line"),
    ],
)
def test_score_lines_refuses_what_mlflow_refuses(text, why):
    with pytest.raises(ParseError, match=why):
        make_format("score_lines").parse(text)


def test_the_parse_command_accepts_the_json_form():
    from localjudge.cli import main

    res = CliRunner().invoke(main, ["parse", "score_lines"], input='{"Score": "4", "Justification": "mostly right"}\n')
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["value"] == 4 and out["score"] == 0.75 and out["rationale"] == "mostly right"


@pytest.mark.parametrize(
    ("result", "verdict"),
    [("pass", "yes"), ("FAIL", "no"), ("Passed", "yes"), ("true", "yes"), ("False", "no"), ("correct", "yes"),
     ("incorrect", "no"), (" Yes ", "yes"), ("no", "no"), (True, "yes"), (False, "no")],
)  # fmt: skip
def test_yes_no_accepts_mlflow_verdict_spellings(result, verdict):
    v = make_format("yes_no_json").parse(json.dumps({"rationale": "r", "result": result}))
    assert v.result == verdict


@pytest.mark.parametrize("result", ["maybe", "unknown", "partially", "", 3, None])
def test_yes_no_leaves_what_mlflow_reads_as_unknown_unscored(result):
    with pytest.raises(ParseError, match="MLflow reads as 'unknown'"):
        make_format("yes_no_json").parse(json.dumps({"rationale": "r", "result": result}))


def test_yes_no_spellings_match_mlflow_sanitizer():
    builtin = pytest.importorskip("mlflow.genai.scorers.builtin_scorers")
    from mlflow.entities import Feedback

    from localjudge.formats.json_formats import MLFLOW_AFFIRMATIVE, MLFLOW_NEGATIVE, yes_no_of

    for word in sorted(MLFLOW_AFFIRMATIVE | MLFLOW_NEGATIVE) + ["maybe", "unknown", "unsure"]:
        theirs = builtin._sanitize_scorer_feedback(Feedback(name="x", value=word)).value
        assert (yes_no_of(word) or "unknown") == str(theirs), word


def test_a_judge_with_an_unknown_verdict_is_unscored_never_no():
    from localjudge import get_judge

    r = get_judge("relevance_to_query").score_text('{"rationale": "hard to say", "result": "maybe"}', input="q", output="a")
    assert not r.scored and r.unscored_reason == "parse_error" and r.value is None and r.passed is None
    assert "unknown" in (r.error or "")
