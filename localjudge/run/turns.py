"""Per-turn (and per-tool-call) results aggregated to their conversation, and whether a run's judges take a conversation.

The rule (docs/conversations.md): for each judge and conversation, over its per-turn results that are scored,
`mean` is the mean score, `min` the lowest score (the conversation is as good as its worst turn), and
`pass_fraction` the share of turns that pass (of those with a pass/fail); `turns` counts every per-turn result,
`scored` those scored. A conversation with no scored turn has None for all three. Per-tool-call results
(`--granularity tool_call`) aggregate by the same rule, each call counting as a turn. Session-level results (one per
conversation) are not aggregated: they are already per conversation.

Per-turn rows of one conversation come one after another in turn order (conversations/dataset.py), each prompt
holding the one before it up to its closing text, so the engine's KV prefix cache (engine/llama_scheduler.py)
evaluates only what a turn adds; `kv_reuse` totals what the per-turn prompts took and how much of it came from that
cache, and the run records it beside the aggregation (`meta["conversations"]["prompt_tokens"]`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..conversations.dataset import CONVERSATION_ONLY, ConversationDataset, route_columns
from ..datasets import Row, extract
from ..engine.base import DecodeOptions, Engine
from ..judges.protocol import JudgeProtocol
from ..store.results import ResultRow
from .plan import JudgePlan

RULE = "per judge and conversation, over scored per-turn results: mean score, min score, fraction of turns passing"


def takes_conversation(judges: Sequence[str | JudgeProtocol], judges_dir: str | None) -> bool:
    """Whether any judge takes a variable only a conversation row has (`conversations.dataset.CONVERSATION_ONLY`:
    `conversation`, or the conversation as DeepEval's or RAGAS's templates print it); catalog names are looked up,
    an unknown name is left to the run's planning to report."""
    from ..errors import InputError
    from ..judges import get_judge

    for given in judges:
        try:
            j = get_judge(given, judges_dir=judges_dir) if isinstance(given, str) else given
        except InputError:
            continue
        if any(v.name in CONVERSATION_ONLY for v in j.variables):
            return True
    return False


def bind_plans(
    ds: ConversationDataset,
    plans: Sequence[JudgePlan],
    engine: Callable[[], Engine] | None = None,
    opts: DecodeOptions | None = None,
) -> None:
    """Tie a conversation dataset to the plans that read it, in one step: each plan's columns routed to what its judge
    reads of a conversation (`route_columns`), the dataset told which columns they read (a row builds only those),
    and, with `truncate` and an `engine` to load, what fits the model's context (`context_fit`)."""
    for p in plans:
        p.columns = route_columns(p.judge.variables, p.columns)
    ds.needs = frozenset(c.column for p in plans for c in p.columns.values())
    if engine is not None and ds.options.truncate:  # measuring what fits needs the model's tokenizer: it loads now
        ds.fits = context_fit(plans, engine(), opts or DecodeOptions())


def context_fit(plans: Sequence[JudgePlan], engine: Engine, opts: DecodeOptions) -> Callable[[dict[str, Any]], bool]:
    """Whether a conversation row's values fit `engine`'s context for every judge: each judge's prompt in tokens (the
    model's chat template) plus its output budget (`max_tokens`, else its format's) within `n_ctx`, as the engine
    checks before decoding (think tokens are not counted)."""

    def fits(values: dict[str, Any]) -> bool:
        row = Row(0, "conversation", values)
        for p in plans:
            vals, problem = extract(row, p.columns, p.required, p.allow_empty)
            if problem is not None:
                continue
            budget = opts.max_tokens or max((f.max_tokens() for f in p.judge.output_formats), default=0)
            if engine.count_tokens(p.judge.render(**vals)) + budget > engine.n_ctx:
                return False
        return True

    return fits


def _stats(rows: list[ResultRow]) -> dict[str, Any]:
    scores = [r.result.score for r in rows if r.result.scored and r.result.score is not None]
    passes = [r.result.passed for r in rows if r.result.scored and r.result.passed is not None]
    return {
        "turns": len(rows),
        "scored": sum(r.result.scored for r in rows),
        "mean": sum(scores) / len(scores) if scores else None,
        "min": min(scores) if scores else None,
        "pass_fraction": sum(passes) / len(passes) if passes else None,
    }


def kv_reuse(rows: Iterable[ResultRow]) -> dict[str, int]:
    """`{"total", "cached", "evaluated"}`: the prompt tokens of `rows`' judgements, those the engine took from its KV
    cache (a shared prefix it did not evaluate again) and those it evaluated (`total - cached`); an engine without a
    prefix cache reports none cached."""
    total = cached = 0
    for r in rows:
        total += r.result.usage.prompt_tokens
        cached += r.result.usage.cached_prompt_tokens
    return {"total": total, "cached": cached, "evaluated": total - cached}


def per_conversation(results: Iterable[ResultRow]) -> dict[str, Any]:
    """`{"rule": RULE, "judges": {judge: {conversation_id: {turns, scored, mean, min, pass_fraction}}}, "prompt_tokens":
    kv_reuse(...)}` over the per-turn and per-tool-call results (`turn_index` or `tool_call_index` set); `{}` when there
    are none (a session-level run)."""
    groups: dict[str, dict[str, list[ResultRow]]] = {}
    for r in results:
        if r.turn_index is None and r.tool_call_index is None or r.conversation_id is None:
            continue
        groups.setdefault(r.judge, {}).setdefault(r.conversation_id, []).append(r)
    if not groups:
        return {}
    return {
        "rule": RULE,
        "judges": {j: {c: _stats(rows) for c, rows in convs.items()} for j, convs in groups.items()},
        "prompt_tokens": kv_reuse(r for convs in groups.values() for rows in convs.values() for r in rows),
    }


def conversation_lines(agg: dict[str, Any]) -> list[str]:
    """The aggregation as lines for the command line's summary: one per judge and conversation."""
    if not agg:
        return []
    lines = ["Per conversation (per-turn results: mean score, min score, fraction of turns passing):"]
    for judge, convs in agg["judges"].items():
        for cid, s in convs.items():
            fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
            lines.append(
                f"  {judge} {cid}: {s['scored']}/{s['turns']} turns scored, mean {fmt(s['mean'])}, min {fmt(s['min'])}, "
                f"passing {fmt(s['pass_fraction'])}"
            )
    kv = agg.get("prompt_tokens")  # absent from a run recorded before it was
    if kv and kv["cached"]:
        lines.append(
            f"  prompt tokens: {kv['total']}, {kv['cached']} of them reused from the KV cache (history shared turn to turn), "
            f"{kv['evaluated']} evaluated"
        )
    return lines
