"""`deepeval_topic_adherence` (kind deepeval_conversation) sends, call for call, the prompts the installed deepeval
package's own TopicAdherenceMetric sends (the real metric, async_mode=False, run with a recording model answering
canned JSON), and gives DeepEval's score and reason on the same answers: strict mode off and on, two exchanges, no
complete exchange at all."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM, judge_turns  # noqa: E402

TOPICS = ["cooking", 'travel in "Lyon"']
TRIP = [
    ("user", "Hi, I'm Léa — what's a {good} dish in Lyon?"),
    ("assistant", "Try quenelles."),
    ("user", "And who won the match?"),
    ("assistant", "Team A won 2-1."),
]
OPEN = [("user", "hello"), ("user", "anyone?")]


def answer(prompt: str) -> dict:
    """The same canned answers for DeepEval and for us: one pair per exchange, TP for food, FN for sport."""
    if "Relevant topics:" in prompt:
        q = prompt.rsplit("Question: ", 1)[1]
        return {"verdict": "TP", "reason": "on topic"} if "dish" in q else {"verdict": "FN", "reason": 'off "topic"'}
    if prompt.rstrip().endswith("\n\n") or "Conversation: \n" in prompt:
        unit = prompt.rsplit("Conversation: \n", 1)[1]
        user = unit.split("user \n", 1)[1].split(" \n", 1)[0]
        reply = unit.split("assistant \n", 1)[1].split(" \n", 1)[0]
        return {"qa_pairs": [{"question": user, "response": reply}]}
    return {"reason": "because"}


def _theirs(turns, strict_mode=False):
    from deepeval.metrics import TopicAdherenceMetric
    from deepeval.test_case import ConversationalTestCase, Turn

    prompts: list[str] = []
    metric = TopicAdherenceMetric(
        relevant_topics=TOPICS, model=RecordingLLM.by_schema(answer, prompts), async_mode=False, strict_mode=strict_mode
    )
    metric.measure(ConversationalTestCase(turns=[Turn(role=r, content=c) for r, c in turns]), _show_indicator=False)
    return metric, prompts


def _ours(turns, strict_mode=False, topics=TOPICS):
    return judge_turns("deepeval_topic_adherence", turns, answer, strict_mode, relevant_topics=topics)


@pytest.mark.parametrize("turns", [TRIP, TRIP[:2], OPEN], ids=["off_topic_half", "on_topic", "no_pairs"])
@pytest.mark.parametrize("strict_mode", [False, True])
def test_prompts_score_and_reason_are_deepevals_own(turns, strict_mode):
    metric, theirs = _theirs(turns, strict_mode)
    result, ours = _ours(turns, strict_mode)
    assert ours == theirs
    assert result.score == pytest.approx(metric.score)
    assert result.rationale == metric.reason


def test_an_off_topic_exchange_halves_the_score_and_no_pair_scores_zero():
    result, prompts = _ours(TRIP)
    assert len(prompts) == 2 + 2 + 1  # a pair extraction per exchange, a verdict per pair, the reason
    assert result.score == pytest.approx(0.5)
    empty, none = _ours(OPEN)
    assert (empty.score, none) == (0.0, [])


def test_topics_given_as_json_text_are_the_same_list():
    result, prompts = _ours(TRIP, topics=json.dumps(TOPICS))
    assert prompts == _theirs(TRIP)[1]


def test_missing_topics_are_a_one_line_error_naming_the_variable():
    from localjudge.errors import InputError

    with pytest.raises(InputError, match="relevant_topics"):
        _ours(TRIP, topics="[]")
