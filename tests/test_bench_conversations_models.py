"""scripts/data/conversations_labelled.jsonl (the labelled multi-turn set) and scripts/benchmarks/bench_conversations_models.py
(the installable models' agreement with it) on scripted engines: the data's schema and balance, the figures a judge
that always says yes and a judge that knows the labels get, and the section through bench.py's dispatch."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from localjudge.engine.base import ScriptedEngine
from scripts.benchmarks import bench_conversations_models as bcm

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

YES = '{"rationale": "scripted", "result": "yes"}'


def test_the_labelled_set_is_24_conversations_half_complete_with_tool_calls_and_off_topic_turns() -> None:
    convs = bcm.load()
    assert len(convs) == 24 and [c.id for c in convs] == [f"c{i:02d}" for i in range(1, 25)]
    assert sum(c.label == "yes" for c in convs) == 12
    # the first 8 (the subset measured on a busy machine) are balanced too and hold every off-topic turn
    assert sum(c.label == "yes" for c in convs[:8]) == 4 and sum(t == "no" for c in convs[:8] for t in c.turn_labels) == 8
    assert all(3 <= len(c.turn_labels) <= 5 for c in convs)
    turns = [t for c in convs for t in c.turn_labels]
    assert turns.count("no") >= 8 and turns.count("yes") >= 8
    with_tools = [c for c in convs if any(m.get("tool_calls") for m in c.messages)]
    assert len(with_tools) >= 6
    for c in with_tools:  # every call has its result, in OpenAI's shape
        calls = [tc["id"] for m in c.messages for tc in m.get("tool_calls") or []]
        results = [m["tool_call_id"] for m in c.messages if m["role"] == "tool"]
        assert calls == results and all(
            json.loads(tc["function"]["arguments"]) is not None for m in c.messages for tc in m.get("tool_calls") or []
        )
    # a conversation whose off-topic reply is never followed by the request asked again is incomplete
    for c in convs:
        last = len(c.turn_labels) - 1 - c.turn_labels[::-1].index("no") if "no" in c.turn_labels else None
        if last is not None and c.label == "yes":
            assert last < len(c.turn_labels) - 1, c.id


def test_a_bad_line_is_one_error_naming_the_line_and_field(tmp_path: Path) -> None:
    good = bcm.DATA.read_text(encoding="utf-8").splitlines()[0]
    bad = json.loads(good)
    bad["turn_labels"] = bad["turn_labels"][:-1]
    (tmp_path / "a.jsonl").write_text(good + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a.jsonl line 2: 3 user turns but 2 turn_labels"):
        bcm.load(tmp_path / "a.jsonl")
    bad = json.loads(good) | {"label": "maybe"}
    (tmp_path / "b.jsonl").write_text(json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"b.jsonl line 1: field 'label'"):
        bcm.load(tmp_path / "b.jsonl")


def test_an_always_yes_judge_on_two_conversations_is_at_chance_and_a_rerun_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engines: list[ScriptedEngine] = []
    before = bcm.section_conversations_models(["scripted"], 2, out=tmp_path, report_only=True)
    assert [(a.results, a.missing) for a in before] == [(0, 2), (0, 6)]  # nothing judged yet: all missing, none guessed

    def engine_for(model: str) -> ScriptedEngine:
        engines.append(ScriptedEngine([YES], cycle=True))
        return engines[-1]

    session, turn = bcm.section_conversations_models(["scripted"], 2, out=tmp_path, engine_for=engine_for)
    assert (session.results, session.unscored, session.labels_yes, session.judged_yes) == (2, 0, 1, 2)
    assert (session.accuracy, session.kappa, session.tpr, session.tnr) == (0.5, 0.0, 1.0, 0.0)
    assert (turn.results, turn.labels_yes, turn.judged_yes, turn.tpr, turn.tnr, turn.kappa) == (6, 4, 6, 1.0, 0.0, 0.0)
    out = capsys.readouterr().out
    assert "| scripted | `conversation_completeness` | session | 2 (0) | 1 | 2 | 50% | 0.00 [0.00, 0.00] | 100% | 0% |" in out
    assert engines[0].calls == 8
    bcm.section_conversations_models(["scripted"], 2, out=tmp_path, engine_for=engine_for)
    assert engines[1].calls == 0  # every judgement reused from the run directories
    assert bcm.section_conversations_models(["scripted"], 2, out=tmp_path, report_only=True) == [session, turn]


def _oracle(convs: Sequence[bcm.LabelledConversation]) -> ScriptedEngine:
    """A judge that knows the labels: it finds the conversation (session) or the last assistant reply (turn)."""
    first = {c.messages[0]["content"]: c.label for c in convs}
    replies: dict[str, str] = {}
    for c in convs:
        unit = -1
        for m in c.messages:
            unit += m["role"] == "user"
            if m["role"] == "assistant" and m.get("content"):
                replies[m["content"]] = c.turn_labels[unit]

    def answer(messages: Sequence[Any], fmt: Any) -> str:
        text = "\n".join(m.content for m in messages)
        if "LAST `assistant` message" in text:
            pos = {r: text.rfind(json.dumps(r)[1:-1]) for r in replies}
            verdict = replies[max(pos, key=lambda r: pos[r])]
        else:
            verdict = next(lab for q, lab in first.items() if q in text)
        return YES.replace('"yes"', json.dumps(verdict))

    return ScriptedEngine(answer)


def test_a_judge_that_knows_the_labels_agrees_fully_with_kappa_one(tmp_path: Path) -> None:
    convs = bcm.load(limit=3)
    session, turn = bcm.section_conversations_models(["oracle"], 3, out=tmp_path, engine_for=lambda m: _oracle(convs))
    for a in (session, turn):
        assert (a.accuracy, a.kappa, a.tpr, a.tnr, a.unscored) == (1.0, 1.0, 1.0, 1.0, 0), a
    assert (turn.results, turn.labels_yes) == (10, 7)


@pytest.mark.system
def test_bench_py_dispatches_the_section_and_an_unknown_model_is_one_line_exit_2(tmp_path: Path) -> None:
    cmd = [sys.executable, "bench.py", "conversations-models", "--rows", "2", "--model", "no-such-model", "--out", str(tmp_path)]
    p = subprocess.run(cmd, cwd=SCRIPTS, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.strip().startswith("error: unknown model 'no-such-model'") and len(p.stderr.strip().splitlines()) == 1
