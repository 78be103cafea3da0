"""Parser fuzzing: for every output format, arbitrary and near-valid text either parses to a valid
typed verdict or raises the library's ParseError — never another exception, never a wrong value."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localjudge.errors import ParseError
from localjudge.formats import (
    Choice,
    FourLine,
    OutputFormat,
    PairwiseJSON,
    ScoreJSON,
    ScoreLines,
    Statements,
    VerdictList,
    YesNoJSON,
)

FORMATS: list[OutputFormat] = [
    YesNoJSON(),
    ScoreJSON(1, 5),
    ScoreJSON(0, 1, decimals=1),
    PairwiseJSON(),
    ScoreLines(1, 5),
    FourLine(),
    Choice(list("ABCDE"), values={"A": 0.4, "B": 0.6, "C": 1, "D": 0, "E": 1}),
    Choice(["good", "bad"], rationale=True),
    Statements(max_items=4),
    VerdictList(3),
]
IDS = [f.describe()[:40] for f in FORMATS]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_or_parse_error(fmt: OutputFormat, text: str):
    try:
        v = fmt.parse(text)
    except ParseError:
        return None
    score = fmt.normalise(v)
    assert score is None or 0.0 <= score <= 1.0
    return v


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
@SETTINGS
@given(text=st.text(max_size=400))
def test_arbitrary_text_parses_or_raises_parse_error(fmt, text):
    _parse_or_parse_error(fmt, text)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_every_text_the_constraint_allows_parses_to_the_same_values(fmt, data):
    text = data.draw(st.from_regex(fmt.regex(), fullmatch=True).filter(lambda t: len(t) < 2000))
    v = fmt.parse(text)
    if text.startswith("{"):
        obj = json.loads(text)
        dumped = v.model_dump()
        for key in ("result", "rationale", "explanation", "statements"):
            if key in obj:
                assert dumped.get(key) == obj[key] or (key == "result" and dumped.get("label") == obj[key])
        if "eval_score" in obj:
            assert dumped["eval_score"] == float(obj["eval_score"])
        if "verdicts" in obj:
            assert [x["verdict"] for x in dumped["verdicts"]] == [x["verdict"] for x in obj["verdicts"]]
    elif isinstance(fmt, ScoreLines):
        assert v.score == int(re.match(r"score: (\d+)", text).group(1))


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_cut_valid_outputs_never_give_a_different_verdict(fmt, data):
    text = data.draw(st.from_regex(fmt.regex(), fullmatch=True).filter(lambda t: len(t) < 1000))
    full = fmt.value(fmt.parse(text))
    cut = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    v = _parse_or_parse_error(fmt, text[:cut])
    if v is not None and not isinstance(fmt, (Statements, ScoreLines)):
        # a prefix may still hold a whole verdict (e.g. the four lines before "Final"), never another one
        assert fmt.value(v) == full or isinstance(fmt, FourLine)


NEAR_VALID = [
    '{"rationale": "x", "result": "maybe"}',
    '{"rationale": "x"}',
    '{"result": ["yes"]}',
    '{"result": null}',
    '{"eval_score": "4", "explanation": "x"}',
    '{"eval_score": "four"}',
    '{"eval_score": 9}',
    '{"eval_score": NaN}',
    '{"eval_score": 1e999}',
    '{"eval_score": true}',
    '{"better_response": 3}',
    '{"better_response": "1"}',
    "score: 4.5\njustification: x",
    "score: -1",
    "SCORE: 3\nJustification: fine",
    "Accuracy: 11\nComprehensiveness: 2",
    "Accuracy: 5\nComprehensiveness: 5\nContext Precision: 5\nFinal: 9.9",
    '{"statements": "one"}',
    '{"statements": [1, 2, {"a": 1}]}',
    '{"verdicts": [{"verdict": "yes"}]}',
    '{"verdicts": [1, 2, 3]}',
    "[[A]] and [[B]]",
    "Answer: (C)",
    "\x00\x01\x02",
    "{" * 3000,
    "[" * 3000 + "]" * 3000,
    '{"a": ' * 500,
    '{"Result": "YES", "RATIONALE": "caps"}',
    '```json\n{"result": "no", "rationale": "fenced"}\n```',
    "x" * 100_000,
]


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_near_valid_and_giant_texts_parse_or_raise_parse_error(fmt):
    for text in NEAR_VALID:
        _parse_or_parse_error(fmt, text)


def test_near_valid_texts_get_the_right_values_where_they_parse():
    assert YesNoJSON().parse('{"Result": "YES", "RATIONALE": "caps"}').result == "yes"
    assert ScoreJSON(1, 5).parse('{"eval_score": "4", "explanation": "x"}').eval_score == 4
    assert PairwiseJSON().parse('{"better_response": "1", "explanation": ""}').better_response == 1
    for bad, fmt in [
        ('{"eval_score": 9}', ScoreJSON(1, 5)),
        ('{"better_response": 3}', PairwiseJSON()),
        ("score: 4.5\njustification: x", ScoreLines()),
        ('{"verdicts": [{"verdict": "yes"}]}', VerdictList(3)),
        ("[[A]] and [[B]]", Choice(list("ABCDE"))),
        ('{"eval_score": true}', ScoreJSON(1, 5)),
    ]:
        with pytest.raises(ParseError):
            fmt.parse(bad)
