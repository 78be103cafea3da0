"""`deepeval_role_adherence` (kind deepeval_conversation) sends, call for call, the prompts the installed deepeval
package's own RoleAdherenceMetric sends (the real metric run with a recording model answering canned JSON), and
gives DeepEval's score on the same answers: strict mode off and on, no assistant turn out of character, one out of
character, an index past the turns (its message kept as the model wrote it)."""

from __future__ import annotations

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM, judge_turns  # noqa: E402

ROLE = 'A cheerful pirate "captain" who {always} speaks like a pirate.'
PIRATE = [
    ("user", "Ahoy! Where is the treasure?"),
    ("assistant", "Arr, matey, 'tis buried on Skull Island!"),
    ("user", "How do I get there?"),
    ("assistant", "As an AI language model, I cannot give directions."),
]
IN_CHARACTER = [("user", "Hello"), ("assistant", "Arr, ahoy there!")]
PAST_THE_END = [("user", "Hi"), ("assistant", "Hello, I am a helpful assistant.")]


def answer(prompt: str) -> dict:
    """Canned answers, the same for DeepEval and for us: "As an AI" turns out of character (index 3), an index past
    the end for a "helpful assistant" turn."""
    if "Out of character responses:" in prompt:
        return {"reason": "because"}
    messages = prompt.rsplit("Messages:\n", 1)[1]
    verdicts = []
    if "As an AI" in messages:
        verdicts.append({"index": 3, "reason": "breaks character"})
    if "helpful assistant" in messages:
        verdicts.append({"index": 7, "reason": "not a pirate", "ai_message": "the model's own"})
    return {"verdicts": verdicts}


def _theirs(turns, strict_mode=False):
    from deepeval.metrics import RoleAdherenceMetric
    from deepeval.test_case import ConversationalTestCase, Turn

    prompts: list[str] = []
    metric = RoleAdherenceMetric(model=RecordingLLM.by_schema(answer, prompts), async_mode=False, strict_mode=strict_mode)
    case = ConversationalTestCase(turns=[Turn(role=r, content=c) for r, c in turns], chatbot_role=ROLE)
    metric.measure(case, _show_indicator=False)
    return metric, prompts


def _ours(turns, strict_mode=False):
    def with_messages(prompt):  # our schema asks for each verdict's ai_message (DeepEval sets it itself)
        out = answer(prompt)
        for v in out.get("verdicts", []):
            v.setdefault("ai_message", None)
        return out

    return judge_turns("deepeval_role_adherence", turns, with_messages, strict_mode, chatbot_role=ROLE)


@pytest.mark.parametrize("turns", [PIRATE, IN_CHARACTER, PAST_THE_END], ids=["one_out", "all_in", "index_past_end"])
@pytest.mark.parametrize("strict_mode", [False, True])
def test_prompts_and_score_are_deepevals_own(turns, strict_mode):
    metric, theirs = _theirs(turns, strict_mode)
    result, ours = _ours(turns, strict_mode)
    assert ours == theirs
    assert result.score == pytest.approx(metric.score)
    assert result.rationale == metric.reason == "because"


def test_the_score_is_the_fraction_of_assistant_turns_in_character():
    result, prompts = _ours(PIRATE)
    assert result.score == pytest.approx(0.5) and len(prompts) == 2
    assert result.details["verdicts"][0]["ai_message"] == "As an AI language model, I cannot give directions. (turn #4)"
    assert _ours(IN_CHARACTER)[0].score == 1
    assert _ours(PIRATE, strict_mode=True)[0].score == 0
