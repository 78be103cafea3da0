"""A run's cell computes its values and renders each of its prompts once (issue 44 part 3): the cache key's
fingerprint, the first request and the calls all read what `Judge.prepare` made (before, every prompt known up
front was rendered twice per cell and the values computed three times)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import localjudge
import localjudge.judges.judge as judge_module
import localjudge.judges.values as values_module
from localjudge.conversations.deepeval_case import tools_called_text
from localjudge.conversations.model import ToolCall
from localjudge.conversations.ragas_text import ragas_text
from localjudge.conversations.readers import from_messages
from localjudge.conversations.render import deepeval_turns_text
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError
from localjudge.judges import get_judge


def _answer(messages, fmt) -> str:
    try:
        return fmt.example_output(True, "It says so.")
    except InputError:  # a format with no one-verdict example (statements, steps): an answer that may not parse
        return json.dumps({"statements": ["It is Paris."], "steps": ["Read it."], "verdicts": [], "reason": "r"})


def _rows() -> list[dict]:
    rows = []
    for q, a, ctx in [("Capital of France?", "Paris.", "Paris is in France."), ("Who wrote Hamlet?", "Dickens.", "Shakespeare.")]:
        turns = from_messages([{"role": "user", "content": q}, {"role": "assistant", "content": a}])
        rows.append(
            {
                "input": q,
                "output": a,
                "retrieval_context": ctx,
                "doc": [ctx, "Bananas are yellow."],
                "deepeval_turns": deepeval_turns_text(turns),
                "ragas_conversation": ragas_text(turns),
                "deepeval_input": q,
                "deepeval_tools_called": tools_called_text([ToolCall(name="search", arguments={"query": q})]),
            }
        )
    return rows


JUDGES = [
    "groundedness",
    "retrieval_relevance",
    "answer_relevancy",
    "deepeval_professionalism",
    "deepeval_knowledge_retention",
    "agent_goal_accuracy_without_reference",
    "deepeval_argument_correctness",
]


@pytest.fixture
def renders(monkeypatch) -> Counter:
    """Every template render of the run, by (template, its texts): a prompt rendered twice counts 2."""
    seen: Counter = Counter()
    real = judge_module.render

    def counting(template, style, text, expressions):
        seen[(template, tuple(sorted(text.items())))] += 1
        return real(template, style, text, expressions)

    monkeypatch.setattr(judge_module, "render", counting)
    return seen


def test_a_run_renders_each_prompt_of_each_cell_once(tmp_path, renders):
    calls = [j.traits.calls for j in map(get_judge, JUDGES)]
    assert set(calls) == {
        "one",
        "per_item",
        "two_stage",
        "deepeval_geval",
        "deepeval_conversation",
        "ragas_agent",
        "deepeval_agentic",
    }
    run = localjudge.evaluate(_rows(), JUDGES, engine=ScriptedEngine(_answer), out=tmp_path / "r")
    assert len(run.results) == 2 * len(JUDGES)
    assert renders and max(renders.values()) == 1, [k[0][:60] for k, n in renders.items() if n > 1]


def test_a_one_call_cell_renders_its_templated_messages_once_each(tmp_path, renders):
    judge = get_judge("groundedness")
    templated = sum(not m.literal for m in judge._plan.stages[0])
    run = localjudge.evaluate(_rows(), ["groundedness"], engine=ScriptedEngine(_answer), out=tmp_path / "r")
    assert [r.result.scored for r in run.results] == [True, True]
    assert sum(renders.values()) == 2 * templated  # two rows; before: 2 * 2 * templated


def test_a_cell_computes_its_values_once(tmp_path, monkeypatch):
    computed: list[str] = []
    real = values_module.VariableValues._values

    def counting(self, given):
        computed.append(self.spec.name)
        return real(self, given)

    monkeypatch.setattr(values_module.VariableValues, "_values", counting)
    localjudge.evaluate(_rows(), ["groundedness", "answer_relevancy"], engine=ScriptedEngine(_answer), out=tmp_path / "r")
    assert Counter(computed) == {"groundedness": 2, "answer_relevancy": 2}  # one per cell; before: three


def test_a_resumed_run_renders_nothing_it_does_not_send(tmp_path, renders):
    out = tmp_path / "r"
    localjudge.evaluate(_rows(), ["groundedness"], engine=ScriptedEngine(_answer), out=out)
    first = sum(renders.values())
    engine = ScriptedEngine(_answer)
    localjudge.evaluate(_rows(), ["groundedness"], engine=engine, out=out)
    assert engine.calls == 0 and sum(renders.values()) == 2 * first  # the key's fingerprint only, no second render


def test_a_stage_text_that_is_not_a_string_is_rendered_without_the_memo():
    from localjudge.judges.values import RowValues

    judge = get_judge("groundedness")
    raw, text = judge._values({"input": "q", "output": "a", "retrieval_context": "c"})
    values = RowValues(raw, text)
    odd = {**text, "extra": ["not", "hashable"]}
    assert judge._messages(0, values, odd) == judge._messages(0, raw, odd) and values.rendered == {}
    assert judge._messages(0, values, text) == judge._messages(0, raw, text) and len(values.rendered) == 1
