"""MLflow 3.17's remaining built-in judges, ported as judge files (scripts/catalog/make_mlflow_builtin_judges.py), render
byte for byte what the installed mlflow package sends: `tool_call_correctness` / `tool_call_efficiency` the user
message of their `get_prompt` (on a conversation's calls rendered as MLflow renders them), `completeness`,
`fluency`, `summarization` their InstructionsJudge system and user messages."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from localjudge.conversations import from_messages
from localjudge.conversations.model import ToolCall, ToolSpec
from localjudge.conversations.render import available_tools_text, expected_calls_text, tool_calls_text
from localjudge.judges import get_judge

ROOT = Path(__file__).resolve().parent.parent
make = importlib.import_module("scripts.catalog.make_mlflow_builtin_judges")

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
# what the user expected called (tool_call_correctness_expected): the booking right, a menu call missing its venue
EXPECTED = [ToolCall(name="book", arguments={"venue": "Chez Léa", "people": 2}), ToolCall(name="menu", arguments={})]


def _mlflow_tool_prompt(name: str) -> str:
    from mlflow.genai.utils.type import FunctionCall
    from mlflow.types.chat import ChatTool, FunctionToolDefinition

    mod = importlib.import_module(f"mlflow.genai.judges.prompts.{name.removesuffix('_expected')}")
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
    if name == "tool_call_correctness_expected":
        expected = [FunctionCall(name=c.name, arguments=c.arguments) for c in EXPECTED]
        return importlib.import_module("mlflow.genai.judges.prompts.tool_call_correctness").get_prompt(
            request=CHAT[0]["content"], tools_called=calls, available_tools=tools, expected_calls=expected
        )
    return mod.get_prompt(request=CHAT[0]["content"], tools_called=calls, available_tools=tools)


@pytest.mark.parametrize("name", ["tool_call_correctness", "tool_call_efficiency", "tool_call_correctness_expected"])
def test_tool_call_judge_sends_mlflows_own_prompt_for_a_conversations_calls(name):
    msgs = get_judge(name).render(**_tool_values(name))
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


def _serialise(messages) -> str:
    return "".join(f"===== {m.role} =====\n{m.content}\n" for m in messages)


def _tool_values(name: str) -> dict[str, str]:
    """A tool-call judge's values on this file's conversation (and EXPECTED for the judge given expectations)."""
    values = {
        "request": CHAT[0]["content"],
        "tools_called": tool_calls_text(from_messages(CHAT)),
        "available_tools": available_tools_text(TOOLS),
    }
    if name == "tool_call_correctness_expected":
        values["expected_calls"] = expected_calls_text(EXPECTED)
    return values


def golden_render(name: str) -> str:
    """The judge's messages on this file's conversation, as tests/golden/ stores them."""
    values: dict = {}
    if name.startswith("tool_call"):
        values = _tool_values(name)
    elif name == "fluency":
        values = {"outputs": CHAT[-1]["content"]}
    else:
        values = {"inputs": {"question": CHAT[0]["content"]}, "outputs": CHAT[-1]["content"]}
    return _serialise(get_judge(name).render(**values))


@pytest.mark.parametrize(
    "name",
    [
        "tool_call_correctness",
        "tool_call_efficiency",
        "tool_call_correctness_expected",
        "completeness",
        "fluency",
        "summarization",
    ],
)
def test_golden_file_is_the_judges_rendering_checked_against_mlflow_above(name):
    """tests/golden/NAME.txt (which test_judges_golden requires of every built-in judge) holds the rendering the
    tests above compare with the installed package, so a change of the judge file shows as a golden diff too."""
    assert (ROOT / "tests/golden" / f"{name}.txt").read_text(encoding="utf-8") == golden_render(name)
