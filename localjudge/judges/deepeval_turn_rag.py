"""The chained calls of DeepEval 4.3.1's turn-level RAG metrics (kind `deepeval_conversation`), as their `measure()`
makes them with `async_mode=False`: TurnFaithfulnessMetric (metric `turn_faithfulness`,
deepeval/metrics/turn_faithfulness/), TurnContextualRelevancyMetric (metric `turn_contextual_relevancy`,
deepeval/metrics/turn_contextual_relevancy/), TurnContextualPrecisionMetric (metric `turn_contextual_precision`) and
TurnContextualRecallMetric (metric `turn_contextual_recall`); the last two also read the row's `expected_outcome`.

All read the row's `deepeval_rag_turns` (conversations/render.py `deepeval_rag_turns_text`: each assistant turn with
its `retrieval_context`) and cut it as DeepEval does: unit interactions (`get_unit_interactions`), then one window
per unit holding it and up to 9 units before it (`get_turns_in_sliding_window`, window_size 10), flattened. In a
window the user turns' texts are `\\n{content} ` each, the other turns' `\\n{content}` each, and the retrieval
context is every non-user turn's passages in order.

* faithfulness, per window: the truths of the window's passages joined by a blank line (`Truths`; asked even when
  there is none), the claims of the assistant's text (`Claims`), one verdict call on the claims against the truths
  (`Verdicts`: yes / no / borderline; none without claims), and the window's reason from the "no" verdicts' reasons
  (`<no claims to verify>` and score 1 without verdicts, no call). A window's score is the fraction of yes and
  borderline verdicts, 0 under `strict_mode` when below 1.
* contextual relevancy, per window: one verdict call per passage (`ContextualRelevancyVerdicts`, the statements of
  the passage each yes / no given the user's text), the window's reason from the relevant and irrelevant statements
  (DeepEval's fixed sentence and score 1 when there is no verdict, no call). A window's score is the fraction of yes
  verdicts, 0 under `strict_mode` when below 1.
* contextual precision, per window with passages: one verdict call on all of them (`Verdicts`: each passage useful
  or not to reach `expected_outcome` given the user's text), the window's reason from the verdicts numbered as
  nodes. A window's score is DeepEval's weighted precision (the mean, over the useful passages, of the fraction of
  useful ones at or above each; 0 without one), 0 under `strict_mode` when below 1.
* contextual recall, per window with passages: one verdict call (`Verdicts`: each sentence of `expected_outcome`
  attributable to the passages or not), the window's reason from the supportive and unsupportive reasons. A
  window's score is the fraction of yes verdicts, 0 under `strict_mode` when below 1.
  Both give a window without passages (or without verdicts) score 1 and DeepEval's fixed sentence, no call.

The score is the mean of the windows' scores (1 when there is no window: then DeepEval's fixed reason, no call);
the reason is one last call given the score, whether it passed (threshold 0.5, 1 under `strict_mode`) and the
windows' reasons. A call whose output does not parse makes the result unscored (`parse_error`, naming the stage).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine.base import Calls, Generation, Message
from ..errors import InputError, ParseError
from ..formats import OutputFormat
from .context import CallContext, Judge
from .deepeval_topic_adherence import unit_interactions
from .deepeval_values import printed_value
from .sections import DeepEvalConversation, DeepEvalConversationSection

# the placeholders these metrics' stages fill per call (DeepEval's template variables; `user_content` is its `input`)
FILLS = (
    "reference_context",
    "user_content",
    "assistant_output",
    "claims",
    "contradictions",
    "score",
    "final_score",
    "success",
    "reasons",
    "context",
    "irrelevant_statements",
    "relevant_statements",
    "document_count_str",
    "context_to_display",
    "verdicts",
    "supportive_reasons",
    "unsupportive_reasons",
)
WINDOW_SIZE = 10  # DeepEval's default window_size for both metrics
NO_WINDOWS = "There were no retrieval contexts in your turns to evaluate, hence the score is 1"
NO_CLAIMS = "<no claims to verify>"
NO_CONTEXT = "There were no retrieval contexts in the given turns to evaluate the contextual relevancy."
NO_NODES = "There were no retrieval contexts in the given turns to evaluate the contextual {}."


def rag_turns(value: Any) -> list[dict[str, Any]]:
    """`deepeval_rag_turns` as DeepEval's turn dicts (what `deepeval_rag_turns_text` printed, a list, or a user's
    printed text of one: `deepeval_values.printed_value`); a turn's `retrieval_context`, when present, a list of
    strings."""
    value = printed_value(value)

    def ok(t: Any) -> bool:
        rag = t.get("retrieval_context") if isinstance(t, dict) else None
        return (
            isinstance(t, dict)
            and isinstance(t.get("content"), str)
            and isinstance(t.get("role"), str)
            and (rag is None or (isinstance(rag, list) and all(isinstance(p, str) for p in rag)))
        )

    if not isinstance(value, list | tuple) or not all(ok(t) for t in value):
        raise InputError(
            "variable 'deepeval_rag_turns' must be a list of {'content': str, 'role': str, 'retrieval_context': [str]} "
            "turns (give the row a conversation: --conversation FILE, or a messages column); fix the row"
        )
    return [dict(t) for t in value]


def windows(turns: list[dict[str, Any]], window_size: int = WINDOW_SIZE) -> list[list[dict[str, Any]]]:
    """DeepEval's windows: per unit interaction, it and up to `window_size - 1` units before it, flattened."""
    units = unit_interactions(turns)
    return [[t for u in units[max(0, i - window_size + 1) : i + 1] for t in u] for i in range(len(units))]


def window_parts(window: list[dict[str, Any]]) -> tuple[str, str, list[str]]:
    """A window's user text, assistant text and retrieval context, as both metrics accumulate them."""
    user, assistant = "", ""
    context: list[str] = []
    for t in window:
        if t["role"] == "user":
            user += f"\n{t['content']} "
        else:
            assistant += f"\n{t['content']}"
            context += t.get("retrieval_context") or []
    return user, assistant, context


def qag_fraction(verdicts: list[str], passing: tuple[str, ...], strict_mode: bool) -> float | int:
    """`score_qag_verdicts` (empty: 1; strict: 0 below the threshold 1), as DeepEval's own value."""
    if not verdicts:
        return 1
    score = sum(v in passing for v in verdicts) / len(verdicts)
    return 0 if strict_mode and score < 1 else score


class _StageError(Exception):
    """A call's output that did not parse (`error`), and the name of its stage."""

    def __init__(self, stage: str, error: ParseError):
        super().__init__(f"{stage}: {error}")
        self.stage, self.error = stage, error


def _parse(judge: Judge, fmts: list[OutputFormat], stage: int, gen: Generation) -> Any:
    try:
        return fmts[stage].value(fmts[stage].parse(gen.text))
    except ParseError as e:
        raise _StageError(judge.spec.stages[stage].name, e) from None


def _messages(judge: Judge, stage: int, raw: dict[str, Any], text: dict[str, str], fields: dict[str, Any]) -> list[Message]:
    return judge._messages(stage, raw, {**text, **{k: v if isinstance(v, str) else str(v) for k, v in fields.items()}})


def first_request(judge: Judge, cfg: DeepEvalConversation, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    """The first call: the first window's truths (faithfulness) or its first passage's verdicts (relevancy); the
    final reason's when there is nothing before it (its values then those of a score of 1 with no window)."""
    wins = windows(rag_turns(raw["deepeval_rag_turns"]))
    if cfg.metric == "turn_faithfulness" and wins:
        return _messages(judge, 0, raw, text, {"reference_context": "\n\n".join(window_parts(wins[0])[2])})
    for w in wins:
        user, _, context = window_parts(w)
        if context and cfg.metric == "turn_contextual_relevancy":
            return _messages(judge, 0, raw, text, {"user_content": user, "context": context[0]})
        if context:
            return _messages(judge, 0, raw, text, _node_fields(user, context))
    return _messages(judge, len(judge.spec.stages) - 1, raw, text, {"final_score": "1", "success": "True", "reasons": []})


def turn_rag_calls(ctx: CallContext[DeepEvalConversationSection]) -> Calls:
    """The metric's calls, window by window as DeepEval makes them, then the final reason."""
    judge, raw, text, gens, outputs = ctx.judge, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = ctx.section.deepeval_conversation
    fmts = judge.output_formats
    wins = windows(rag_turns(raw["deepeval_rag_turns"]))
    scores: list[float | int] = []
    reasons: list[str] = []
    done: list[dict[str, Any]] = []
    outputs["windows"] = done
    details = {**outputs, "strict_mode": cfg.strict_mode}
    try:
        for w in wins:
            step = WINDOW_STEPS[cfg.metric]
            window: dict[str, Any] = yield from step(ctx, fmts, w)
            done.append(window)
            scores.append(window["score"])
            reasons.append(window["reason"])
        if not scores:
            return ctx.scored(fmts[-1], 1.0, 1.0, NO_WINDOWS, outputs, details)
        total: float | int = 0
        for s in scores:
            total += s
        score = total / len(scores)
        fields = {"final_score": str(score), "success": str(score >= (1 if cfg.strict_mode else 0.5)), "reasons": reasons}
        gens += yield [(_messages(judge, len(fmts) - 1, raw, text, fields), fmts[-1])]
        reason = _parse(judge, fmts, len(fmts) - 1, gens[-1])["reason"]
    except _StageError as e:
        return ctx.parse_failed(e.stage, e.error)
    return ctx.scored(fmts[-1], score, score, reason, outputs, details)


def _faithful_window(
    ctx: CallContext[DeepEvalConversationSection], fmts: list[OutputFormat], window: list[dict[str, Any]]
) -> Calls:
    """One window of TurnFaithfulnessMetric: truths and claims, the verdicts, its reason."""
    judge, raw, text, gens = ctx.judge, ctx.raw, ctx.text, ctx.gens
    cfg = ctx.section.deepeval_conversation
    strict_mode = cfg.strict_mode
    user, assistant, context = window_parts(window)
    asks: list[tuple[Sequence[Message], OutputFormat]] = [
        (_messages(judge, 0, raw, text, {"reference_context": "\n\n".join(context)}), fmts[0]),
        (_messages(judge, 1, raw, text, {"user_content": user, "assistant_output": assistant}), fmts[1]),
    ]
    gens += yield asks
    truths = _parse(judge, fmts, 0, gens[-2])["truths"]
    claims = _parse(judge, fmts, 1, gens[-1])["claims"]
    verdicts: list[dict[str, Any]] = []
    if claims:
        gens += yield [(_messages(judge, 2, raw, text, {"claims": claims, "reference_context": "\n\n".join(truths)}), fmts[2])]
        verdicts = _parse(judge, fmts, 2, gens[-1])["verdicts"]
    out: dict[str, Any] = {"truths": truths, "claims": claims, "verdicts": verdicts}
    if not verdicts:
        return {**out, "score": 1.0, "reason": NO_CLAIMS}
    score = qag_fraction([v["verdict"] for v in verdicts], ("yes", "borderline"), strict_mode)
    fields = {"contradictions": [v.get("reason") for v in verdicts if v["verdict"] == "no"], "score": format(score, ".2f")}
    gens += yield [(_messages(judge, 3, raw, text, fields), fmts[3])]
    return {**out, "score": score, "reason": _parse(judge, fmts, 3, gens[-1])["reason"]}


def _relevancy_window(
    ctx: CallContext[DeepEvalConversationSection], fmts: list[OutputFormat], window: list[dict[str, Any]]
) -> Calls:
    """One window of TurnContextualRelevancyMetric: a verdicts call per passage, its reason."""
    judge, raw, text, gens = ctx.judge, ctx.raw, ctx.text, ctx.gens
    cfg = ctx.section.deepeval_conversation
    strict_mode = cfg.strict_mode
    user, _, context = window_parts(window)
    verdicts: list[dict[str, Any]] = []
    if context:
        gens += yield [(_messages(judge, 0, raw, text, {"user_content": user, "context": c}), fmts[0]) for c in context]
        for g in gens[-len(context) :]:
            verdicts += _parse(judge, fmts, 0, g)["verdicts"]
    if not verdicts:
        return {"verdicts": verdicts, "score": 1, "reason": NO_CONTEXT}
    score = qag_fraction([v["verdict"] for v in verdicts], ("yes",), strict_mode)
    fields = {
        "user_content": user,
        "irrelevant_statements": [f"{v['statement']}: {v.get('reason')}" for v in verdicts if v["verdict"] != "yes"],
        "relevant_statements": [v["statement"] for v in verdicts if v["verdict"] == "yes"],
        "score": format(score, ".2f"),
    }
    gens += yield [(_messages(judge, 1, raw, text, fields), fmts[1])]
    return {"verdicts": verdicts, "score": score, "reason": _parse(judge, fmts, 1, gens[-1])["reason"]}


class _Verdict(str):
    """A verdict as DeepEval's reason prompt prints it: its `Verdict` enum member's repr inside the dict."""

    def __repr__(self) -> str:
        return f"<Verdict.{self.upper()}: {str.__repr__(self)}>"


def _node_fields(user: str, context: list[str]) -> dict[str, Any]:
    """The verdict call's values (precision's `input` and document count; recall ignores those two)."""
    count = f" ({len(context)} document{'s' if len(context) > 1 else ''})"
    return {"user_content": user, "document_count_str": count, "context_to_display": context}


def weighted_precision(verdicts: list[str], strict_mode: bool) -> float | int:
    """TurnContextualPrecision's `_calculate_interaction_score`: the mean over the useful ("yes") passages of the
    precision at their rank; 0 without verdicts or without a useful one; under `strict_mode` 0 when below 1."""
    relevant, total = 0, 0.0
    for k, v in enumerate(verdicts, start=1):
        if v == "yes":
            relevant += 1
            total += relevant / k
    if not relevant:
        return 0
    score = total / relevant
    return 0 if strict_mode and score < 1 else score


def _node_window(ctx: CallContext[DeepEvalConversationSection], fmts: list[OutputFormat], window: list[dict[str, Any]]) -> Calls:
    """One window of TurnContextualPrecisionMetric / TurnContextualRecallMetric: one verdicts call on the window's
    passages (none without one), its reason given the score."""
    judge, raw, text, gens = ctx.judge, ctx.raw, ctx.text, ctx.gens
    cfg = ctx.section.deepeval_conversation
    strict_mode = cfg.strict_mode
    precision = cfg.metric == "turn_contextual_precision"
    user, _, context = window_parts(window)
    verdicts: list[dict[str, Any]] = []
    if context:
        gens += yield [(_messages(judge, 0, raw, text, _node_fields(user, context)), fmts[0])]
        verdicts = _parse(judge, fmts, 0, gens[-1])["verdicts"]
    if not verdicts:
        return {"verdicts": verdicts, "score": 1, "reason": NO_NODES.format(cfg.metric.rsplit("_", 1)[1])}
    said = [v["verdict"] for v in verdicts]
    score = weighted_precision(said, strict_mode) if precision else qag_fraction(said, ("yes",), strict_mode)
    fields: dict[str, Any] = {"score": format(score, ".2f")}
    if precision:
        fields["user_content"] = user
        fields["verdicts"] = [
            {"verdict": _Verdict(v["verdict"]), "reason": v["reason"], "node": f"Node {i + 1}"} for i, v in enumerate(verdicts)
        ]
    else:
        fields["supportive_reasons"] = [v["reason"] for v in verdicts if v["verdict"] == "yes"]
        fields["unsupportive_reasons"] = [v["reason"] for v in verdicts if v["verdict"] != "yes"]
    gens += yield [(_messages(judge, 1, raw, text, fields), fmts[1])]
    reason = _parse(judge, fmts, 1, gens[-1])["reason"]
    return {"verdicts": verdicts, "score": 0 if strict_mode and score < 1 else score, "reason": reason}


# metric -> its window's calls
WINDOW_STEPS = {
    "turn_faithfulness": _faithful_window,
    "turn_contextual_relevancy": _relevancy_window,
    "turn_contextual_precision": _node_window,
    "turn_contextual_recall": _node_window,
}
