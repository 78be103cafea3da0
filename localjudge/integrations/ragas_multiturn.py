"""A localjudge judge as a RAGAS multi-turn metric, and RAGAS's `MultiTurnSample` to and from localjudge's
conversation model. Needs `localjudge[ragas]`.

    from ragas import EvaluationDataset, evaluate
    from localjudge.integrations.ragas_multiturn import LocalJudgeMultiTurnMetric

    metric = LocalJudgeMultiTurnMetric("agent_goal_accuracy")          # any judge; the default model
    result = evaluate(EvaluationDataset(samples=[...]), metrics=[metric])  # MultiTurnSample rows

`LocalJudgeMultiTurnMetric` is a RAGAS `MultiTurnMetric` (`_multi_turn_ascore`): each sample becomes a
`Conversation` (`conversations.from_ragas`) and the judge's variables are filled from it by name (or alias):
`ragas_conversation` (RAGAS's `pretty_repr`, what the ported agent judges read), `conversation` /
`conversation_with_tool_calls` (as MLflow's session judges read it), `reference` / `expected_outcome`,
`reference_topics`, `expected_tool_calls`. The score is the judge's; an unscored result (a prompt too long, an
output that does not parse) is NaN, as RAGAS scores a failed row. RAGAS's `required_columns` are
`user_input` plus the sample fields the judge requires. `to_ragas` turns a `Conversation` back into a
`MultiTurnSample`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conversations import conversation_text, from_ragas
from ..conversations.model import Conversation
from ..conversations.ragas_text import ragas_text
from ..engine.base import DecodeOptions, Engine
from ..errors import InputError
from ..judges.protocol import JudgeProtocol
from .common import BoundJudge, require

require("ragas", "ragas", "RAGAS")

from ragas.dataset_schema import MultiTurnSample  # noqa: E402
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage  # noqa: E402
from ragas.metrics.base import MetricType, MultiTurnMetric  # noqa: E402

# sample fields a judge variable can ask for, by variable name
SAMPLE_FIELDS = {"reference": "reference", "expected_outcome": "reference", "reference_topics": "reference_topics"}


def to_ragas(conv: Conversation) -> MultiTurnSample:
    """A `MultiTurnSample` from a conversation: user, assistant (with its tool calls) and tool turns in order
    (system turns, which a sample cannot hold, are left out); `expected_outcome` is the `reference`,
    `expected_tool_calls` the `reference_tool_calls`."""
    messages: list[HumanMessage | AIMessage | ToolMessage] = []
    for t in conv.turns:
        if t.role == "user":
            messages.append(HumanMessage(content=t.content))
        elif t.role == "assistant":
            calls = [ToolCall(name=c.name, args=dict(c.arguments)) for c in t.tool_calls] or None
            messages.append(AIMessage(content=t.content, tool_calls=calls))
        elif t.role == "tool":
            messages.append(ToolMessage(content=t.content if t.content or t.error is None else t.error))
    expected = conv.expected_tool_calls
    return MultiTurnSample(
        user_input=messages,
        reference=conv.expected_outcome,
        reference_tool_calls=None if expected is None else [ToolCall(name=c.name, args=dict(c.arguments)) for c in expected],
    )


def sample_values(sample: MultiTurnSample) -> dict[str, Any]:
    """Every judge variable a sample can fill (those it has), by name."""
    conv = from_ragas(sample)
    values: dict[str, Any] = {
        "ragas_conversation": ragas_text(conv),
        "conversation": conversation_text(conv),
        "conversation_with_tool_calls": conversation_text(conv, include_tool_calls=True),
    }
    if sample.reference is not None:
        values["reference"] = values["expected_outcome"] = sample.reference
    if sample.reference_topics is not None:
        values["reference_topics"] = list(sample.reference_topics)
    if conv.expected_tool_calls is not None:
        values["expected_tool_calls"] = [c.model_dump(exclude_none=True) for c in conv.expected_tool_calls]
    return values


def judge_values(judge: JudgeProtocol, sample: MultiTurnSample) -> dict[str, Any]:
    """The judge's variables from `sample`: each variable by its name or an alias; a required one the sample
    lacks is an `InputError` naming it."""
    have = sample_values(sample)
    out: dict[str, Any] = {}
    for v in judge.variables:
        name = next((n for n in [v.name, *v.aliases] if n in have), None)
        if name is not None:
            out[v.name] = have[name]
        elif v.required:
            raise InputError(
                f"judge '{judge.name}': variable {v.name!r} has no value in a MultiTurnSample (it gives "
                f"{', '.join(sorted(have))}); pick a judge that reads these"
            )
    return out


@dataclass(init=False)
class LocalJudgeMultiTurnMetric(MultiTurnMetric):
    """A localjudge judge as a RAGAS multi-turn metric (see the module docstring). `judge`: a judge name or
    object; `model` / `model_options` / `engine` / `options` as for the other adapters (`BoundJudge`); `name`:
    the result column (the judge's name unless given)."""

    def __init__(
        self,
        judge: str | JudgeProtocol = "agent_goal_accuracy",
        *,
        model: str | None = None,
        model_options: Mapping[str, Any] | None = None,
        engine: Engine | None = None,
        options: DecodeOptions | Mapping[str, Any] | None = None,
        name: str = "",
    ):
        self.bound: BoundJudge = BoundJudge(judge, model=model, model_options=model_options, engine=engine, options=options)
        variables = self.bound.judge.variables
        fields = {SAMPLE_FIELDS[n] for v in variables if v.required for n in [v.name, *v.aliases] if n in SAMPLE_FIELDS}
        if any(v.required and v.name == "expected_tool_calls" for v in variables):
            fields.add("reference_tool_calls")
        self.name = name or self.bound.judge.name
        self._required_columns = {MetricType.MULTI_TURN: {"user_input", *fields}}
        self.__post_init__()

    def init(self, run_config: Any) -> None:
        """Nothing to set up: the model loads on the first sample."""

    async def _multi_turn_ascore(self, sample: MultiTurnSample, callbacks: Any) -> float:
        values = judge_values(self.bound.judge, sample)
        result = await asyncio.wrap_future(self.bound.submit(values))
        return math.nan if result.score is None else float(result.score)
