"""An assistant turn's retrieval context (DeepEval's `Turn.retrieval_context`): read from a messages row and from a
DeepEval ConversationalTestCase, bounded, a bad value a one-line error naming the message and the field, printed for
the turn-level RAG judges as `deepeval_rag_turns` (the plain `deepeval_turns` unchanged), kept in the run's stored
conversation, and judged end to end by `localjudge.evaluate`."""

from __future__ import annotations

import json

import pytest

from localjudge.conversations import from_messages
from localjudge.conversations.readers import Bounds
from localjudge.conversations.render import deepeval_rag_turns_text, deepeval_turns_text
from localjudge.errors import InputError

MESSAGES = [
    {"role": "user", "content": "Who wrote Candide?"},
    {"role": "assistant", "content": "Voltaire.", "retrieval_context": ["Candide is by Voltaire.", "It dates from 1759."]},
    {"role": "user", "content": "Thanks"},
    {"role": "assistant", "content": "You're welcome."},
]


def test_an_assistant_message_carries_its_retrieval_context_and_other_turns_none():
    conv = from_messages(MESSAGES)
    assert [t.retrieval_context for t in conv.turns] == [None, ["Candide is by Voltaire.", "It dates from 1759."], None, None]
    assert from_messages(MESSAGES[:1] + [{**MESSAGES[1], "retrieval_context": []}]).turns[1].retrieval_context == []


@pytest.mark.parametrize(
    ("message", "where"),
    [
        ({"role": "user", "content": "x", "retrieval_context": ["a"]}, r"^messages\[1\]\.retrieval_context: only an assistant"),
        (
            {"role": "assistant", "content": "x", "retrieval_context": "a"},
            r"^messages\[1\]\.retrieval_context: a str, not a list",
        ),
        ({"role": "assistant", "content": "x", "retrieval_context": ["a", 3]}, r"^messages\[1\]\.retrieval_context\[1\]: a int"),
    ],
)
def test_a_bad_retrieval_context_is_a_one_line_error_naming_the_message_and_field(message, where):
    with pytest.raises(InputError, match=where) as e:
        from_messages([MESSAGES[0], message])
    assert "\n" not in str(e.value)


def test_retrieval_context_counts_against_the_text_bound():
    big = [MESSAGES[0], {"role": "assistant", "content": "x", "retrieval_context": ["y" * 600]}]
    with pytest.raises(InputError, match="bytes of text, more than the limit of 500"):
        from_messages(big, bounds=Bounds(max_bytes=500))


def test_deepeval_rag_turns_prints_the_contexts_and_deepeval_turns_stays_as_it_was():
    conv = from_messages(MESSAGES)
    assert deepeval_turns_text(conv) == str([{"content": m["content"], "role": m["role"]} for m in MESSAGES])
    rag = deepeval_rag_turns_text(conv)
    assert rag == str(
        [
            {"content": "Who wrote Candide?", "role": "user"},
            {
                "content": "Voltaire.",
                "role": "assistant",
                "retrieval_context": ["Candide is by Voltaire.", "It dates from 1759."],
            },
            {"content": "Thanks", "role": "user"},
            {"content": "You're welcome.", "role": "assistant"},
        ]
    )


def test_a_deepeval_case_keeps_each_turns_retrieval_context():
    pytest.importorskip("deepeval")
    from deepeval.test_case import ConversationalTestCase, RetrievedContextData, Turn

    from localjudge.conversations import from_deepeval

    case = ConversationalTestCase(
        turns=[
            Turn(role="user", content="Who wrote Candide?"),
            Turn(
                role="assistant",
                content="Voltaire.",
                retrieval_context=["Candide is by Voltaire.", RetrievedContextData(context="1759.", source="wiki")],
            ),
        ]
    )
    conv = from_deepeval(case)
    assert conv.turns[1].retrieval_context == ["Candide is by Voltaire.", "1759."]
    assert conv.turns[0].retrieval_context is None


def test_a_conversation_without_retrieval_context_stores_the_same_json_as_before():
    conv = from_messages([MESSAGES[0], MESSAGES[3]])
    assert "retrieval_context" not in conv.model_dump_json(exclude_defaults=True)


def test_a_run_of_the_rag_judge_scores_the_turns_and_keeps_their_contexts_in_the_store(tmp_path):
    from localjudge import evaluate
    from localjudge.conversations.stored import read_stored_conversations
    from localjudge.engine.base import ScriptedEngine

    def reply(msgs, fmt):
        text = msgs[-1].content
        if '"truths"' in text:
            return json.dumps({"truths": ["Candide is by Voltaire."]})
        if '"claims"' in text:
            return json.dumps({"claims": ["Voltaire wrote Candide."]})
        if "CLAIMS:" in text:
            return json.dumps({"verdicts": [{"verdict": "yes"}]})
        return json.dumps({"reason": "faithful"})

    out = tmp_path / "run"
    rows = [{"id": "candide", "messages": MESSAGES}]
    result = evaluate(rows, ["deepeval_turn_faithfulness"], engine=ScriptedEngine(reply), conversation={}, out=out)
    (row,) = list(result.results)
    assert (row.result.score, row.result.rationale, row.result.unscored_reason) == (1.0, "faithful", None)
    stored = read_stored_conversations(result.store_path, result.run_id)
    assert stored["candide"].turns[1].retrieval_context == ["Candide is by Voltaire.", "It dates from 1759."]
