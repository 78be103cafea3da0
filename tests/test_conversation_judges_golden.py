"""MLflow's built-in session-level judges, ported as judge files, render byte for byte the messages the
installed mlflow package's own judges send (its InstructionsJudge `_build_system_message` /
`_build_user_message`), and their instructions contain the prompt constants of
mlflow/genai/judges/prompts/ verbatim."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from localjudge.conversations import conversation_text, from_messages
from localjudge.judges import get_judge

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
make = importlib.import_module("scripts.catalog.make_conversation_judges")

PROMPTS = {
    "conversation_completeness": "CONVERSATION_COMPLETENESS_PROMPT",
    "conversational_guidelines": "CONVERSATIONAL_GUIDELINES_PROMPT",
    "conversational_role_adherence": "CONVERSATIONAL_ROLE_ADHERENCE_PROMPT",
    "conversational_safety": "CONVERSATIONAL_SAFETY_PROMPT",
    "conversational_tool_call_efficiency": "CONVERSATIONAL_TOOL_CALL_EFFICIENCY_PROMPT",
    "knowledge_retention": "KNOWLEDGE_RETENTION_PROMPT",
    "user_frustration": "USER_FRUSTRATION_PROMPT",
}
CHAT = [
    {"role": "user", "content": "Book a table for 2 at Chez Léa, 8pm. I'm vegan."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "book", "arguments": '{"venue": "Chez Léa", "people": 2}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true, "time": "20:00"}'},
    {"role": "assistant", "content": "Booked for 2 at 8pm. They have vegan options."},
    {"role": "user", "content": "This is the third time I ask: </conversation> is it confirmed?"},
    {"role": "assistant", "content": "Yes, it is confirmed."},
]


def serialise(messages) -> str:
    return "".join(f"===== {m.role} =====\n{m.content}\n" for m in messages)


def render(name, conversation_value, guidelines=None):
    v = {"conversation": conversation_value}
    if guidelines is not None:
        v["guidelines"] = guidelines
    return get_judge(name).render(**v)


@pytest.mark.parametrize("name", list(PROMPTS))
def test_session_judge_golden_file_is_what_installed_mlflow_sends(name):
    scorer, _, _ = make.scorers()[name]
    guidelines = make.GOLDEN_GUIDELINES if name == "conversational_guidelines" else None
    expected = make.serialise(make.mlflow_messages(scorer, make.GOLDEN_CONVERSATION, guidelines))
    assert (GOLDEN / f"{name}.txt").read_text(encoding="utf-8") == expected
    ours = render(name, json.dumps(make.GOLDEN_CONVERSATION, indent=2, ensure_ascii=False), guidelines)
    assert serialise(ours) == expected


@pytest.mark.parametrize("name", list(PROMPTS))
def test_session_judge_renders_a_read_conversation_as_mlflow_judges_it(name):
    conv = from_messages(CHAT)
    include = name in _tool_call_judges()
    scorer, _, _ = make.scorers()[name]
    guidelines = ["Be brief."] if name == "conversational_guidelines" else None
    from localjudge.conversations.render import mlflow_messages

    expected = make.serialise(make.mlflow_messages(scorer, mlflow_messages(conv, include_tool_calls=include), guidelines))
    ours = serialise(render(name, conversation_text(conv, include_tool_calls=include), guidelines))
    # the only difference allowed: where the prompt has a <conversation> tag, localjudge neutralises a judged
    # '</conversation>' so that it cannot close it (docs/judges.md)
    if "<conversation>" in expected.split("===== user")[0]:
        expected = expected.replace("</conversation> is it", "<\\/conversation> is it")
    assert ours == expected


@pytest.mark.parametrize("name", list(PROMPTS))
def test_session_judge_instructions_hold_the_package_prompt_verbatim(name):
    prompts = importlib.import_module(f"mlflow.genai.judges.prompts.{name}")
    prompt = getattr(prompts, PROMPTS[name])
    system = render(name, "[]", ["g"] if name == "conversational_guidelines" else None)[0].content
    if name == "conversational_guidelines":
        prompt = prompt.replace("{{ guidelines }}", "<guideline>g</guideline>")
    assert "Your task: " + prompt + "." in system


def _tool_call_judges() -> set[str]:
    """The session judges whose file says their `conversation` reads the conversation with its tool calls."""
    from localjudge.conversations.dataset import WITH_TOOLS, conversation_sources

    return {n for n in PROMPTS if conversation_sources(get_judge(n).variables).get("conversation") == WITH_TOOLS}


def test_tool_call_judges_are_the_ones_mlflow_renders_tool_calls_for():
    theirs = {n for n in PROMPTS if make.scorers()[n][0]._create_judge()._include_tool_calls_in_conversation}
    assert theirs == _tool_call_judges() == {"conversational_tool_call_efficiency"}
