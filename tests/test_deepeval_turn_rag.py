"""`deepeval_turn_faithfulness` and `deepeval_turn_contextual_relevancy` (kind deepeval_conversation) send, call for
call, the prompts the installed deepeval package's own TurnFaithfulnessMetric / TurnContextualRelevancyMetric send
(the real metrics, async_mode=False, run with a recording model answering canned JSON), and give DeepEval's score
and reason on the same answers: strict mode off and on; a turn with no retrieval context, a turn with several
passages, a conversation with no complete exchange."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM, conversation_judge  # noqa: E402
from integrations_support import scripted  # noqa: E402

# (role, content, retrieval context): three conversations
LYON = [
    ("user", "Hi, I'm Léa — what's a {good} dish in \"Lyon\"?", None),
    ("assistant", "Try quenelles. They are from Paris.", ["Quenelles are a Lyon speciality.", "Lyon is in France."]),
    ("user", "And the weather?", None),
    ("assistant", "Sunny today.", None),  # no retrieval context for this answer
]
ONE = [("user", "Who wrote Candide?", None), ("assistant", "Voltaire.", ["Candide is a satire by Voltaire."])]
OPEN = [("user", "hello", None), ("user", "anyone?", None)]


def answer(prompt: str) -> dict:
    """The same canned answers for DeepEval and for us, chosen from what each prompt asks."""
    if '"truths"' in prompt:
        ctx = prompt.rsplit("REFERENCE CONTEXT:\n", 1)[1].rsplit("\n\nJSON:", 1)[0]
        return {"truths": [p for p in ctx.split("\n\n") if p.strip()]}
    if '"claims"' in prompt:
        out = prompt.rsplit("ASSISTANT OUTPUT:\n", 1)[1].rsplit("\n\nJSON:", 1)[0]
        return {"claims": [s.strip() + "." for s in out.replace("\n", " ").split(".") if s.strip()]}
    if "CLAIMS:" in prompt:
        claims = prompt.rsplit("CLAIMS:\n", 1)[1]
        verdicts = [{"verdict": "yes"}]
        if "Paris" in claims:
            verdicts.append({"verdict": "no", "reason": 'Quenelles are from "Lyon".'})
        if "Sunny" in claims:
            verdicts.append({"verdict": "borderline", "reason": "not in context"})
        return {"verdicts": verdicts}
    if '"statement"' in prompt and "Context:" in prompt:
        ctx = prompt.rsplit("Context:\n", 1)[1]
        rel = "yes" if ("Quenelles" in ctx or "Candide" in ctx) else "no"
        return {
            "verdicts": [{"statement": ctx.split("\n", 1)[0][:30], "verdict": rel, "reason": None if rel == "yes" else "off"}]
        }
    return {"reason": "because"}


METRICS = {
    "deepeval_turn_faithfulness": "TurnFaithfulnessMetric",
    "deepeval_turn_contextual_relevancy": "TurnContextualRelevancyMetric",
}


def _theirs(name, turns, strict_mode=False):
    import deepeval.metrics as metrics
    from deepeval.test_case import ConversationalTestCase, Turn

    prompts: list[str] = []
    metric = getattr(metrics, METRICS[name])(
        model=RecordingLLM.by_schema(answer, prompts), async_mode=False, strict_mode=strict_mode
    )
    case = ConversationalTestCase(turns=[Turn(role=r, content=c, retrieval_context=rc) for r, c, rc in turns])
    metric.measure(case, _show_indicator=False)
    return metric, prompts


def _messages(turns):
    return [{"role": r, "content": c, **({"retrieval_context": rc} if rc is not None else {})} for r, c, rc in turns]


def _ours(name, turns, strict_mode=False, reply=None):
    from localjudge.conversations import from_messages
    from localjudge.conversations.render import deepeval_rag_turns_text

    judge = conversation_judge(name, strict_mode)
    prompts: list[str] = []

    def record(msgs, fmt):
        (m,) = msgs
        prompts.append(m.content)
        return reply(m.content) if reply else json.dumps(answer(m.content), ensure_ascii=False)

    conv = from_messages(_messages(turns))
    return judge.evaluate(scripted(record), deepeval_rag_turns=deepeval_rag_turns_text(conv)), prompts


@pytest.mark.parametrize("name", sorted(METRICS))
@pytest.mark.parametrize("turns", [LYON, ONE, OPEN], ids=["two_exchanges_one_without_context", "one", "no_exchange"])
@pytest.mark.parametrize("strict_mode", [False, True])
def test_prompts_score_and_reason_are_deepevals_own(name, turns, strict_mode):
    metric, theirs = _theirs(name, turns, strict_mode)
    result, ours = _ours(name, turns, strict_mode)
    assert ours == theirs
    assert result.score == pytest.approx(metric.score)
    assert result.rationale == metric.reason


def test_faithfulness_counts_a_contradicted_claim_against_its_window():
    result, prompts = _ours("deepeval_turn_faithfulness", LYON)
    # window 1: truths, claims, verdicts, reason; window 2 (both exchanges): the same four; the final reason
    assert len(prompts) == 4 + 4 + 1
    assert "Quenelles are a Lyon speciality.\n\nLyon is in France." in prompts[0]
    assert result.score == pytest.approx((1 / 2 + 2 / 3) / 2)
    strict, _ = _ours("deepeval_turn_faithfulness", LYON, strict_mode=True)
    assert strict.score == 0.0


def test_contextual_relevancy_judges_each_passage_and_skips_a_turn_without_context():
    result, prompts = _ours("deepeval_turn_contextual_relevancy", LYON)
    # window 1: a verdicts call per passage (two), the reason; window 2 holds the same passages; the final reason
    assert len(prompts) == 3 + 3 + 1
    assert result.score == pytest.approx(0.5)
    none, calls = _ours("deepeval_turn_contextual_relevancy", [("user", "hi", None), ("assistant", "hello", None)])
    assert none.score == 1.0 and len(calls) == 1  # only the final reason: the window has no passage


def test_an_unparsable_answer_is_unscored_naming_the_stage():
    result, _ = _ours("deepeval_turn_faithfulness", ONE, reply=lambda p: "not json")
    assert result.score is None and result.unscored_reason == "parse_error"
    assert result.error.startswith("generate_truths: ")


def test_turns_without_the_rag_value_are_a_one_line_error_naming_the_variable():
    from localjudge.errors import InputError
    from localjudge.judges import get_judge

    with pytest.raises(InputError, match="deepeval_rag_turns"):
        get_judge("deepeval_turn_faithfulness").evaluate(scripted(lambda m, f: "{}"), deepeval_rag_turns="nope")
