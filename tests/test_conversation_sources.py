"""What a judge variable reads of a conversation row is declared in its judge file (`from_conversation`), never
chosen by the judge's name (issue 44 part 2): a user's own judge file gets the same as the built-in one."""

from __future__ import annotations

import json

import localjudge
from localjudge.conversations.dataset import WITH_TOOLS, conversation_sources, route_columns
from localjudge.datasets import ColumnSpec
from localjudge.engine.base import ScriptedEngine
from localjudge.judges import get_judge

MSGS = [
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "function": {"name": "get", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "a", "content": "sun"},
    {"role": "assistant", "content": "Sunny."},
]

USER_JUDGE = """
name = 'my_tool_judge'
description = 'Whether the tools were used well.'
[[variables]]
name = 'conversation'
from_conversation = 'conversation_with_tool_calls'
[[messages]]
role = 'user'
template = 'Were the tools used well? {{ conversation }}'
[output]
kind = 'yes_no_json'
"""


def test_a_declared_variable_reads_its_derived_value_unless_the_user_mapped_it():
    variables = get_judge("conversational_tool_call_efficiency").variables
    assert conversation_sources(variables) == {"conversation": WITH_TOOLS}
    default = {"conversation": ColumnSpec("conversation", "auto")}
    assert route_columns(variables, default)["conversation"].column == WITH_TOOLS
    mapped = {"conversation": ColumnSpec("my_column", "auto")}
    assert route_columns(variables, mapped)["conversation"].column == "my_column"
    assert route_columns(get_judge("conversation_completeness").variables, default) == default


def test_a_users_judge_file_that_declares_it_reads_the_conversation_with_its_tool_calls(tmp_path):
    judges_dir = tmp_path / "judges"
    judges_dir.mkdir()
    (judges_dir / "my_tool_judge.toml").write_text(USER_JUDGE, encoding="utf-8")
    engine = ScriptedEngine([json.dumps({"rationale": "r", "result": "yes"})], cycle=True)
    run = localjudge.evaluate(
        [{"messages": MSGS}],
        ["my_tool_judge", "conversation_completeness"],
        engine=engine,
        out=tmp_path / "r",
        judges_dir=str(judges_dir),
    )
    by_judge = {r.judge: r.inputs["conversation"] for r in run.results}
    assert "Tool: get" in by_judge["my_tool_judge"] and "Tool: get" not in by_judge["conversation_completeness"]


def test_one_table_says_what_a_conversation_row_derives_lists_and_alone_has():
    from localjudge.conversations import dataset as d

    assert set(d.COLUMNS) == {"id", *d.DERIVED} - set(d.CASE_FIELDS)  # a derived value without its column fails here
    assert len(d.COLUMNS) == len(set(d.COLUMNS))
    assert d.CONVERSATION_ONLY == {
        "conversation",
        "deepeval_turns",
        "deepeval_rag_turns",
        "ragas_conversation",
        "deepeval_tools_called_json",
        "deepeval_tool_turns",
        "deepeval_trace_json",
    }
