"""`deepeval_conversation_completeness` (kind deepeval_conversation) sends, call for call, the prompts the installed
deepeval package's own ConversationCompletenessMetric sends (the real metric run with a recording model answering
canned JSON), and gives DeepEval's score on the same answers: strict mode off and on, no intentions at all, some
intentions unmet, all unmet."""

from __future__ import annotations

import json

import pytest
from integrations_support import scripted

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM  # noqa: E402

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
    from localjudge.conversations import from_messages
    from localjudge.conversations.render import deepeval_turns_text
    from localjudge.judges import get_judge
    from localjudge.judges.judge import Judge

    judge = get_judge("deepeval_conversation_completeness")
    if strict_mode:
        spec = judge.spec.model_copy(deep=True)
        assert spec.deepeval_conversation is not None
        spec.deepeval_conversation.strict_mode = True
        judge = Judge(spec)
    prompts: list[str] = []

    def reply(msgs, fmt):
        (m,) = msgs
        prompts.append(m.content)
        return json.dumps(answer(m.content), ensure_ascii=False)

    conv = from_messages([{"role": r, "content": c} for r, c in turns])
    result = judge.evaluate(scripted(reply), deepeval_turns=deepeval_turns_text(conv))
    return result, prompts


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
