"""`localjudge judge NAME --conversation FILE` and `localjudge.judge_conversation`: one conversation judged as `run`
judges it (session-level by default, per turn with the run's window), the typed JSON `judge` prints (per turn: JSON
lines, one result row each), bad input as one line naming the file, the message index and the field (exit 2, before
the model loads), a conversation too long for the context an unscored prompt_too_long result naming the tokens."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import localjudge
from localjudge.cli import main
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError

CHAT = {
    "id": "capitals",
    "messages": [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Italy?"},
        {"role": "assistant", "content": "Rome."},
        {"role": "user", "content": "And of Spain?"},
        {"role": "assistant", "content": "Madrid."},
    ],
}


@pytest.fixture
def chat_file(tmp_path):
    p = tmp_path / "chat.json"
    p.write_text(json.dumps(CHAT), encoding="utf-8")
    return p


@pytest.mark.model
def test_judge_conversation_session_level_with_the_default_model_prints_one_typed_result(chat_file):
    r = CliRunner().invoke(main, ["judge", "conversation_completeness", "--conversation", str(chat_file), "--threads", "1"])
    assert r.exit_code in (0, 1), r.output
    out = localjudge.JudgeResult.model_validate_json(r.output)
    assert out.judge == "conversation_completeness" and out.model_id == "smollm2-135m"
    assert (r.exit_code == 0) == out.scored
    if out.scored:
        assert out.value in ("yes", "no") and out.score in (0.0, 1.0)


@pytest.mark.model
def test_judge_conversation_per_turn_with_the_default_model_prints_one_line_per_turn_with_its_window():
    chat = json.dumps(CHAT["messages"])  # a bare messages list, from stdin
    r = CliRunner().invoke(
        main,
        ["judge", "user_frustration", "--conversation", "-", "--granularity", "turn", "--window", "2", "--threads", "1"],
        input=chat,
    )
    assert r.exit_code in (0, 1), r.output
    lines = [json.loads(line) for line in r.output.splitlines()]
    assert [(x["conversation_id"], x["turn_index"], x["judge"]) for x in lines] == [
        ("0", i, "user_frustration") for i in range(3)
    ]
    # each turn's prompt holds its window (this turn and the one before it) ending with the judged turn, as `run` makes it
    seen = [[m["content"] for m in json.loads(x["inputs"]["conversation"])] for x in lines]
    assert seen == [
        ["What is the capital of France?", "Paris."],
        ["What is the capital of France?", "Paris.", "And of Italy?", "Rome."],
        ["And of Italy?", "Rome.", "And of Spain?", "Madrid."],
    ]
    assert all(x["result"]["model_id"] == "smollm2-135m" for x in lines)


@pytest.mark.model
def test_a_conversation_that_does_not_fit_the_context_is_an_unscored_result_naming_the_tokens(chat_file):
    r = CliRunner().invoke(
        main, ["judge", "conversation_completeness", "--conversation", str(chat_file), "--threads", "1", "--n-ctx", "256"]
    )
    assert r.exit_code == 1, r.output
    out = json.loads(r.output)
    assert out["unscored_reason"] == "prompt_too_long"
    assert "256" in out["error"] and "token" in out["error"]


def _scripted(messages, fmt):
    return json.dumps({"rationale": "ok", "result": "yes"})


def test_the_api_judges_per_turn_and_per_tool_call_as_run_does():
    msgs = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]
    engine = ScriptedEngine(_scripted)
    (session,) = localjudge.judge_conversation("conversation_completeness", msgs, engine=engine)
    assert session.turn_index is None and session.result.value == "yes"
    run = localjudge.evaluate([{"id": "0", "messages": msgs}], ["conversation_completeness"], engine=engine)
    assert session.inputs == next(iter(run.results)).inputs  # the same prompt as a run's
    calls = localjudge.judge_conversation(
        "tool_call_exact",
        {"messages": msgs, "expected_tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}]},
        granularity="tool_call",
        engine=engine,
    )
    assert [(c.tool_call_index, c.result.passed) for c in calls] == [(0, True)]


@pytest.mark.parametrize(
    "content, message",
    [
        (
            '[{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}]',
            "chat.json: column 'messages': messages[1].role: 'bot'",
        ),
        (
            '[{"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}]',
            "chat.json: column 'messages': messages[0].tool_calls[0].function.arguments: not valid JSON",
        ),
        ('[{"role": "user"}]', "chat.json: column 'messages': messages[0].content: missing"),
        ('{"messages": [', "chat.json: not valid JSON"),
        ('{"turns": []}', "chat.json: an object needs a 'messages' list"),
        ("42", "chat.json: a JSON int"),
    ],
)
def test_bad_conversation_input_is_one_line_naming_the_file_message_and_field(tmp_path, content, message):
    p = tmp_path / "chat.json"
    p.write_text(content, encoding="utf-8")
    # a model that does not exist: the input is checked before any model loads
    r = CliRunner().invoke(
        main, ["judge", "conversation_completeness", "--conversation", str(p), "--model", "scripted:/nonexistent"]
    )
    assert r.exit_code == InputError.exit_code, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0].replace(str(tmp_path) + "/", ""), r.output


def test_a_missing_conversation_file_and_options_without_conversation_are_usage_errors(tmp_path):
    r = CliRunner().invoke(main, ["judge", "conversation_completeness", "--conversation", str(tmp_path / "none.json")])
    assert r.exit_code == InputError.exit_code and "cannot read it" in r.output
    r = CliRunner().invoke(main, ["judge", "conversation_completeness", "--granularity", "turn"])
    assert r.exit_code == 2 and "go with --conversation" in r.output
    r = CliRunner().invoke(main, ["judge", "conversation_completeness", "--conversation", "-", "--field", "a=b"], input="[]")
    assert r.exit_code == 2 and "do not apply to --conversation" in r.output


@pytest.mark.model
@pytest.mark.slow  # the page's commands on the real model (about a minute and a half on an idle core)
def test_docs_conversations_page_judge_snippet_runs(tmp_path, monkeypatch):
    import re
    import shlex
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs/conversations.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```sh\n(localjudge judge .*?)```", page, re.S)
    monkeypatch.chdir(tmp_path)
    call = {"id": "w", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    chat = {
        "id": "weather",
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "w", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
        ],
        "expected_tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}],
    }
    (tmp_path / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    for line in block.strip().splitlines():
        if line.startswith("cat chat.json | "):
            line, stdin = line.removeprefix("cat chat.json | "), (tmp_path / "chat.json").read_text()
        else:
            stdin = None
        argv = shlex.split(line)
        assert argv[0] == "localjudge"
        r = CliRunner().invoke(main, [*argv[1:], "--threads", "1"], input=stdin)
        assert r.exit_code in (0, 1), (line, r.output)


def test_a_model_free_judge_loads_no_model_and_gives_what_run_gives(tmp_path, monkeypatch):
    from localjudge.engine.backends import ModelRef

    def no_load(self):
        raise AssertionError("judge --conversation loaded the model for a model-free judge")

    monkeypatch.setattr(ModelRef, "engine", no_load)
    call = {"id": "w", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    other = {"id": "s", "type": "function", "function": {"name": "search", "arguments": '{"q": "rain"}'}}
    chat = {
        "id": "weather",
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [call, other]},
            {"role": "tool", "tool_call_id": "w", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
        ],
        "expected_tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}],
    }
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat), encoding="utf-8")
    r = CliRunner().invoke(main, ["judge", "tool_call_exact", "--conversation", str(path), "--granularity", "tool_call"])
    assert r.exit_code == 0, r.output
    ours = [json.loads(line) for line in r.output.splitlines()]
    run = localjudge.evaluate([chat], ["tool_call_exact"], out=tmp_path / "r", conversation="tool_call")
    theirs = [json.loads(line) for line in (tmp_path / "r" / "results.jsonl").read_text().splitlines()]
    assert [(x["tool_call_index"], x["result"]["score"]) for x in ours] == [(0, 1.0), (1, 0.0)]
    assert [(x["tool_call_index"], x["result"]["score"], x["result"]["model_id"]) for x in ours] == [
        (x["tool_call_index"], x["result"]["score"], x["result"]["model_id"]) for x in theirs
    ]
    assert ours[0]["inputs"] == next(iter(run.results)).inputs and ours[0]["result"]["model_id"] == "smollm2-135m"
