"""A conversation stays typed until the prompt is written (issue 44 part 2): the turns a conversation row prints for
DeepEval's judges (`deepeval_turns`, `deepeval_rag_turns`, `deepeval_tool_turns`) carry the turns they were printed
from, so a run's several-call judges read them as they were and never parse the text back; the stored and exported
text is the same bytes as before. A user's own printed text still reads, through the bounded reader."""

from __future__ import annotations

import json
import pickle

import pytest

import localjudge
import localjudge.jsonio
from localjudge.conversations.readers import from_messages
from localjudge.conversations.render import deepeval_rag_turns_text, deepeval_turns_text
from localjudge.datasets import Printed
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError
from localjudge.judges import get_judge
from localjudge.judges.deepeval_values import deepeval_turns

MESSAGES = [
    {"role": "user", "content": "My name is Ada. What is 2+2?"},
    {"role": "assistant", "content": "4, Ada."},
    {"role": "user", "content": "What's my name?"},
    {"role": "assistant", "content": "I don't know."},
]
JUDGES = ["deepeval_knowledge_retention", "deepeval_role_adherence", "deepeval_conversation_completeness"]


def test_a_run_reads_the_printed_turns_as_they_were_without_parsing_text(tmp_path, monkeypatch):
    parsed: list[str] = []
    real = localjudge.jsonio.python_literal

    def counting(text, **kw):
        parsed.append(text)
        return real(text, **kw)

    monkeypatch.setattr(localjudge.jsonio, "python_literal", counting)
    monkeypatch.setattr("localjudge.judges.deepeval_values.python_literal", counting)
    import localjudge.judges.deepeval_values as values

    seen: list[str] = []
    real_value = values.printed_value

    def recording(value):
        seen.append(type(value).__name__)
        return real_value(value)

    monkeypatch.setattr(values, "printed_value", recording)
    engine = ScriptedEngine(lambda msgs, fmt: "{}")  # every stage unparsable: unscored, but each judge read its turns
    data = [{"id": "c1", "messages": MESSAGES, "chatbot_role": "a helpful tutor"}]
    run = localjudge.evaluate(data, JUDGES, engine=engine, out=tmp_path / "r", conversation="turn")
    rows = [json.loads(line) for line in (tmp_path / "r" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * len(JUDGES) and run.counts.evaluated == len(rows)
    assert all(r["result"]["unscored_reason"] == "parse_error" for r in rows), [r["error"] for r in rows]
    assert parsed == [] and seen and set(seen) == {"Printed"}  # every judge got the turns as printed, typed
    turns = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    # the stored and exported text is what DeepEval's templates print (the same bytes as before the change)
    last = next(r for r in rows if r["judge"] == "deepeval_knowledge_retention" and r["row_id"] == "c1:1")
    assert last["inputs"]["deepeval_turns"] == str(turns)


def test_printed_turns_are_the_printed_text_and_keep_their_turns_through_pickle():
    conv = from_messages(MESSAGES)
    text = deepeval_turns_text(conv)
    turns = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    assert isinstance(text, Printed) and text == str(turns) and text.value == turns
    again = pickle.loads(pickle.dumps(text))
    assert isinstance(again, Printed) and again.value == turns and again == text
    assert deepeval_turns(text) == turns
    assert isinstance(deepeval_rag_turns_text(conv), Printed)


def test_a_users_own_printed_turns_column_still_reads_and_bad_text_is_one_line():
    turns = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    assert deepeval_turns(str(turns)) == turns
    assert deepeval_turns(json.dumps(turns)) == turns
    for bad in ("[" * 5000 + "]" * 5000, "__import__('os').system('true')", "not a list"):
        with pytest.raises(InputError) as e:
            deepeval_turns(bad)
        assert "\n" not in str(e.value) and "deepeval_turns" in str(e.value)


def test_a_deep_printed_column_is_an_input_error_row_not_a_traceback():
    judge = get_judge("deepeval_knowledge_retention")
    with pytest.raises(InputError):
        judge.evaluate(ScriptedEngine(lambda m, f: "{}"), deepeval_turns="[" * 100_000)
