"""The trace judge on the real default model (SmolLM2-135M) with the two committed example traces.

Small caps and budgets keep this to a handful of actions per trace. What is asserted is what the
design guarantees: the loop runs, every action the model produced parses, the first action is a
tool call, and the result is a typed rating or an honest `max_iterations`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from localjudge.agent import ActionFormat, ToolAction, ToolLimits, TraceJudge
from localjudge.cli import main

pytestmark = pytest.mark.system

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"
RAG = EXAMPLES / "rag_agent.mlflow.json"
TOOL = EXAMPLES / "tool_agent.otel.json"
LIMITS = ToolLimits(page_size=3, value_chars=80, field_chars=200, result_chars=600)
TOOL_NAMES = {"get_trace_info", "list_spans", "get_span", "search_trace"}


def check_run(r, rating_spec, max_iterations):
    d = r.details
    assert 1 <= d["actions"] <= max_iterations and d["invalid_actions"] == []
    fmt = ActionFormat(rating_spec)
    parsed = [fmt.parse(t) for t in d["action_texts"]]  # every action the model produced parses
    assert isinstance(parsed[0], ToolAction)  # the first action is a tool call
    assert len(d["tool_calls"]) >= 1 and {c["name"] for c in d["tool_calls"]} <= TOOL_NAMES
    assert all(c["result_chars"] > 0 for c in d["tool_calls"])
    if r.scored:
        assert r.score is not None and r.rationale is not None and r.raw_text == d["action_texts"][-1]
    else:
        assert r.unscored_reason == "max_iterations" and d["actions"] == max_iterations and r.value is None


@pytest.mark.slow
def test_real_model_judges_the_rag_trace_without_a_tool_budget(engine):
    judge = TraceJudge(
        "Evaluate whether the final answer in {{ trace }} is supported by the documents returned by the retriever span.",
        "yes/no",
        max_iterations=3,
        field_tokens=16,
        limits=LIMITS,
    )
    r = judge.judge(RAG, engine)
    check_run(r, "yes/no", 3)
    assert r.value in (None, "yes", "no")


@pytest.mark.slow
def test_real_model_rates_the_failing_tool_trace_after_its_tool_budget(engine):
    judge = TraceJudge(
        "Evaluate whether the agent in {{ trace }} handled its tool calls correctly: if a tool call failed, "
        "the final answer must not invent the missing information.",
        "yes/no",
        max_iterations=3,
        max_tool_calls=2,
        field_tokens=16,
        limits=LIMITS,
    )
    r = judge.judge(TOOL, engine)
    check_run(r, "yes/no", 3)
    assert r.scored and r.value in ("yes", "no")  # by construction: after 2 tool calls only the rating can follow


def test_real_model_cli_returns_an_integer_rating(engine):
    res = CliRunner().invoke(
        main,
        [
            "trace",
            "--trace",
            str(RAG),
            "--instructions",
            "Rate from 1 to 5 how well the answer in {{ trace }} uses the retrieved documents.",
            "--result",
            "int:1-5",
            "--max-iterations",
            "2",
            "--max-tool-calls",
            "1",
            "--field-tokens",
            "12",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["unscored_reason"] is None and data["value"] in (1, 2, 3, 4, 5)
    assert data["details"]["tool_calls"] and data["details"]["rating_after_tool_budget"] is True
