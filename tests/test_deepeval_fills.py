"""Each DeepEval metric's `fills` (the placeholders its calls fill between calls, declared beside its program in
`METRICS`) is what its calls fill: every built-in judge of the several-call DeepEval kinds, run on the real-case
examples with answers that give every list two items, fills no placeholder its metric does not declare, and the
metrics that share a declaration fill all of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from judges_real_cases import EXAMPLES

from localjudge.engine.base import ScriptedEngine
from localjudge.judges import deepeval_agentic, deepeval_conversation, deepeval_geval, get_judge, list_judges


def full_instance(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> Any:
    """An instance of a DeepEval output schema with two items in every list (so every later call is asked)."""
    if "$ref" in schema:
        return full_instance(defs[schema["$ref"].split("/")[-1]], defs, depth)
    if "anyOf" in schema:
        return full_instance(schema["anyOf"][0], defs, depth)
    if "enum" in schema:
        return schema["enum"][depth % len(schema["enum"])]
    t = schema.get("type")
    if t == "object" or "properties" in schema:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):  # a map (knowledge retention's facts): one entry
            return {f"k{depth}": full_instance(extra, defs, depth + 1)}
        return {k: full_instance(v, defs, depth + 1) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        return [full_instance(schema.get("items", {}), defs, depth + i) for i in range(2)]
    if t == "integer":
        return 1 if schema.get("minimum", 0) <= 1 else schema["minimum"]
    if t == "number":
        return 0.5
    if t == "boolean":
        return True
    return f"s{depth}"


def answer(messages, fmt) -> str:
    schema = getattr(fmt, "schema", None)
    if schema is None:  # a free-text call (goal accuracy's reason)
        return "A reason."
    return json.dumps(full_instance(schema, schema.get("$defs", {})))


def declared(judge) -> tuple[str, ...]:
    """The fills its metric declares."""
    sec = judge.section
    if judge.kind == "deepeval_conversation":
        return deepeval_conversation.METRICS[sec.deepeval_conversation.metric].fills
    if judge.kind == "deepeval_agentic":
        return deepeval_agentic.METRICS[sec.deepeval_agentic].fills
    return deepeval_geval.FILLS


def filled(judge, variables: dict[str, Any]) -> set[str]:
    """The placeholders the judge's calls filled beyond the row's own texts, on a copy of the judge whose
    `_messages` records what each call was given."""
    copy = judge.configure()
    seen: set[str] = set()
    render = copy._messages

    def recording(stage, raw, text):
        seen.update(text)
        return render(stage, raw, text)

    copy._messages = recording
    result = copy.evaluate(ScriptedEngine(answer), **variables)
    assert result.scored, (judge.name, result.error)
    return seen - set(copy._values(variables)[1])


KINDS = ("deepeval_conversation", "deepeval_agentic", "deepeval_geval")
JUDGES = sorted(j.name for j in list_judges() if j.kind in KINDS)


@pytest.mark.parametrize("name", JUDGES)
def test_a_metric_fills_only_the_placeholders_it_declares(name):
    judge = get_judge(name)
    seen = set().union(*(filled(judge, ex[name]) for ex in EXAMPLES if name in ex))
    assert seen <= set(declared(judge)), sorted(seen - set(declared(judge)))


def test_every_declared_placeholder_is_filled_by_a_metric_that_declares_it():
    by_declaration: dict[tuple[str, ...], set[str]] = {}
    for name in JUDGES:
        judge = get_judge(name)
        seen = set().union(*(filled(judge, ex[name]) for ex in EXAMPLES if name in ex))
        by_declaration.setdefault(declared(judge), set()).update(seen)
    assert len(by_declaration) >= 10  # the metrics with a built-in judge, the four RAG metrics sharing one
    for fills, seen in by_declaration.items():
        assert set(fills) <= seen, sorted(set(fills) - seen)
