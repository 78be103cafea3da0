"""The parse layer accepts what other tools' judges print, and rejects what is invalid with a typed error."""

from __future__ import annotations

import pytest

from localjudge.errors import ParseError
from localjudge.formats import ResultJSON, make_format


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"rationale": "ok", "result": "yes"}\n```',
        'Let\'s think step by step. The claim matches.\n\n{"rationale": "ok", "result": "yes"}',
        '{"Rationale": "ok", "Result": "YES"}',
        'Here you go:\n```\n{"rationale": "ok",\n "result": "yes"}\n```\nHope this helps.',
    ],
)
def test_yes_no_json_accepts_what_other_judges_print(text):
    v = make_format("yes_no_json").parse(text)
    assert v.result == "yes" and v.rationale == "ok"


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ('{"eval_score": "4", "explanation": "good"}', 4),
        ('```json\n{"Eval_Score": 3, "Explanation": "fine"}\n```', 3),
        ('Let\'s think step by step.\n{"eval_score": 5.0, "explanation": "great"}', 5),
    ],
)
def test_score_json_accepts_strings_fences_and_capitalised_keys(text, score):
    assert make_format("score_json", min=1, max=5).parse(text).eval_score == score


def test_score_lines_accepts_a_multi_line_justification_and_markdown():
    v = make_format("score_lines").parse("Score: 4\nJustification: Mostly right.\nIt misses one fact.")
    assert v.score == 4 and v.justification == "Mostly right.\nIt misses one fact."
    v = make_format("score_lines").parse("**score**: 5\n**justification**: Complete.")
    assert v.score == 5 and v.justification.endswith("Complete.")
    assert make_format("score_lines").parse("score: 3/5\njustification: meh").score == 3


def test_four_line_accepts_bold_labels_and_ignores_the_reported_final():
    v = make_format("four_line").parse("**Accuracy:** 7\n**Comprehensiveness:** 6\n**Context Precision:** 5\n**Final:** 0.9")
    assert (v.accuracy, v.comprehensiveness, v.context_precision, v.final, v.final_reported) == (7, 6, 5, 0.6, 0.9)


def test_pairwise_accepts_a_string_better_response():
    v = make_format("pairwise_json").parse('{"better_response": "2", "explanation": "more complete"}')
    assert (v.better_response, v.raw_value) == (2, 2)


def test_choice_accepts_bare_bracketed_and_json_answers():
    f = make_format("choice", labels=["A", "B", "C", "D", "E"])
    assert f.parse("B").label == "B"
    assert f.parse("(c)").label == "C"
    assert f.parse("After comparing, the answer is [[D]].").label == "D"
    assert f.parse('{"rationale": "subset", "choice": "a"}').label == "A"


def test_verdict_list_accepts_capitalised_keys_and_verdicts():
    f = make_format("verdict_list", n=2)
    v = f.parse('```json\n{"Verdicts": [{"Verdict": "Yes", "Reason": "r"}, {"verdict": "UNSURE", "reason": "s"}]}\n```')
    assert [x.verdict for x in v.verdicts] == ["yes", "unsure"]


def test_statements_accepts_a_fenced_list():
    assert make_format("statements").parse('```json\n{"statements": ["a", "b"]}\n```').statements == ["a", "b"]


def test_result_json_accepts_boolean_words_and_string_numbers():
    assert ResultJSON("bool").parse('{"rationale": "x", "result": "Yes"}').result is True
    assert ResultJSON("int", min=1, max=5).parse('{"Rationale": "x", "Result": "3"}').result == 3


@pytest.mark.parametrize(
    ("fmt", "text", "why"),
    [
        (make_format("score_json", min=1, max=5), '{"eval_score": 7, "explanation": "x"}', "outside 1..5"),
        (make_format("score_json", min=0, max=5), '{"eval_score": 2.5, "explanation": "x"}', "not an integer"),
        (make_format("score_json", min=1, max=5), '{"eval_score": "high", "explanation": "x"}', "must be a number"),
        (make_format("score_lines"), "score: 9\njustification: x", "outside 1..5"),
        (make_format("score_lines"), "The answer is good.", "no 'score:' line"),
        (make_format("yes_no_json"), '{"rationale": "x", "result": "maybe"}', "must be 'yes' or 'no'"),
        (make_format("yes_no_json"), "yes, it is supported", "no JSON object"),
        (make_format("choice", labels=["A", "B"]), '{"rationale": "x", "result": "Z"}', "unknown label 'Z'"),
        (make_format("four_line"), "Accuracy: 11\nComprehensiveness: 2\nContext Precision: 2", "integer 0..10"),
        (make_format("pairwise_json"), '{"better_response": 3, "explanation": "x"}', "must be 1, 2 or 0"),
        (make_format("verdict_list", n=2), '{"verdicts": [{"verdict": "yes", "reason": "r"}]}', "exactly 2 verdicts"),
        (ResultJSON("float", min=0, max=1), '{"rationale": "x", "result": 1.5}', "outside 0..1"),
    ],
)
def test_invalid_verdicts_raise_an_explained_parse_error(fmt, text, why):
    with pytest.raises(ParseError, match=why) as e:
        fmt.parse(text)
    assert e.value.format_name == fmt.kind and e.value.text == text
