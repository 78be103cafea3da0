"""The chained calls of DeepEval 4.3.1's conversational metrics (kind `deepeval_conversation`), and their arithmetic
as DeepEval computes it.

* knowledge retention (`KnowledgeRetentionMetric`, deepeval/metrics/knowledge_retention/): stage 0 extracts, for
  each user turn, the facts it states (`Knowledge`, given the turns before it); stage 1 asks, for each assistant
  turn after which some knowledge is known, whether it forgets or contradicts the facts of the user turns before it
  (`KnowledgeRetentionVerdict`); stage 2 writes the reason from the "yes" verdicts' reasons and the score. Score =
  the fraction of "no" verdicts (1 when there are none), 0 under `strict_mode` when below 1
  (`score_qag_verdicts(passing=(NO,))`).
* conversation completeness (`ConversationCompletenessMetric`, deepeval/metrics/conversation_completeness/): stage 0
  extracts the user's intentions from the whole conversation (`UserIntentions`), stage 1 asks, once per intention,
  whether the assistant satisfied it (`ConversationCompletenessVerdict`), stage 2 writes the reason from the score
  (as Python prints DeepEval's: `1` when there are no intentions), the intentions and the "no" verdicts' reasons.
  Score = the fraction of "yes" verdicts (1 when there are none), 0 under `strict_mode` when below 1.
* role adherence (`RoleAdherenceMetric`, deepeval/metrics/role_adherence/): stage 0 lists the out-of-character
  assistant turns given the `chatbot_role` (`OutOfCharacterResponseVerdicts`, each turn's `ai_message` then set to
  its content and `(turn #n)` as DeepEval does), stage 1 writes the reason. Score = (assistant turns - min(listed,
  assistant turns)) / assistant turns (1 with no assistant turn), 0 under `strict_mode` when below 1.

The turns are DeepEval's: the judge's `deepeval_turns` value (the Python list of `{'content', 'role'}` dicts that
`conversations.render.deepeval_turns_text` prints). Each placeholder of a stage's prompt is filled as DeepEval's
Jinja template fills it: a string as itself, a list as Python's `str(list)`. A call whose output does not parse
makes the result unscored (`parse_error`, naming the stage); the calls made so far are kept on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.base import Calls, Generation, Message
from ..errors import ParseError
from ..formats import OutputFormat
from .context import CallContext, Judge
from .deepeval_goal_accuracy import FILLS as GOAL_ACCURACY_FILLS
from .deepeval_goal_accuracy import first_request as goal_accuracy_first_request
from .deepeval_goal_accuracy import goal_accuracy_calls
from .deepeval_topic_adherence import FILLS as TOPIC_FILLS
from .deepeval_topic_adherence import first_request as topic_first_request
from .deepeval_topic_adherence import topic_adherence_calls
from .deepeval_turn_rag import FILLS as RAG_FILLS
from .deepeval_turn_rag import first_request as rag_first_request
from .deepeval_turn_rag import turn_rag_calls
from .deepeval_values import deepeval_turns  # the turns value as turn dicts (kept importable here)
from .sections import DeepEvalConversation, DeepEvalConversationSection

RAG_METRICS = (
    "turn_faithfulness",
    "turn_contextual_relevancy",
    "turn_contextual_precision",
    "turn_contextual_recall",
)  # judges/deepeval_turn_rag.py


def qag_score(verdicts: list[str], passing: str, strict_mode: bool) -> float:
    """`score_qag_verdicts`: the fraction of verdicts equal to `passing`, 1 when there are none, and under
    `strict_mode` (DeepEval's threshold then 1) 0 when below 1."""
    if not verdicts:
        return 1.0
    score = sum(v == passing for v in verdicts) / len(verdicts)
    return 0.0 if strict_mode and score < 1 else score


def _messages(judge: Judge, stage: int, raw: dict[str, Any], text: dict[str, str], fields: dict[str, Any]) -> list[Message]:
    return judge._messages(stage, raw, {**text, **{k: v if isinstance(v, str) else str(v) for k, v in fields.items()}})


def extract_requests(judge: Judge, raw: dict[str, Any], text: dict[str, str]) -> list[tuple[int, list[Message]]]:
    """Stage 0's calls: (turn index, messages) for each user turn, given the turns before it."""
    turns = deepeval_turns(raw["deepeval_turns"])
    return [
        (i, _messages(judge, 0, raw, text, {"previous_turns": turns[:i], "user_message": t["content"]}))
        for i, t in enumerate(turns)
        if t["role"] != "assistant"
    ]


def _retention_first(judge: Judge, cfg: DeepEvalConversation, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    """Knowledge retention's first call: its first user turn's extraction (the reason's, when there is no user turn)."""
    asks = extract_requests(judge, raw, text)
    if asks:
        return asks[0][1]
    return _messages(judge, 2, raw, text, {"attritions": [], "score": format(1, ".2f")})


def _turns_first(judge: Judge, cfg: DeepEvalConversation, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    """The first call of a metric that reads the whole conversation first (completeness, role adherence)."""
    return _messages(judge, 0, raw, text, {"turns": deepeval_turns(raw["deepeval_turns"])})


def _topic_first(judge: Judge, cfg: DeepEvalConversation, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    return topic_first_request(judge, raw, text, deepeval_turns(raw["deepeval_turns"]))


def _knowledge_retention(ctx: CallContext[DeepEvalConversationSection]) -> Calls:
    """KnowledgeRetentionMetric's calls: the knowledge of each user turn, a verdict per assistant turn after known
    knowledge, the reason."""
    judge, raw, text, gens, outputs = ctx.judge, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = ctx.section.deepeval_conversation
    fmts = judge.output_formats

    def parsed(stage: int, gen: Generation) -> Any:
        return fmts[stage].value(fmts[stage].parse(gen.text))

    turns = deepeval_turns(raw["deepeval_turns"])
    extracts = extract_requests(judge, raw, text)
    knowledges: list[Any] = [None] * len(turns)
    if extracts:
        gens += yield [(m, fmts[0]) for _, m in extracts]
        for (i, _), g in zip(extracts, gens[-len(extracts) :], strict=True):
            knowledges[i] = parsed(0, g).get("data")
    outputs["knowledges"] = knowledges
    asks: list[tuple[Sequence[Message], OutputFormat]] = []
    for i, t in enumerate(turns):
        known = [k for k in knowledges[:i] if k]
        if t["role"] == "assistant" and known:
            fields = {"llm_message": t["content"], "accumulated_knowledge": known}
            asks.append((_messages(judge, 1, raw, text, fields), fmts[1]))
    verdicts: list[dict[str, Any]] = []
    if asks:
        gens += yield asks
        verdicts = [parsed(1, g) for g in gens[-len(asks) :]]
    outputs["verdicts"] = verdicts
    score = qag_score([v["verdict"] for v in verdicts], "no", cfg.strict_mode)
    attritions = [v.get("reason") for v in verdicts if v["verdict"] == "yes"]
    fields = {"attritions": attritions, "score": format(score, ".2f")}
    gens += yield [(_messages(judge, 2, raw, text, fields), fmts[2])]
    reason = parsed(2, gens[-1])["reason"]
    details = {**outputs, "strict_mode": cfg.strict_mode}
    return ctx.scored(fmts[2], score, score, reason, outputs, details)


def first_request(judge: Judge, sec: DeepEvalConversationSection, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    """The first call's messages of the judge's metric (`METRICS`): what its fingerprint hashes."""
    cfg = sec.deepeval_conversation
    return METRICS[cfg.metric].first(judge, cfg, raw, text)


def conversation_calls(ctx: CallContext[DeepEvalConversationSection]) -> Calls:
    """The metric's calls as a generator (see `Judge._calls`): yields requests, returns the `JudgeResult`. A call
    whose output does not parse makes it unscored, naming the stage (the RAG metrics name theirs themselves)."""
    sec = ctx.section
    metric = METRICS[sec.deepeval_conversation.metric]
    if metric.names_stage:
        return (yield from metric.calls(ctx))
    try:
        return (yield from metric.calls(ctx))
    except ParseError as e:
        return ctx.parse_failed(sec.stages[min(len(ctx.outputs), len(sec.stages) - 1)].name, e)


def _completeness(ctx: CallContext[DeepEvalConversationSection]) -> Calls:
    """ConversationCompletenessMetric's calls: intentions, a verdict per intention, the reason."""
    judge, raw, text, gens, outputs = ctx.judge, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = ctx.section.deepeval_conversation
    fmts = judge.output_formats
    turns = deepeval_turns(raw["deepeval_turns"])
    gens += yield [(_messages(judge, 0, raw, text, {"turns": turns}), fmts[0])]
    intentions = outputs["intentions"] = fmts[0].value(fmts[0].parse(gens[-1].text))["intentions"]
    asks: list[tuple[Sequence[Message], OutputFormat]] = [
        (_messages(judge, 1, raw, text, {"turns": turns, "intention": i}), fmts[1]) for i in intentions
    ]
    verdicts: list[dict[str, Any]] = []
    if asks:
        gens += yield asks
        verdicts = [fmts[1].value(fmts[1].parse(g.text)) for g in gens[-len(asks) :]]
    outputs["verdicts"] = verdicts
    score = qag_score([v["verdict"] for v in verdicts], "yes", cfg.strict_mode)
    # the score as Python prints DeepEval's own value: int 1 with no verdicts, int 0 when strict mode clamps it
    clamped = bool(verdicts) and cfg.strict_mode and score == 0
    shown: float | int = int(score) if not verdicts or clamped else score
    fields = {
        "score": str(shown),
        "intentions": intentions,
        "incompletenesses": [v.get("reason") for v in verdicts if v["verdict"] == "no"],
    }
    gens += yield [(_messages(judge, 2, raw, text, fields), fmts[2])]
    reason = fmts[2].value(fmts[2].parse(gens[-1].text))["reason"]
    details = {**outputs, "strict_mode": cfg.strict_mode}
    return ctx.scored(fmts[2], score, score, reason, outputs, details)


def _role_adherence(ctx: CallContext[DeepEvalConversationSection]) -> Calls:
    """RoleAdherenceMetric's calls: the out-of-character verdicts, the reason."""
    judge, raw, text, gens, outputs = ctx.judge, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = ctx.section.deepeval_conversation
    fmts = judge.output_formats
    turns = deepeval_turns(raw["deepeval_turns"])
    gens += yield [(_messages(judge, 0, raw, text, {"turns": turns}), fmts[0])]
    verdicts = outputs["verdicts"] = fmts[0].value(fmts[0].parse(gens[-1].text))["verdicts"]
    for v in verdicts:  # DeepEval's: a turn the index names (Python's indexing) gives the message shown
        if -len(turns) <= v["index"] < len(turns):
            v["ai_message"] = f"{turns[v['index']]['content']} (turn #{v['index'] + 1})"
    assistant = sum(t["role"] == "assistant" for t in turns)
    shown: float | int = 1 if assistant == 0 else (assistant - min(len(verdicts), assistant)) / assistant
    if cfg.strict_mode and shown < 1:
        shown = 0
    score = float(shown)
    fields = {"score": str(shown), "out_of_character_responses": [v.get("ai_message") for v in verdicts]}
    gens += yield [(_messages(judge, 1, raw, text, fields), fmts[1])]
    reason = fmts[1].value(fmts[1].parse(gens[-1].text))["reason"]
    details = {**outputs, "strict_mode": cfg.strict_mode}
    return ctx.scored(fmts[1], score, score, reason, outputs, details)


FirstFn = Callable[[Judge, DeepEvalConversation, dict[str, Any], dict[str, str]], list[Message]]
CallsFn = Callable[[CallContext[DeepEvalConversationSection]], Calls]


@dataclass(frozen=True)
class Metric:
    """One DeepEval conversational metric: its first call's messages (known before any output: the fingerprint's),
    its calls (the context's `outputs` collects what each stage parsed), the placeholders its calls fill themselves
    (DeepEval's template variables, computed between calls: `fills`), and whether its calls name a failing stage
    themselves."""

    first: FirstFn
    calls: CallsFn
    fills: tuple[str, ...]
    names_stage: bool = False


METRICS: dict[str, Metric] = {
    "knowledge_retention": Metric(
        _retention_first,
        _knowledge_retention,
        ("previous_turns", "user_message", "llm_message", "accumulated_knowledge", "attritions", "score"),
    ),
    "conversation_completeness": Metric(
        _turns_first, _completeness, ("turns", "intention", "score", "intentions", "incompletenesses")
    ),
    "role_adherence": Metric(_turns_first, _role_adherence, ("turns", "score", "out_of_character_responses")),
    "topic_adherence": Metric(_topic_first, topic_adherence_calls, TOPIC_FILLS),
    "goal_accuracy": Metric(goal_accuracy_first_request, goal_accuracy_calls, GOAL_ACCURACY_FILLS),
    # they read the turns with their retrieval contexts, and name a failing stage themselves
    **{m: Metric(rag_first_request, turn_rag_calls, RAG_FILLS, names_stage=True) for m in RAG_METRICS},
}
# the placeholders a judge of the kind may leave to its program (each metric's `fills`: a judge file's templates are
# checked against them with its declared variables when it loads)
FILLS = frozenset(name for m in METRICS.values() for name in m.fills)
