"""The chained calls of RAGAS 0.4.3's agent metrics (kind `ragas_agent`), and their arithmetic as RAGAS computes it.

* goal accuracy (`AgentGoalAccuracyWithReference` / `WithoutReference`, ragas/metrics/_goal_accuracy.py): stage 0
  infers `user_goal` and `end_state` from the conversation, stage 1 compares the desired outcome (the
  `reference`, or the inferred `user_goal`) with `end_state`; score = `float(verdict)`, 0 or 1.
* topic adherence (`TopicAdherenceScore`, ragas/metrics/_topic_adherence.py): stage 0 extracts the user's topics,
  stage 1 asks, once per topic, whether the AI refused it, stage 2 classifies the topics against
  `reference_topics`; score = precision, recall or F1 of the answered topics that are on a reference topic.

Each call's input is what RAGAS prints after `input: `: the input model's JSON (`model_dump_json(indent=4)`), the
judge's `{{stage_input}}`. A call whose output does not parse makes the result unscored (`parse_error`, naming the
stage); the calls made so far are kept on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from .. import jsonio
from ..engine.base import Calls, Generation, Message
from ..errors import InputError, ParseError
from ..formats import OutputFormat
from .context import CallContext, Judge
from .sections import RagasAgentSection

Mode = Literal["precision", "recall", "f1"]


def stage_input(fields: dict[str, Any]) -> str:
    """An input model's JSON as RAGAS's `to_string` prints it (pydantic's `model_dump_json(indent=4)`)."""
    return json.dumps(fields, indent=4, ensure_ascii=False)


def topic_adherence_score(refused: Sequence[bool], classifications: Sequence[bool], mode: Mode = "f1") -> float:
    """`TopicAdherenceScore`'s arithmetic: a topic is answered when not refused; classifications are padded with
    False or cut to the topics' number; true positives are answered on-topic topics, false positives answered
    off-topic ones, false negatives refused on-topic ones; each denominator gets RAGAS's + 1e-10."""
    answered = [not r for r in refused]
    cls = (list(classifications) + [False] * len(answered))[: len(answered)]
    tp = sum(a and c for a, c in zip(answered, cls, strict=True))
    fp = sum(a and not c for a, c in zip(answered, cls, strict=True))
    fn = sum((not a) and c for a, c in zip(answered, cls, strict=True))
    precision = tp / (tp + fp + 1e-10)
    recall = tp / (tp + fn + 1e-10)
    if mode == "precision":
        return precision
    if mode == "recall":
        return recall
    return 2 * (precision * recall) / (precision + recall + 1e-10)


def reference_topics(value: Any) -> list[str]:
    """`reference_topics` as a list of strings: a list, or its JSON text (a CSV cell)."""
    if isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except json.JSONDecodeError:
            value = [value] if value.strip() else None
    if not isinstance(value, list | tuple) or not value or not all(isinstance(t, str) for t in value):
        raise InputError("variable 'reference_topics' must be a non-empty list of strings (or its JSON text); fix the row")
    return list(value)


def stage_messages(judge: Judge, stage: int, raw: dict[str, Any], text: dict[str, str], fields: dict[str, Any]) -> list[Message]:
    """Stage `stage`'s messages with `fields` as its input."""
    return judge._messages(stage, raw, {**text, "stage_input": stage_input(fields)})


def first_request(judge: Judge, sec: RagasAgentSection, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    """Stage 0's messages: the conversation as the input of RAGAS's first prompt (`workflow` of goal accuracy,
    `user_input` of topic extraction); the later stages depend on its output."""
    key = "user_input" if sec.ragas_agent.metric == "topic_adherence" else "workflow"
    return stage_messages(judge, 0, raw, text, {key: str(raw["ragas_conversation"])})


def agent_calls(ctx: CallContext[RagasAgentSection]) -> Calls:
    """The metric's calls as a generator (see `Judge._calls`): yields requests, returns the `JudgeResult`."""
    judge, sec, raw, text, gens, outputs = ctx.judge, ctx.section, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = sec.ragas_agent
    fmts = judge.output_formats
    conversation = str(raw["ragas_conversation"])

    def parsed(stage: int, gen: Generation) -> Any:
        return fmts[stage].value(fmts[stage].parse(gen.text))

    try:
        if cfg.metric == "topic_adherence":
            ref = reference_topics(raw["reference_topics"])
            gens += yield [(first_request(judge, sec, raw, text), fmts[0])]
            topics = outputs["topics"] = parsed(0, gens[-1])["topics"]
            asks: list[tuple[Sequence[Message], OutputFormat]] = [
                (stage_messages(judge, 1, raw, text, {"user_input": conversation, "topic": t}), fmts[1]) for t in topics
            ]
            if asks:
                gens += yield asks
            refused = outputs["refused_to_answer"] = (
                [parsed(1, g)["refused_to_answer"] for g in gens[-len(asks) :]] if asks else []
            )
            fields = {"reference_topics": ref, "topics": topics}
            gens += yield [(stage_messages(judge, 2, raw, text, fields), fmts[2])]
            classes = outputs["classifications"] = parsed(2, gens[-1])["classifications"]
            score = topic_adherence_score(refused, classes, cfg.mode)
            return ctx.scored(fmts[2], score, score, None, outputs, {**outputs, "mode": cfg.mode})
        gens += yield [(first_request(judge, sec, raw, text), fmts[0])]
        workflow = outputs["workflow"] = parsed(0, gens[-1])
        with_ref = cfg.metric == "goal_accuracy_with_reference"
        desired = str(raw["reference"]) if with_ref else workflow["user_goal"]
        fields = {"desired_outcome": desired, "arrived_outcome": workflow["end_state"]}
        gens += yield [(stage_messages(judge, 1, raw, text, fields), fmts[1])]
        compare = outputs["compare_outcome"] = parsed(1, gens[-1])
        score = float(compare["verdict"])
        return ctx.scored(fmts[1], score, score, compare["reason"], outputs, dict(outputs))
    except ParseError as e:
        return ctx.parse_failed(sec.stages[min(len(outputs), len(sec.stages) - 1)].name, e)
