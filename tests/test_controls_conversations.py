"""The last-turn negative control of conversation judges (report/controls.py `last_turn`): each sampled conversation
judged again with its last assistant answer replaced by another sampled conversation's, the rest kept; a judge that
reads that answer discriminates, one that reads only the first user turn is blind."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

import localjudge
from localjudge.cli import main
from localjudge.conversations.dataset import DERIVED
from localjudge.conversations.stored import read_stored_conversations
from localjudge.datasets import Printed
from localjudge.engine.base import ScriptedEngine
from localjudge.judges import get_judge
from localjudge.judges.spec import JudgeSpec
from localjudge.report.controls import BLIND, DISCRIMINATES, controls_lines, last_turn_pairs, run_controls
from localjudge.report.rundir import load_run
from localjudge.run.turns import takes_conversation

ROOT = Path(__file__).resolve().parents[1]

WORDS = "cat dog owl fox elk yak ant bee cow pig hen eel ram emu gnu koi".split()
CHATS = [
    {
        "id": f"c{i}",
        "messages": [
            {"role": "user", "content": f"Hello, I am user {i}."},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": f"What is item {i}?"},
            {"role": "assistant", "content": f"item {i} is a {w}"},
        ],
    }
    for i, w in enumerate(WORDS + WORDS[:8])
]
UNANSWERED = {"id": "lonely", "messages": [{"role": "user", "content": "What is item 99?"}]}


def _verdict(yes: bool) -> str:
    return json.dumps({"rationale": "r", "result": "yes" if yes else "no"})


def _turns(messages) -> list[dict]:
    return json.loads(messages[-1].content.removeprefix("conversation: "))


def reads_the_last_answer(messages, fmt) -> str:
    """Passes when the last assistant turn answers the item the last user turn asks about."""
    turns = _turns(messages)
    asked = [t["content"] for t in turns if t["role"] == "user"][-1].removeprefix("What is ").rstrip("?")
    answers = [t["content"] for t in turns if t["role"] == "assistant"]
    return _verdict(bool(answers) and answers[-1].startswith(f"{asked} is"))


def reads_the_first_user_turn(messages, fmt) -> str:
    """A verdict from a hash of the first user turn alone: never reads an answer, deterministic."""
    first = next(t["content"] for t in _turns(messages) if t["role"] == "user")
    return _verdict(hashlib.sha256(first.encode()).digest()[0] % 2 == 0)


def judged(tmp_path, fn, name, chats=CHATS, **kw):
    engine = ScriptedEngine(fn, model_id=name)
    out = tmp_path / name
    localjudge.evaluate(chats, ["conversation_completeness"], engine=engine, out=out, **kw)
    return engine, out


def test_a_conversation_judge_that_reads_the_last_answer_discriminates_on_another_conversations_last_turn(tmp_path):
    engine, out = judged(tmp_path, reads_the_last_answer, "reader")
    report = run_controls(out, engine=engine, sample=20, kinds=("last_turn",))
    g = report.other_kinds["last_turn"]["conversation_completeness"]
    assert (g.kind, g.variable, g.n, g.verdict, g.left_out) == ("last_turn", "conversation", 20, DISCRIMINATES, None)
    assert (g.real_pass_rate, g.control_pass_rate) == (1.0, 0.0)
    heading = "negative controls (another conversation's last assistant turn; 20 rows sampled, seed 0):"
    assert heading in controls_lines(report)


def test_a_conversation_judge_that_reads_only_the_first_user_turn_is_blind_to_the_last_turn(tmp_path):
    engine, out = judged(tmp_path, reads_the_first_user_turn, "first-turn")
    g = run_controls(out, engine=engine, sample=24, kinds=("last_turn",)).other_kinds["last_turn"]["conversation_completeness"]
    assert g.n == 24 and g.verdict == BLIND and g.auc == 0.5


def test_a_last_turn_control_replaces_only_the_last_assistant_answer_of_the_conversation(tmp_path):
    engine, out = judged(tmp_path, reads_the_last_answer, "reader")
    run_controls(out, engine=engine, sample=10, kinds=("last_turn",))
    stored = [json.loads(line) for line in (out / "controls" / "conversation_completeness.last_turn" / "results.jsonl").open()]
    own = {c["id"]: c["messages"] for c in CHATS}
    assert len(stored) == 10
    answers = set()
    for s in stored:
        turns, mine = json.loads(s["inputs"]["conversation"]), own[s["row_id"]]
        assert turns[:-1] == [{"role": m["role"], "content": m["content"]} for m in mine[:-1]]  # the rest kept
        assert turns[-1]["role"] == "assistant" and turns[-1]["content"] != mine[-1]["content"]
        answers.add(turns[-1]["content"])
    sampled = {own[s["row_id"]][-1]["content"] for s in stored}
    assert answers == sampled  # a derangement of the sampled conversations' own last answers


def test_a_last_turn_control_of_a_deepeval_judge_makes_its_printed_turns_from_the_changed_typed_conversation(tmp_path):
    engine, out = judged(tmp_path, reads_the_last_answer, "reader")
    run = load_run(out)
    convs = read_stored_conversations(out / "results.sqlite", run.run_id)
    rows = [
        r.model_copy(update={"judge": "deepeval_conversation_completeness", "inputs": {"deepeval_turns": "x"}}) for r in run.rows
    ]
    chosen, left_out = last_turn_pairs(rows, "deepeval_turns", 5, 0, convs)
    assert chosen is not None and len(chosen) == 5 and left_out is None
    for row, inputs in chosen:
        turns = inputs["deepeval_turns"]
        assert isinstance(turns, Printed) and turns.value[:-1] == [
            {"role": t.role, "content": t.content} for t in convs[row.conversation_id].turns[:-1]
        ]
        assert turns.value[-1]["content"] != convs[row.conversation_id].turns[-1].content
    assert get_judge("deepeval_conversation_completeness").spec.controls.conversation == "deepeval_turns"


def test_a_conversation_without_an_assistant_answer_is_left_out_and_the_report_says_so(tmp_path):
    engine, out = judged(tmp_path, reads_the_last_answer, "reader", chats=[UNANSWERED, *CHATS[:12]])
    report = run_controls(out, engine=engine, sample=20, kinds=("last_turn",))
    g = report.other_kinds["last_turn"]["conversation_completeness"]
    assert g.n == 12 and g.verdict == DISCRIMINATES
    assert g.left_out == "rows left out: 1 with no assistant answer to replace"
    assert any(
        line.endswith(f"{DISCRIMINATES} (rows left out: 1 with no assistant answer to replace)")
        for line in controls_lines(report)
    )
    engine, out = judged(tmp_path, reads_the_last_answer, "lonely", chats=[UNANSWERED, {**UNANSWERED, "id": "lonely2"}])
    g = run_controls(out, engine=engine, sample=20, kinds=("last_turn",)).other_kinds["last_turn"]["conversation_completeness"]
    assert g.auc is None and g.verdict == (
        "no control: fewer than 2 conversations to swap last assistant answers between "
        "(rows left out: 2 with no assistant answer to replace)"
    )
    assert not (out / "controls" / "conversation_completeness.last_turn").exists()
    same = [{"id": c["id"], "messages": [*c["messages"][:-1], {"role": "assistant", "content": "Done."}]} for c in CHATS[:4]]
    engine, out = judged(tmp_path, lambda m, f: _verdict(True), "same-answers", chats=same)
    g = run_controls(out, engine=engine, sample=4, kinds=("last_turn",)).other_kinds["last_turn"]["conversation_completeness"]
    assert (g.n, g.verdict) == (0, "inconclusive (n too small)")  # every swap would change nothing: none judged


def _per_turn_chat(i: int, units: int = 2) -> dict:
    """A conversation of `units` exchanges, each reply naming the item its question asks about (a reply from another
    conversation names another item)."""
    messages = []
    for u in range(units):
        messages += [
            {"role": "user", "content": f"What is item {i}{'abcdefghij'[u]}?"},
            {"role": "assistant", "content": f"item {i}{'abcdefghij'[u]} is a {WORDS[(i + u) % len(WORDS)]}"},
        ]
    return {"id": f"t{i}", "messages": messages}


PER_TURN = [_per_turn_chat(i) for i in range(12)]


def test_per_turn_rows_get_another_conversations_reply_in_place_of_their_turns_and_a_reader_discriminates(tmp_path):
    engine, out = judged(tmp_path, reads_the_last_answer, "per-turn", chats=PER_TURN, conversation="turn")
    g = run_controls(out, engine=engine, sample=24, kinds=("last_turn",)).other_kinds["last_turn"]["conversation_completeness"]
    assert (g.variable, g.n, g.verdict, g.left_out) == ("conversation", 24, DISCRIMINATES, None)
    assert (g.real_pass_rate, g.control_pass_rate) == (1.0, 0.0)
    stored = [json.loads(line) for line in (out / "controls" / "conversation_completeness.last_turn" / "results.jsonl").open()]
    own = {c["id"]: c["messages"] for c in PER_TURN}
    assert len(stored) == 24
    for s in stored:
        cid, unit = s["row_id"].rsplit(":", 1)
        turns, mine = json.loads(s["inputs"]["conversation"]), own[cid][: 2 * int(unit) + 2]  # the window: its turn last
        assert turns[:-1] == mine[:-1]  # the window before the turn's reply kept
        donor = next(k for k, m in own.items() if any(t["content"] == turns[-1]["content"] for t in m))
        assert turns[-1]["role"] == "assistant" and donor != cid  # the reply of another conversation's turn


def test_per_turn_rows_of_a_judge_that_reads_only_the_first_user_turn_are_blind_to_the_replaced_reply(tmp_path):
    engine, out = judged(tmp_path, reads_the_first_user_turn, "per-turn-first", chats=PER_TURN, conversation="turn")
    g = run_controls(out, engine=engine, sample=24, kinds=("last_turn",)).other_kinds["last_turn"]["conversation_completeness"]
    assert g.n == 24 and g.verdict == BLIND and g.auc == 0.5


def test_per_turn_rows_of_a_conversation_holding_more_than_half_the_sample_are_left_out_and_the_report_says_so(tmp_path):
    chats = [_per_turn_chat(0, units=10), _per_turn_chat(1, units=1), _per_turn_chat(2, units=1)]
    engine, out = judged(tmp_path, reads_the_last_answer, "crowded", chats=chats, conversation="turn")
    run = load_run(out)
    convs = read_stored_conversations(out / "results.sqlite", run.run_id)
    chosen, left_out = last_turn_pairs(run.rows, "conversation", 12, 0, convs)
    assert left_out == (
        "rows left out: 8 whose conversation holds more than half the sample (no other conversation's answer for them)"
    )
    assert chosen is not None and len(chosen) == 4
    assert sum(row.conversation_id == "t0" for row, _ in chosen) == 2
    for row, inputs in chosen:
        reply = json.loads(inputs["conversation"])[-1]["content"]
        assert not reply.startswith(f"item {row.conversation_id[1:]}")  # never a reply of its own conversation
    g = run_controls(out, engine=engine, sample=12, kinds=("last_turn",)).other_kinds["last_turn"]["conversation_completeness"]
    assert g.n == 4 and g.left_out == left_out


def test_every_sampled_per_turn_row_gets_the_reply_of_another_conversation_and_each_reply_is_given_once(tmp_path):
    """Seeded trials over conversations of 1-8 exchanges and samples of 2-30 rows: the swap is a derangement across
    conversations (each sampled reply given to exactly one other row, never within its own conversation), the rows
    left out only those of a conversation holding more than half the sample."""
    import random

    from localjudge.conversations.readers import from_messages

    engine, out = judged(tmp_path, reads_the_last_answer, "template", chats=PER_TURN[:2], conversation="turn")
    template = load_run(out).rows[0]
    for trial in range(40):
        rng = random.Random(trial)
        chats = [_per_turn_chat(i, units=rng.randint(1, 8)) for i in range(rng.randint(1, 6))]
        convs = {c["id"]: from_messages(c["messages"], id=c["id"]) for c in chats}
        rows = [
            template.model_copy(update={"row_index": n, "row_id": f"{c['id']}:{u}", "conversation_id": c["id"], "turn_index": u})
            for n, (c, u) in enumerate((c, u) for c in chats for u in range(len(c["messages"]) // 2))
        ]
        chosen, left_out = last_turn_pairs(rows, "conversation", rng.randint(2, 30), trial, convs)
        if chosen is None:
            assert len({r.conversation_id for r in rows}) == 1 or left_out is not None
            continue
        own = {r.row_id: convs[r.conversation_id].turns[2 * r.turn_index + 1].content for r, _ in chosen}
        given = [json.loads(inputs["conversation"])[-1]["content"] for _, inputs in chosen]
        assert sorted(given) == sorted(own.values())  # each sampled reply given once
        for (row, _), reply in zip(chosen, given, strict=True):
            assert not reply.startswith(f"item {row.conversation_id[1:]}")  # from another conversation
        by_conv = [r.conversation_id for r, _ in chosen]
        assert 2 * max(by_conv.count(c) for c in by_conv) <= len(by_conv)


def test_a_tool_call_row_gets_no_last_turn_control_and_says_why(tmp_path):
    calls = [
        {
            "id": f"k{i}",
            "messages": [
                {"role": "user", "content": f"Weather in city {i}?"},
                {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "weather", "arguments": {"city": i}}}]},
                {"role": "assistant", "content": f"city {i} is sunny"},
            ],
        }
        for i in range(4)
    ]
    engine, out = judged(tmp_path, reads_the_last_answer, "per-call", chats=calls, conversation="tool_call")
    g = run_controls(out, engine=engine, sample=4, kinds=("last_turn",)).other_kinds["last_turn"]["conversation_completeness"]
    assert g.verdict == (
        "no control: fewer than 2 conversations to swap last assistant answers between (rows left out: 4 judged per tool call)"
    )


def _relevancy_turns(messages) -> list[dict]:
    text = messages[-1].content
    return ast.literal_eval(text[text.rindex("Messages:\n") + len("Messages:\n") : text.rindex("\n\nJSON:")])


def test_deepeval_turn_relevancy_per_turn_with_a_judge_that_reads_the_last_reply_discriminates(tmp_path):
    def relevant(messages, fmt) -> str:
        turns = _relevancy_turns(messages)
        asked = turns[-2]["content"].removeprefix("What is ").rstrip("?")
        return _verdict(turns[-1]["role"] == "assistant" and turns[-1]["content"].startswith(f"{asked} is"))

    engine = ScriptedEngine(relevant, model_id="relevancy")
    out = tmp_path / "relevancy"
    localjudge.evaluate(PER_TURN, ["deepeval_turn_relevancy"], engine=engine, out=out, conversation="turn")
    g = run_controls(out, engine=engine, sample=20, kinds=("last_turn",)).other_kinds["last_turn"]["deepeval_turn_relevancy"]
    assert (g.variable, g.n, g.verdict, g.real_pass_rate, g.control_pass_rate) == (
        "deepeval_turns",
        20,
        DISCRIMINATES,
        1.0,
        0.0,
    )


def test_a_judge_that_declares_no_conversation_gets_no_last_turn_control_and_says_so(tmp_path):
    judges = tmp_path / "judges"
    judges.mkdir()
    text = (ROOT / "localjudge" / "judges" / "builtin" / "conversation_completeness.toml").read_text()
    mine = text[: text.index("\n# what negative controls")].replace(
        "name = 'conversation_completeness'", "name = 'my_completeness'"
    )
    (judges / "my_completeness.toml").write_text(mine + "\n")
    engine = ScriptedEngine(reads_the_last_answer, model_id="mine")
    localjudge.evaluate(CHATS[:6], ["my_completeness"], engine=engine, out=tmp_path / "run", judges_dir=judges)
    report = run_controls(tmp_path / "run", engine=engine, sample=6, kinds=("last_turn",), judges_dir=judges)
    g = report.other_kinds["last_turn"]["my_completeness"]
    assert g.variable is None and g.verdict == "no control: the judge file declares no conversation variable"


def test_a_conversation_judge_whose_verdict_does_not_rest_on_the_last_answer_gets_its_files_reason_as_its_verdict(tmp_path):
    engine = ScriptedEngine(lambda m, f: json.dumps({"rationale": "r", "result": "none"}), model_id="frustration")
    localjudge.evaluate(CHATS[:6], ["user_frustration"], engine=engine, out=tmp_path / "run")
    g = run_controls(tmp_path / "run", engine=engine, sample=6, kinds=("last_turn",)).other_kinds["last_turn"]["user_frustration"]
    reason = get_judge("user_frustration").spec.controls.no_last_turn
    assert g.variable is None and g.verdict == f"no control: {reason}" and "user's own turns" in reason
    assert not (tmp_path / "run" / "controls" / "user_frustration.last_turn").exists()  # nothing judged


def _conversation_judges() -> list[str]:
    """The built-in judges that take a value only a conversation row has (what makes a run read its data as
    conversations: run/turns.py takes_conversation)."""
    names = sorted(p.stem for p in (ROOT / "localjudge" / "judges" / "builtin").glob("*.toml") if not p.stem.startswith("_"))
    return [n for n in names if takes_conversation([n], None)]


LAST_TURN_JUDGES = {
    "conversation_completeness",
    "knowledge_retention",
    "deepeval_conversation_completeness",
    "deepeval_knowledge_retention",
    "deepeval_goal_accuracy",
    "deepeval_turn_relevancy",
    "agent_goal_accuracy",
    "agent_goal_accuracy_without_reference",
}


def test_every_builtin_conversation_judge_declares_its_conversation_or_says_why_it_gets_no_last_turn_control():
    judges = _conversation_judges()
    assert len(judges) == 24  # a new conversation judge must decide too
    declared = set()
    for name in judges:
        controls = get_judge(name).spec.controls
        assert controls is not None and (controls.conversation is None) != (controls.no_last_turn is None), name
        if controls.conversation is not None:
            declared.add(name)
            variable = controls.conversation
            assert variable in {v.name for v in get_judge(name).spec.variables} and variable in DERIVED, name
    assert declared == LAST_TURN_JUDGES


@pytest.mark.parametrize("name", sorted(LAST_TURN_JUDGES))
def test_a_declared_judges_conversation_value_carries_another_conversations_last_answer(tmp_path, name):
    """The variable each judge declares is made again from the changed conversation: the donor's answer is in the
    control's value and the row's own last answer is not."""
    engine, out = judged(tmp_path, reads_the_last_answer, "reader", chats=CHATS[:6])
    run = load_run(out)
    convs = read_stored_conversations(out / "results.sqlite", run.run_id)
    variable = get_judge(name).spec.controls.conversation
    rows = [r.model_copy(update={"judge": name, "inputs": {variable: "x"}}) for r in run.rows]
    chosen, left_out = last_turn_pairs(rows, variable, 6, 0, convs)
    assert chosen is not None and len(chosen) == 6 and left_out is None
    answers = {row.conversation_id: convs[row.conversation_id].turns[-1].content for row, _ in chosen}
    for row, inputs in chosen:
        text = str(inputs[variable])
        assert answers[row.conversation_id] not in text
        assert any(a in text for cid, a in answers.items() if cid != row.conversation_id), name


def test_controls_no_last_turn_is_a_reason_not_a_variable_and_never_beside_a_conversation():
    spec = get_judge("conversation_completeness").spec.model_dump(exclude_none=True)
    assert JudgeSpec.model_validate({**spec, "controls": {"no_last_turn": "it grades the user's turns"}}).controls is not None
    with pytest.raises(ValidationError, match="not with controls.conversation"):
        JudgeSpec.model_validate({**spec, "controls": {"conversation": "conversation", "no_last_turn": "why"}})


def test_run_and_controls_commands_judge_last_turn_controls_into_the_summary_report_and_view(tmp_path):
    from localjudge.report import render_report
    from localjudge.view.pages import controls_section
    from localjudge.view.runs import RunHandle

    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps(c) + "\n" for c in CHATS[:12]))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    out = tmp_path / "run"
    args = ["run", str(data), "-j", "conversation_completeness", "-o", str(out), *scripted, "--controls", "12"]
    r = CliRunner().invoke(main, [*args, "--control-kind", "last_turn"])
    assert r.exit_code == 0, r.output
    assert "negative controls (another conversation's last assistant turn; 12 rows sampled, seed 0):" in r.output
    summary = json.loads((out / "summary.json").read_text())["judges"]["conversation_completeness"]["controls"]
    last = summary["other_kinds"]["last_turn"]
    assert (last["variable"], last["n_real"], last["verdict"]) == ("conversation", 12, BLIND)
    saved = (out / "controls" / "controls.json").read_text()
    r = CliRunner().invoke(main, ["controls", str(out), "--sample", "12", "--kind", "last_turn", *scripted])
    assert r.exit_code == 0, r.output
    assert (out / "controls" / "controls.json").read_text() == saved  # the same controls, from their cache
    html = render_report(out)
    row = html[html.index('data-kind="last_turn"') :].split("</tr>")[0]
    assert "<code>conversation</code> (another conversation&#39;s last assistant turn)" in row and f'"warn">{BLIND}' in row
    page = controls_section(RunHandle("run", out).controls())
    assert (
        'data-kind="last_turn"' in page and "conversation_completeness (another conversation&#x27;s last assistant turn)" in page
    )


def test_a_last_turn_control_keeps_out_the_leading_turns_the_run_cut_to_fit(tmp_path):
    engine, out = judged(tmp_path, reads_the_last_answer, "reader")
    run = load_run(out)
    convs = read_stored_conversations(out / "results.sqlite", run.run_id)
    rows = [r.model_copy(update={"truncated_turns": 2}) for r in run.rows]
    chosen, _ = last_turn_pairs(rows, "conversation", 4, 0, convs)
    assert chosen is not None and len(chosen) == 4
    for row, inputs in chosen:
        turns = json.loads(inputs["conversation"])
        assert [t["content"] for t in turns[:1]] == [convs[row.conversation_id].turns[2].content] and len(turns) == 2
