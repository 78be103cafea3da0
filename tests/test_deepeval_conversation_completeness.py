"""`deepeval_conversation_completeness` (kind deepeval_conversation) sends, call for call, the prompts the installed
deepeval package's own ConversationCompletenessMetric sends (the real metric run with a recording model answering
canned JSON), and gives DeepEval's score on the same answers: strict mode off and on, no intentions at all, some
intentions unmet, all unmet."""

from __future__ import annotations

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM, judge_turns  # noqa: E402

TRIP = [
    ("user", 'Book me a table in Lyon — for "two" {tonight}, and find a hotel.'),
    ("assistant", "Your table for two is booked."),
    ("user", "And the hotel?"),
    ("assistant", "Isn't blue a nice colour?"),
]
SMALL_TALK = [("user", "hello"), ("assistant", "Hi! How can I help?")]
ALL_MET = [("user", "What is 2 + 2?"), ("assistant", "4.")]


def answer(prompt: str) -> dict:
    """Canned answers, the same for DeepEval and for us: intentions named in the first user message, "no" for the
    hotel (never found), "yes" otherwise."""
    if "User Intention:" in prompt:
        intention = prompt.rsplit("User Intention:\n", 1)[1]
        return {"verdict": "no", "reason": "no hotel"} if "hotel" in intention else {"verdict": "yes", "reason": None}
    if "Incompletenesses:" in prompt:
        return {"reason": "because"}
    turns = prompt.rsplit("Turns:\n", 1)[1]
    intents = [i for i, w in (("book a table", "table"), ("find a hotel", "hotel"), ("add numbers", "2 + 2")) if w in turns]
    return {"intentions": intents}


def _theirs(turns, strict_mode=False):
    from deepeval.metrics import ConversationCompletenessMetric
    from deepeval.test_case import ConversationalTestCase, Turn

    prompts: list[str] = []
    metric = ConversationCompletenessMetric(
        model=RecordingLLM.by_schema(answer, prompts), async_mode=False, strict_mode=strict_mode
    )
    metric.measure(ConversationalTestCase(turns=[Turn(role=r, content=c) for r, c in turns]), _show_indicator=False)
    return metric, prompts


def _ours(turns, strict_mode=False):
    return judge_turns("deepeval_conversation_completeness", turns, answer, strict_mode)


@pytest.mark.parametrize("turns", [TRIP, SMALL_TALK, ALL_MET], ids=["half_met", "no_intentions", "all_met"])
@pytest.mark.parametrize("strict_mode", [False, True])
def test_prompts_and_score_are_deepevals_own(turns, strict_mode):
    metric, theirs = _theirs(turns, strict_mode)
    result, ours = _ours(turns, strict_mode)
    assert ours == theirs
    assert result.score == pytest.approx(metric.score)
    assert result.rationale == metric.reason == "because"


def test_the_score_is_the_fraction_of_intentions_met_and_one_with_none():
    result, prompts = _ours(TRIP)
    assert result.score == pytest.approx(0.5) and len(prompts) == 1 + 2 + 1
    assert result.details["intentions"] == ["book a table", "find a hotel"]
    result, prompts = _ours(SMALL_TALK)
    assert result.score == 1 and len(prompts) == 1 + 1  # no verdict call
    assert _ours(TRIP, strict_mode=True)[0].score == 0
