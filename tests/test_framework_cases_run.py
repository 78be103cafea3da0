"""DeepEval `ConversationalTestCase` lists and RAGAS `MultiTurnSample` lists as a run's data in the Python API
(`localjudge.evaluate(cases, judges)`, conversations/framework_cases.py), with the real deepeval and ragas classes."""

from __future__ import annotations

import json

import pytest

import localjudge
from localjudge.conversations import framework_cases
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError


def _deepeval_cases(names: list[str | None]) -> list:
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

    return [
        ConversationalTestCase(
            name=name,
            chatbot_role="travel agent",
            turns=[
                Turn(role="user", content=f"Weather in city {i}?"),
                Turn(
                    role="assistant",
                    content=f"answer {i}",
                    tools_called=[ToolCall(name="weather", input_parameters={"city": f"c{i}"}, output="18C")],
                ),
            ],
        )
        for i, name in enumerate(names)
    ]


def _ragas_samples(n: int) -> list:
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

    return [
        MultiTurnSample(
            user_input=[
                HumanMessage(content=f"Weather in city {i}?"),
                AIMessage(content="", tool_calls=[ToolCall(name="weather", args={"city": f"c{i}"})]),
                ToolMessage(content="18C"),
                AIMessage(content=f"answer {i}"),
            ],
            reference_tool_calls=[ToolCall(name="weather", args={"city": "c0"})],
        )
        for i in range(n)
    ]


def _no_for(no: set[str]) -> ScriptedEngine:
    """A scripted engine: `no` for a conversation whose last assistant text is in `no`, else `yes`."""

    def answer(messages, fmt):
        conv = json.loads(messages[-1].content.removeprefix("conversation: "))
        last = [m["content"] for m in conv if m["role"] == "assistant" and m["content"]][-1]
        return json.dumps({"rationale": f"judged {last}", "result": "no" if last in no else "yes"})

    return ScriptedEngine(answer)


def test_a_deepeval_case_list_is_judged_one_conversation_per_case_named_by_the_cases(tmp_path):
    cases = _deepeval_cases(["paris", "rome", "oslo"])
    run = localjudge.evaluate(cases, ["conversation_completeness"], engine=_no_for({"answer 1"}), out=tmp_path / "r")
    rows = sorted(run.results, key=lambda r: r.row_index)
    got = [(r.conversation_id, r.row_id, r.result.value) for r in rows]
    assert got == [("paris", "paris", "yes"), ("rome", "rome", "no"), ("oslo", "oslo", "yes")]
    # the case's turns are the conversation the judge read
    assert "Weather in city 0?" in rows[0].inputs["conversation"] and "answer 0" in rows[0].inputs["conversation"]
    # the same list again: the same row ids, every cell reused
    again = localjudge.evaluate(cases, ["conversation_completeness"], engine=_no_for(set()), out=tmp_path / "r")
    assert again.counts.evaluated == 0 and again.counts.reused == 3


def test_deepeval_cases_without_distinct_names_are_identified_by_their_index():
    convs = framework_cases.case_conversations(_deepeval_cases(["a", None, "a"]), "deepeval")
    assert [c.id for c in convs] == ["0", "1", "2"]
    convs = framework_cases.case_conversations(_deepeval_cases(["a", "b"]), "deepeval")
    assert [c.id for c in convs] == ["a", "b"]


def test_a_ragas_sample_list_runs_model_free_judges_on_its_reference_tool_calls(tmp_path, monkeypatch):
    from localjudge.engine.backends import ModelRef

    def no_model(self):
        raise AssertionError("a run of model-free judges loaded the model")

    monkeypatch.setattr(ModelRef, "engine", no_model)
    run = localjudge.evaluate(_ragas_samples(2), ["mlflow_tool_call_exact"], model="smollm2-135m", out=tmp_path / "r")
    rows = sorted(run.results, key=lambda r: r.row_index)
    assert [(r.row_id, r.result.score) for r in rows] == [("0", 1.0), ("1", 0.0)]
    assert json.loads(rows[0].inputs["expected_tool_calls"]) == [{"name": "weather", "arguments": {"city": "c0"}}]


def test_a_ragas_sample_list_is_judged_per_turn_with_a_scripted_engine(tmp_path):
    run = localjudge.evaluate(
        _ragas_samples(2), ["conversation_completeness"], engine=_no_for({"answer 1"}), out=tmp_path / "r", conversation="turn"
    )
    assert sorted((r.conversation_id, r.turn_index, r.result.value) for r in run.results) == [("0", 0, "yes"), ("1", 0, "no")]


def test_a_bad_item_is_one_line_naming_its_index_and_field_before_the_model_loads(tmp_path):
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage

    engine = ScriptedEngine([])
    cases = _deepeval_cases(["a", "b"])
    with pytest.raises(InputError) as e:
        localjudge.evaluate([*cases, {"turns": []}], ["conversation_completeness"], engine=engine, out=tmp_path / "r")
    assert str(e.value).startswith("data[2] (DeepEval ConversationalTestCase list): a dict, not a deepeval")
    assert "\n" not in str(e.value)
    bad = MultiTurnSample(user_input=[HumanMessage(content="hi"), AIMessage(content="x")] * 501)  # over the turn bound
    with pytest.raises(InputError, match=r"^data\[1\] \(RAGAS MultiTurnSample list\): ragas MultiTurnSample: 1002 turns"):
        localjudge.evaluate([*_ragas_samples(1), bad], ["conversation_completeness"], engine=engine, out=tmp_path / "r")
    assert engine.calls == 0 and not (tmp_path / "r" / "results.jsonl").exists()


def test_a_list_longer_than_the_bound_is_refused_with_what_to_do(monkeypatch):
    monkeypatch.setattr(framework_cases, "MAX_CASES", 2)
    with pytest.raises(InputError, match=r"^data: 3 DeepEval ConversationalTestCase items, more than 2 in one run; split"):
        framework_cases.case_conversations(_deepeval_cases(["a", "b", "c"]), "deepeval")


def test_a_list_of_other_objects_is_not_taken_for_framework_cases():
    assert framework_cases.case_list_framework([{"messages": []}]) is None
    assert framework_cases.case_list_framework([]) is None
    assert framework_cases.case_list_framework(_ragas_samples(1)) == "ragas"


@pytest.mark.model
@pytest.mark.slow
def test_a_deepeval_case_list_is_judged_by_the_real_default_model(tmp_path):
    run = localjudge.evaluate(
        _deepeval_cases(["paris"]),
        ["conversation_completeness"],
        model="smollm2-135m",
        model_options={"n_threads": 1},
        out=tmp_path / "r",
    )
    (r,) = run.results
    assert r.row_id == "paris" and r.result.scored and r.result.value in ("yes", "no")


def test_the_docs_deepeval_case_list_snippet_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    from localjudge.engine.backends import ModelRef

    page = (Path(__file__).resolve().parent.parent / "docs/conversations.md").read_text(encoding="utf-8")
    (code,) = [s for s in re.findall(r"```python\n(.*?)```", page, re.S) if "ConversationalTestCase" in s]
    monkeypatch.setattr(ModelRef, "engine", lambda self: _no_for(set()))  # the default model's verdict is not the point
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "docs/conversations.md", "exec"), scope)
    (r,) = scope["run"].results
    assert (r.row_id, r.result.value) == ("paris", "yes") and (tmp_path / "runs/deepeval/results.jsonl").exists()


def test_a_deepeval_case_lists_expected_outcome_and_scenario_reach_the_judges_that_read_them(tmp_path):
    """A ConversationalTestCase's `expected_outcome` and `scenario` are its conversation's, not row columns: the
    run gives them to deepeval_turn_contextual_recall and to a ConversationalGEval judge that reads them."""
    from deepeval.test_case import ConversationalTestCase, Turn

    cases = [
        ConversationalTestCase(
            name="candide",
            scenario="A reader asks about a French novel.",
            expected_outcome="Voltaire wrote Candide.",
            turns=[
                Turn(role="user", content="Who wrote Candide?"),
                Turn(role="assistant", content="Voltaire.", retrieval_context=["Candide is a satire by Voltaire."]),
            ],
        )
    ]
    prompts: list[str] = []

    def reply(messages, fmt):
        prompts.append(messages[-1].content)
        text = messages[-1].content
        if "can be attributed to the nodes" in text:
            return json.dumps({"verdicts": [{"verdict": "yes", "reason": "1st node"}]})
        if "evaluation steps" in text.lower() and '"steps"' in text:
            return json.dumps({"steps": ["Check the answer."]})
        if '"score"' in text:
            return json.dumps({"reason": "fine", "score": 9})
        return json.dumps({"reason": "fine"})

    geval = localjudge.judges.make_conversational_geval_judge(
        "novel", evaluation_steps=["Check the answer."], evaluation_params=["content", "scenario", "expected_outcome"]
    )
    result = localjudge.evaluate(
        cases, ["deepeval_turn_contextual_recall", geval], engine=ScriptedEngine(reply), out=tmp_path / "run"
    )
    rows = list(result.results)
    assert [r.result.unscored_reason for r in rows] == [None, None], [r.result.error for r in rows]
    assert any("Assistant Output:\nVoltaire wrote Candide.\n\nRetrieval Context:" in p for p in prompts)
    assert any("A reader asks about a French novel." in p and "Voltaire wrote Candide." in p for p in prompts if "Scenario" in p)
