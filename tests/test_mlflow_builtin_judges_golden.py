"""MLflow 3.17's remaining built-in judges, ported as judge files (scripts/make_mlflow_builtin_judges.py), render
byte for byte what the installed mlflow package sends: `tool_call_correctness` / `tool_call_efficiency` the user
message of their `get_prompt` (on a conversation's calls rendered as MLflow renders them), `completeness`,
`fluency`, `summarization` their InstructionsJudge system and user messages."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from localjudge.conversations import from_messages
from localjudge.conversations.model import ToolSpec
from localjudge.conversations.render import available_tools_text, tool_calls_text
from localjudge.judges import get_judge

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
make = importlib.import_module("make_mlflow_builtin_judges")

CHAT = [
    {"role": "user", "content": "Book a table for 2 at Chez Léa, 8pm. I'm vegan."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "book", "arguments": '{"venue": "Chez Léa", "people": 2}'}},
            {"id": "c2", "type": "function", "function": {"name": "menu", "arguments": '{"venue": "Chez Léa"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "booked #42 {ok}"},
    {"role": "assistant", "content": "Booked for 2 at 8pm."},
]
TOOLS = [
    ToolSpec(
        name="book",
        description="Book a table",
        parameters={
            "properties": {"venue": {"type": "string", "description": "where"}, "people": {"type": "integer"}},
            "required": ["venue"],
        },
    ),
    ToolSpec(name="menu", description="A venue's menu"),
]


def _mlflow_tool_prompt(name: str) -> str:
    from mlflow.genai.utils.type import FunctionCall
    from mlflow.types.chat import ChatTool, FunctionToolDefinition

    mod = importlib.import_module(f"mlflow.genai.judges.prompts.{name}")
    calls = [
        FunctionCall(name="book", arguments={"venue": "Chez Léa", "people": 2}, outputs="booked #42 {ok}"),
        FunctionCall(name="menu", arguments={"venue": "Chez Léa"}),
    ]
    tools = [
        ChatTool(
            type="function",
            function=FunctionToolDefinition(name=t.name, description=t.description, parameters=t.parameters or None),
        )
        for t in TOOLS
    ]
    return mod.get_prompt(request=CHAT[0]["content"], tools_called=calls, available_tools=tools)


@pytest.mark.parametrize("name", ["tool_call_correctness", "tool_call_efficiency"])
def test_tool_call_judge_sends_mlflows_own_prompt_for_a_conversations_calls(name):
    conv = from_messages(CHAT)
    msgs = get_judge(name).render(
        request=CHAT[0]["content"], tools_called=tool_calls_text(conv), available_tools=available_tools_text(TOOLS)
    )
    assert [m.role for m in msgs] == ["user"]
    assert msgs[0].content == _mlflow_tool_prompt(name)


@pytest.mark.parametrize("name", ["completeness", "fluency", "summarization"])
@pytest.mark.parametrize("output", ["Booked for 2 at 8pm.", 'a "quoted"\nanswer {x}'])
def test_single_turn_judge_sends_mlflows_instructions_judge_messages(name, output):
    from mlflow.genai.scorers import builtin_scorers as b

    cls = {"completeness": b.Completeness, "fluency": b.Fluency, "summarization": b.Summarization}[name]
    judge = make.instructions_judge(cls)
    inputs = {"question": CHAT[0]["content"]}
    values = {"outputs": output} if name == "fluency" else {"inputs": inputs, "outputs": output}
    msgs = get_judge(name).render(**values)
    want = [("system", judge._build_system_message(False)), ("user", judge._build_user_message(inputs, output, None, None))]
    assert [(m.role, m.content) for m in msgs] == want


def test_judge_files_are_what_the_script_writes_from_the_installed_package():
    for name, text in make.files().items():
        assert (ROOT / "localjudge/judges/builtin" / f"{name}.toml").read_text(encoding="utf-8") == text, name
