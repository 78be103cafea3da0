"""RAGAS's agent metrics ported as judges (kind ragas_agent): every prompt equals the one the installed ragas package
sends for the same sample (captured from the package's own metric with a scripted LLM), and the score equals the
package's score for the same scripted outputs."""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ragas")

from pydantic import BaseModel  # noqa: E402
from ragas.dataset_schema import MultiTurnSample  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage  # noqa: E402
from ragas.metrics._goal_accuracy import AgentGoalAccuracyWithoutReference, AgentGoalAccuracyWithReference  # noqa: E402
from ragas.metrics._topic_adherence import TopicAdherenceScore  # noqa: E402

import localjudge  # noqa: E402
from localjudge.conversations import from_ragas  # noqa: E402
from localjudge.conversations.ragas_text import ragas_text  # noqa: E402
from localjudge.engine.base import ScriptedEngine  # noqa: E402
from localjudge.errors import InputError  # noqa: E402
from localjudge.judges import get_judge  # noqa: E402
from localjudge.judges.ragas_agent import topic_adherence_score  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def sample(**kw: Any) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="Book me a table at Café Rouge for 2 at 8pm — and what's the weather in Paris?"),
            AIMessage(content="Let me check.", tool_calls=[ToolCall(name="book", args={"place": "Café Rouge", "n": 2})]),
            ToolMessage(content="Booked: table 4, 20:00"),
            AIMessage(content="", tool_calls=[ToolCall(name="weather", args={"city": "Paris"})]),
            ToolMessage(content="18°C, cloudy"),
            AIMessage(content='Your table is booked. It is 18°C in "Paris".'),
            HumanMessage(content="Thanks!\nAlso, who won the election?"),
            AIMessage(content="Sorry, I can't discuss politics."),
        ],
        **kw,
    )


class ScriptedRagasLLM(InstructorBaseRagasLLM):
    """RAGAS's LLM interface answering from a script keyed by the output model's name; it records each prompt."""

    is_async = True

    def __init__(self, script: dict[str, list[dict[str, Any]]]):
        self.script = {k: list(v) for k, v in script.items()}
        self.prompts: list[str] = []

    def generate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        self.prompts.append(prompt)
        return response_model.model_validate(self.script[response_model.__name__].pop(0))

    async def agenerate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        return self.generate(prompt, response_model)


def scripted_engine(script: dict[str, list[dict[str, Any]]]) -> ScriptedEngine:
    queues = {k: list(v) for k, v in script.items()}
    return ScriptedEngine(lambda messages, fmt: json.dumps(queues[fmt.name].pop(0), ensure_ascii=False))


def run_both(metric: Any, judge_name: str, script: dict[str, list[dict[str, Any]]], s: MultiTurnSample, **variables: Any):
    llm = ScriptedRagasLLM(script)
    metric.llm = llm
    theirs = asyncio.run(metric._multi_turn_ascore(s, None))
    engine = scripted_engine(script)
    ours = get_judge(judge_name).evaluate(engine, ragas_conversation=ragas_text(from_ragas(s)), **variables)
    sent = [m[-1].content for m in engine.prompts]
    assert all(len(m) == 1 and m[0].role == "user" for m in engine.prompts)
    return theirs, ours, llm.prompts, sent


def test_conversation_text_is_ragas_pretty_repr():
    s = sample()
    assert ragas_text(from_ragas(s)) == s.pretty_repr()


GOAL = [
    {
        "WorkflowOutput": [{"user_goal": "Book a table", "end_state": "Table 4 booked at 20:00"}],
        "CompareOutcomeOutput": [{"reason": "same", "verdict": "1"}],
    },
    {
        "WorkflowOutput": [{"user_goal": "Book a table", "end_state": "Nothing booked"}],
        "CompareOutcomeOutput": [{"reason": "differs", "verdict": "0"}],
    },
]


@pytest.mark.parametrize("script", GOAL)
def test_goal_accuracy_with_reference_sends_ragas_prompts_and_scores_as_ragas(script):
    s = sample(reference="A table for 2 at Café Rouge is booked for 8pm.")
    theirs, ours, their_prompts, our_prompts = run_both(
        AgentGoalAccuracyWithReference(), "agent_goal_accuracy", script, s, reference=s.reference
    )
    assert our_prompts == their_prompts and len(our_prompts) == 2
    assert ours.score == theirs and ours.passed == (theirs == 1.0)
    assert ours.rationale == script["CompareOutcomeOutput"][0]["reason"]


@pytest.mark.parametrize("script", GOAL)
def test_goal_accuracy_without_reference_compares_the_inferred_goal_as_ragas(script):
    s = sample()
    theirs, ours, their_prompts, our_prompts = run_both(
        AgentGoalAccuracyWithoutReference(), "agent_goal_accuracy_without_reference", script, s
    )
    assert our_prompts == their_prompts
    assert '"desired_outcome": "Book a table"' in our_prompts[1]
    assert ours.score == theirs


TOPICS = [
    ([], [], []),  # no topics: RAGAS scores 0
    (["booking", "weather", "politics"], [False, False, True], [True, True, False]),
    (["booking", "weather", "politics"], [False, True, False], [True, True]),  # fewer classifications: padded
    (["booking", "politics"], [True, True], [True, False, True]),  # more: cut; everything refused
    (["booking"], [False], [False]),
]


@pytest.mark.parametrize("mode", ["f1", "precision", "recall"])
@pytest.mark.parametrize(("topics", "refused", "classes"), TOPICS)
def test_topic_adherence_sends_ragas_prompts_and_scores_as_ragas(mode, topics, refused, classes):
    ref = ["restaurant booking", "weather"]
    s = sample(reference_topics=ref)
    script = {
        "TopicExtractionOutput": [{"topics": topics}],
        "TopicRefusedOutput": [{"refused_to_answer": r} for r in refused],
        "TopicClassificationOutput": [{"classifications": classes}],
    }
    llm = ScriptedRagasLLM(script)
    theirs = asyncio.run(TopicAdherenceScore(llm=llm, mode=mode)._multi_turn_ascore(s, None))
    engine = scripted_engine(script)
    judge = get_judge("topic_adherence").configure(ragas_agent={"metric": "topic_adherence", "mode": mode})
    ours = judge.evaluate(engine, ragas_conversation=ragas_text(from_ragas(s)), reference_topics=json.dumps(ref))
    assert [m[-1].content for m in engine.prompts] == llm.prompts and len(llm.prompts) == 2 + len(topics)
    assert ours.score == pytest.approx(float(theirs), abs=0) and ours.score == topic_adherence_score(refused, classes, mode)
    assert ours.details["topics"] == topics


def test_an_unparsable_stage_output_is_an_unscored_result_naming_the_stage():
    engine = ScriptedEngine(['{"user_goal": "x", "end_state": "y"}', "not json"])
    res = get_judge("agent_goal_accuracy").evaluate(engine, ragas_conversation="Human: hi", reference="done")
    assert res.score is None and res.unscored_reason == "parse_error"
    assert res.error is not None and res.error.startswith("compare_outcome:")
    assert res.details["workflow"] == {"user_goal": "x", "end_state": "y"}


def test_reference_topics_that_are_not_a_list_of_strings_is_bad_input():
    with pytest.raises(InputError, match="reference_topics"):
        get_judge("topic_adherence").evaluate(ScriptedEngine([]), ragas_conversation="Human: hi", reference_topics="[1, 2]")


def test_judge_files_match_the_installed_package():
    """The files are what scripts/catalog/make_ragas_agent_judges.py writes from the installed ragas (rerun it on upgrade)."""
    from scripts.catalog import make_ragas_agent_judges as mod

    for name, j in mod.judges().items():
        path = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        assert path.read_text(encoding="utf-8") == mod.toml(name, j), name
        assert tomllib.loads(path.read_text(encoding="utf-8"))["kind"] == "ragas_agent"


@pytest.mark.parametrize("name", ["agent_goal_accuracy", "agent_goal_accuracy_without_reference", "topic_adherence"])
def test_first_prompt_equals_the_golden_file_the_package_rendered(name):
    from scripts.catalog import make_ragas_agent_judges as mod

    s = mod.golden_sample()
    variables = {"reference": s.reference, "reference_topics": s.reference_topics}
    judge = get_judge(name)
    messages = judge.render(
        ragas_conversation=ragas_text(from_ragas(s)), **{k: variables[k] for k in judge.required_variables if k in variables}
    )
    text = "".join(f"===== {m.role} =====\n{m.content}\n" for m in messages)
    golden = (ROOT / "tests" / "golden" / f"{name}.txt").read_text(encoding="utf-8")
    assert text == golden == mod.golden(name)


# a run's conversations: `--granularity session` rows carry `ragas_conversation` (RAGAS's pretty_repr)
BOOKING = [
    {"role": "user", "content": "Book me a table at Café Rouge for 2 at 8pm."},
    {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "book", "arguments": json.dumps({"place": "Café Rouge", "n": 2})},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Booked: table 4, 20:00"},
    {"role": "assistant", "content": "Your table is booked."},
]
WEATHER = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "I can't look that up, sorry."},
]
SAMPLES = [
    MultiTurnSample(
        user_input=[
            HumanMessage(content=BOOKING[0]["content"]),
            AIMessage(content="Let me check.", tool_calls=[ToolCall(name="book", args={"place": "Café Rouge", "n": 2})]),
            ToolMessage(content="Booked: table 4, 20:00"),
            AIMessage(content="Your table is booked."),
        ]
    ),
    MultiTurnSample(user_input=[HumanMessage(content=WEATHER[0]["content"]), AIMessage(content=WEATHER[1]["content"])]),
]
SCRIPTS = [
    {
        "WorkflowOutput": [{"user_goal": "Book a table", "end_state": "Table 4 booked at 20:00"}],
        "CompareOutcomeOutput": [{"reason": "same", "verdict": "1"}],
    },
    {
        "WorkflowOutput": [{"user_goal": "Know the weather", "end_state": "No weather given"}],
        "CompareOutcomeOutput": [{"reason": "not achieved", "verdict": "0"}],
    },
]


def test_session_rows_of_a_jsonl_get_the_prompts_and_scores_ragas_gives(tmp_path):
    data = tmp_path / "chats.jsonl"
    data.write_text(
        "".join(json.dumps({"id": i, "messages": m}) + "\n" for i, m in (("booking", BOOKING), ("weather", WEATHER))),
        encoding="utf-8",
    )
    queues = {k: [o for s in SCRIPTS for o in s[k]] for k in SCRIPTS[0]}
    engine = ScriptedEngine(lambda messages, fmt: json.dumps(queues[fmt.name].pop(0), ensure_ascii=False))
    run = localjudge.evaluate(
        str(data), ["agent_goal_accuracy_without_reference"], engine=engine, out=tmp_path / "r", conversation="session"
    )
    rows = list(run.results)
    theirs, their_prompts = [], []
    for s, script in zip(SAMPLES, SCRIPTS, strict=True):
        llm = ScriptedRagasLLM(script)
        theirs.append(asyncio.run(AgentGoalAccuracyWithoutReference(llm=llm)._multi_turn_ascore(s, None)))
        their_prompts += llm.prompts
    # the run batches each stage across rows (both first calls, then both second calls): compare the prompts as a set
    assert sorted(m[-1].content for m in engine.prompts) == sorted(their_prompts) and len(set(their_prompts)) == 4
    assert [(r.conversation_id, r.result.score) for r in rows] == [("booking", theirs[0]), ("weather", theirs[1])]
    assert theirs == [1.0, 0.0]
    assert rows[0].inputs["ragas_conversation"] == SAMPLES[0].pretty_repr()


def test_a_messages_column_is_judged_session_level_by_default_for_a_ragas_agent_judge(tmp_path):
    queues = {k: list(v) for k, v in SCRIPTS[0].items()}
    engine = ScriptedEngine(lambda messages, fmt: json.dumps(queues[fmt.name].pop(0), ensure_ascii=False))
    run = localjudge.evaluate([{"id": "booking", "messages": BOOKING}], ["agent_goal_accuracy_without_reference"], engine=engine)
    (row,) = run.results
    assert row.conversation_id == "booking" and row.turn_index is None and row.result.score == 1.0
