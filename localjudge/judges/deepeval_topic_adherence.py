"""The chained calls of DeepEval 4.3.1's TopicAdherenceMetric (kind `deepeval_conversation`, metric
`topic_adherence`, deepeval/metrics/topic_adherence/), as its `measure()` makes them with `async_mode=False`.

The turns are cut into DeepEval's unit interactions (`get_unit_interactions`: a unit starts at a user turn that
follows an assistant turn; a last unit counts only when it ends with an assistant turn). Stage 0 extracts the
question/answer pairs of each unit (`QAPairs`, the unit printed as `Conversation: \\n` then `{role} \\n{content} \\n\\n`
per turn), stage 1 classifies each pair against the row's `relevant_topics` (`RelevancyVerdict`: TP, TN, FP or FN),
stage 2 writes the reason from the four lists of reasons (`prettify_list`, `(none)` when empty). Score = (TP + TN) /
all pairs, 0 when there is no pair (then no reason call: DeepEval's fixed sentence), 0 under `strict_mode` when
below 1. DeepEval's GoalAccuracyMetric is not ported here (see docs/conversations.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import jsonio
from ..engine.base import Calls, Message
from ..errors import InputError
from .context import CallContext, Judge
from .deepeval_values import deepeval_turns
from .sections import DeepEvalConversationSection

# the placeholders its calls fill (DeepEval's template variables; `relevant_topics`, a declared variable, is printed
# as DeepEval's list in the verdict calls)
FILLS = (
    "conversation",
    "question",
    "response",
    "success",
    "score",
    "threshold",
    "true_positives_reason_line",
    "true_negatives_reason_line",
    "false_positives_reason_line",
    "false_negatives_reason_line",
)
NO_PAIRS = "There were no question-answer pairs to evaluate. Please enable verbose logs to look at the evaluation steps taken"
VERDICTS = ("TP", "TN", "FP", "FN")


def unit_interactions(turns: list[dict[str, str]]) -> list[list[dict[str, str]]]:
    """DeepEval's `get_unit_interactions`."""
    units: list[list[dict[str, str]]] = []
    current: list[dict[str, str]] = []
    has_user = False
    for t in turns:
        if current and current[-1]["role"] == "assistant" and t["role"] == "user" and has_user:
            units.append(current)
            current, has_user = [t], True
            continue
        current.append(t)
        has_user = has_user or t["role"] == "user"
    if current and len(current) > 1 and current[-1]["role"] == "assistant" and has_user:
        units.append(current)
    return units


def unit_text(unit: list[dict[str, str]]) -> str:
    """A unit as TopicAdherenceMetric._get_qa_pairs prints it."""
    return "Conversation: \n" + "".join(f"{t['role']} \n{t['content']} \n\n" for t in unit)


def prettify_list(items: Sequence[str | None]) -> str:
    """DeepEval's `prettify_list` for a list of reasons (strings quoted as-is, anything else as `repr`)."""
    if not items:
        return "[]"
    shown = [f'"{i}"' if isinstance(i, str) else repr(i) for i in items]
    return "[\n    " + ",\n    ".join(shown) + "\n]"


def relevant_topics(value: Any) -> list[str]:
    """The row's `relevant_topics` as DeepEval's list: a list of strings, its JSON or Python text, or one topic."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = jsonio.loads(text)
            except ValueError:
                try:
                    value = jsonio.python_literal(text)
                except ValueError:
                    value = None
        else:
            value = [value]
    if not isinstance(value, list | tuple) or not value or not all(isinstance(t, str) for t in value):
        raise InputError(
            "variable 'relevant_topics' must be a non-empty list of topic strings (a list column, its JSON text, "
            "or one topic as text); fix the row"
        )
    return list(value)


def _messages(judge: Judge, stage: int, raw: dict[str, Any], text: dict[str, str], fields: dict[str, Any]) -> list[Message]:
    return judge._messages(stage, raw, {**text, **{k: v if isinstance(v, str) else str(v) for k, v in fields.items()}})


def first_request(judge: Judge, raw: dict[str, Any], text: dict[str, str], turns: list[dict[str, str]]) -> list[Message]:
    """The first call: the first unit's pair extraction (the whole conversation's when there is no unit)."""
    units = unit_interactions(turns)
    return _messages(judge, 0, raw, text, {"conversation": unit_text(units[0] if units else turns)})


def topic_adherence_calls(ctx: CallContext[DeepEvalConversationSection]) -> Calls:
    """TopicAdherenceMetric's calls: pairs per unit, a verdict per pair, the reason (none without pairs)."""
    judge, raw, text, gens, outputs = ctx.judge, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = ctx.section.deepeval_conversation

    fmts = judge.output_formats
    turns = deepeval_turns(raw["deepeval_turns"])
    topics = relevant_topics(raw.get("relevant_topics"))
    units = unit_interactions(turns)
    pairs: list[dict[str, Any]] = []
    if units:
        gens += yield [(_messages(judge, 0, raw, text, {"conversation": unit_text(u)}), fmts[0]) for u in units]
        for g in gens[-len(units) :]:
            pairs += fmts[0].value(fmts[0].parse(g.text))["qa_pairs"]
    outputs["qa_pairs"] = pairs
    verdicts: list[dict[str, Any]] = []
    if pairs:
        fields = [{"relevant_topics": topics, "question": p["question"], "response": p["response"]} for p in pairs]
        gens += yield [(_messages(judge, 1, raw, text, f), fmts[1]) for f in fields]
        verdicts = [fmts[1].value(fmts[1].parse(g.text)) for g in gens[-len(pairs) :]]
    outputs["verdicts"] = verdicts
    threshold: float | int = 1 if cfg.strict_mode else 0.5
    shown: float | int = 0 if not verdicts else sum(v["verdict"] in ("TP", "TN") for v in verdicts) / len(verdicts)
    if cfg.strict_mode and shown < threshold:
        shown = 0
    score = float(shown)
    details = {**outputs, "strict_mode": cfg.strict_mode}
    if not verdicts:
        return ctx.scored(fmts[-1], score, score, NO_PAIRS, outputs, details)
    lines = {
        f"{name}_reason_line": prettify_list(reasons) if reasons else "(none)"
        for name, reasons in (
            (n, [v["reason"] for v in verdicts if v["verdict"] == k])
            for n, k in zip(("true_positives", "true_negatives", "false_positives", "false_negatives"), VERDICTS, strict=True)
        )
    }
    fields2 = {"success": str(shown >= threshold), "score": str(shown), "threshold": str(threshold), **lines}
    gens += yield [(_messages(judge, 2, raw, text, fields2), fmts[2])]
    reason = fmts[2].value(fmts[2].parse(gens[-1].text))["reason"]
    return ctx.scored(fmts[2], score, score, reason, outputs, details)
