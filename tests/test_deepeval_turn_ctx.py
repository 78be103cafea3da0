"""`deepeval_turn_contextual_precision` and `deepeval_turn_contextual_recall` (kind deepeval_conversation) send, call
for call, the prompts the installed deepeval package's own TurnContextualPrecisionMetric / TurnContextualRecallMetric
send (the real metrics, async_mode=False, run with a recording model answering canned JSON), and give DeepEval's
score and reason on the same answers: strict mode off and on; a turn with no retrieval context, windows longer than
the conversation (DeepEval's window of 10) and a conversation longer than one window, a conversation with no
complete exchange."""

from __future__ import annotations

import ast
import json

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM, conversation_judge  # noqa: E402
from integrations_support import scripted  # noqa: E402

# (role, content, retrieval context), and each conversation's expected outcome
LYON = [
    ("user", "Hi, I'm Léa — what's a {good} dish in \"Lyon\"?", None),
    (
        "assistant",
        "Try quenelles.",
        ["The Rhône is long.", "Quenelles are a Lyon speciality.", "Lyon is in France."],
    ),
    ("user", "And the weather?", None),
    ("assistant", "Sunny today.", None),  # no retrieval context for this answer
]
LYON_OUTCOME = 'Quenelles are a Lyon "speciality". It is {sunny}.'
ONE = [("user", "Who wrote Candide?", None), ("assistant", "Voltaire.", ["Candide is a satire by Voltaire."])]
ONE_OUTCOME = "Voltaire wrote Candide."
OPEN = [("user", "hello", None), ("user", "anyone?", None)]
# twelve exchanges: the later windows hold the last 10 (DeepEval's window_size), not the whole conversation
LONG = [
    t
    for i in range(12)
    for t in (("user", f"Question {i}?", None), ("assistant", f"Answer {i}.", [f"Passage {i}.", "Lyon is in France."]))
]
CASES = {"lyon": (LYON, LYON_OUTCOME), "one": (ONE, ONE_OUTCOME), "open": (OPEN, "hello back"), "long": (LONG, "Lyon.")}


def _last_word(text: str) -> str:
    return text.strip().rstrip(".").split()[-1].strip('"{}')


def answer(prompt: str) -> dict:
    """The same canned answers for DeepEval and for us, chosen from what each prompt asks."""
    if "remotely useful" in prompt:  # precision's verdicts: a passage naming Lyon or Voltaire is useful
        ctx = ast.literal_eval(prompt.rsplit("document", 1)[1].split(":\n", 1)[1].rsplit("\n\nJSON:", 1)[0])
        return {
            "verdicts": [{"verdict": "yes" if ("Lyon" in c or "Voltaire" in c) else "no", "reason": f"'{c[:12]}'"} for c in ctx]
        }
    if "can be attributed to the nodes" in prompt:  # recall's verdicts: a sentence whose last word is in the context
        outcome = prompt.rsplit("Assistant Output:\n", 1)[1].split("\n\nRetrieval Context:\n", 1)[0]
        ctx = prompt.rsplit("Retrieval Context:\n", 1)[1]
        sentences = [s for s in outcome.split(". ") if s.strip()]
        return {
            "verdicts": [
                {"verdict": "yes" if _last_word(s) in ctx else "no", "reason": f"{_last_word(s)} (1st node)"} for s in sentences
            ]
        }
    return {"reason": f"because {len(prompt)}"}


METRICS = {
    "deepeval_turn_contextual_precision": "TurnContextualPrecisionMetric",
    "deepeval_turn_contextual_recall": "TurnContextualRecallMetric",
}


def _theirs(name, turns, outcome, strict_mode=False):
    import deepeval.metrics as metrics
    from deepeval.test_case import ConversationalTestCase, Turn

    prompts: list[str] = []
    metric = getattr(metrics, METRICS[name])(
        model=RecordingLLM.by_schema(answer, prompts), async_mode=False, strict_mode=strict_mode
    )
    case = ConversationalTestCase(
        turns=[Turn(role=r, content=c, retrieval_context=rc) for r, c, rc in turns], expected_outcome=outcome
    )
    metric.measure(case, _show_indicator=False)
    return metric, prompts


def _ours(name, turns, outcome, strict_mode=False, reply=None):
    from localjudge.conversations import from_messages
    from localjudge.conversations.render import deepeval_rag_turns_text

    judge = conversation_judge(name, strict_mode)
    prompts: list[str] = []

    def record(msgs, fmt):
        (m,) = msgs
        prompts.append(m.content)
        return reply(m.content) if reply else json.dumps(answer(m.content), ensure_ascii=False)

    msgs = [{"role": r, "content": c, **({"retrieval_context": rc} if rc is not None else {})} for r, c, rc in turns]
    rag = deepeval_rag_turns_text(from_messages(msgs))
    return judge.evaluate(scripted(record), deepeval_rag_turns=rag, expected_outcome=outcome), prompts


@pytest.mark.parametrize("name", sorted(METRICS))
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("strict_mode", [False, True])
def test_prompts_score_and_reason_are_deepevals_own(name, case, strict_mode):
    turns, outcome = CASES[case]
    metric, theirs = _theirs(name, turns, outcome, strict_mode)
    result, ours = _ours(name, turns, outcome, strict_mode)
    assert ours == theirs
    assert result.score == pytest.approx(metric.score)
    assert result.rationale == metric.reason


def test_precision_weights_a_useless_passage_ranked_first():
    result, prompts = _ours("deepeval_turn_contextual_precision", LYON, LYON_OUTCOME)
    # window 1: the verdicts on its three passages, the reason; window 2 (both exchanges) the same two; the final reason
    assert len(prompts) == 2 + 2 + 1
    assert "Retrieval Context  (3 documents):\n['The Rhône is long.'" in prompts[0]
    assert result.score == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert "'verdict': <Verdict.NO: 'no'>, 'reason': \"'The Rhône is'\", 'node': 'Node 1'" in prompts[1]
    strict, _ = _ours("deepeval_turn_contextual_precision", LYON, LYON_OUTCOME, strict_mode=True)
    assert strict.score == 0.0


def test_recall_judges_each_sentence_of_the_expected_outcome():
    result, prompts = _ours("deepeval_turn_contextual_recall", LYON, LYON_OUTCOME)
    assert len(prompts) == 2 + 2 + 1
    assert f"Assistant Output:\n{LYON_OUTCOME}\n" in prompts[0]
    assert result.score == pytest.approx(0.5)  # "speciality" is in a passage, "sunny" is not
    none, calls = _ours("deepeval_turn_contextual_recall", [("user", "hi", None), ("assistant", "hello", None)], "x")
    assert none.score == 1.0 and len(calls) == 1  # only the final reason: the window has no passage


def test_an_unparsable_answer_is_unscored_naming_the_stage():
    result, _ = _ours("deepeval_turn_contextual_recall", ONE, ONE_OUTCOME, reply=lambda p: "not json")
    assert result.score is None and result.unscored_reason == "parse_error"
    assert result.error.startswith("generate_verdicts: ")


@pytest.mark.parametrize("name", sorted(METRICS))
def test_a_row_without_expected_outcome_is_a_one_line_error_naming_it(name):
    from localjudge.conversations import from_messages
    from localjudge.conversations.render import deepeval_rag_turns_text
    from localjudge.errors import InputError
    from localjudge.judges import get_judge

    rag = deepeval_rag_turns_text(from_messages([{"role": "user", "content": "hi"}]))
    with pytest.raises(InputError, match="expected_outcome") as e:
        get_judge(name).evaluate(scripted(lambda m, f: "{}"), deepeval_rag_turns=rag)
    assert "\n" not in str(e.value)


def test_a_run_reads_expected_outcome_from_the_row_beside_its_messages(tmp_path):
    from localjudge import evaluate
    from localjudge.engine.base import ScriptedEngine

    prompts: list[str] = []

    def reply(msgs, fmt):
        prompts.append(msgs[-1].content)
        return json.dumps(answer(msgs[-1].content), ensure_ascii=False)

    messages = [{"role": r, "content": c, **({"retrieval_context": rc} if rc else {})} for r, c, rc in ONE]
    rows = [{"id": "candide", "messages": messages, "expected_outcome": ONE_OUTCOME}]
    result = evaluate(
        rows, ["deepeval_turn_contextual_recall"], engine=ScriptedEngine(reply), conversation={}, out=tmp_path / "run"
    )
    (row,) = list(result.results)
    assert row.result.score == 1.0 and row.result.unscored_reason is None
    assert f"Assistant Output:\n{ONE_OUTCOME}\n\nRetrieval Context:\n['Candide is a satire by Voltaire.']" in prompts[0]
