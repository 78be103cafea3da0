"""How a judge's calls run, one program per call shape (`kinds.KindTraits.calls`), looked up in `PROGRAMS`:
`Judge.requests` and `Judge._calls` never branch on a kind.

A program is two functions of the judge and one row's values: `calls`, the generator of the row's calls (given the
row's `context.CallContext`, it yields lists of (messages, format) requests, receives their generations, returns the
`JudgeResult`), and `first`, the messages known before any output (what `Judge.requests` returns and the judge's
fingerprint hashes, so it must not change for a kind whose cache keys exist). A plugin adds a call shape with
`register_program`.

A program that reads its kind's keys declares the section type it reads (sections.py): `_stages`, `_first_request`,
`_typed` and `CallContext.typed` hand it the judge's section as that type, checked once, so its keys are never None
in it.

The several-call programs live in their own modules (ragas_agent.py, deepeval_*.py); `_stages` and `_first_request`
make programs of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..engine.base import Calls, Message
from ..errors import InputError
from . import deepeval_agentic, deepeval_conversation, deepeval_geval, ragas_agent
from .context import CallContext, ProgramJudge
from .context import Judge as StageJudge
from .sections import (
    DeepEvalAgenticSection,
    DeepEvalConversationSection,
    DeepEvalGEvalSection,
    KindSection,
    PerItemSection,
    RagasAgentSection,
    Section,
    ToolCallMatchSection,
    typed_section,
)
from .toolmatch import match_score, mlflow_exact_match

Values = dict[str, Any]
Texts = dict[str, str]
S = TypeVar("S", bound=Section)
FirstFn = Callable[[ProgramJudge, Values, Texts], list[list[Message]]]
CallsFn = Callable[[CallContext[KindSection]], Calls]


@dataclass(frozen=True)
class Program:
    """One call shape: its calls, its up-front messages, and whether `Judge.format` is the format of its calls
    (False for two_stage, whose verdict format depends on the first call's statements)."""

    calls: CallsFn
    first: FirstFn
    one_format: bool = True


# ------------------------------------------------------------------------------------------- one call


def _one_first(judge: ProgramJudge, raw: Values, text: Texts) -> list[list[Message]]:
    return [judge._messages(0, raw, text)]


def _one_calls(ctx: CallContext[KindSection]) -> Calls:
    """One call under the judge's format (`--fast`: its verdict-only variant); probabilities and alignment after."""
    judge, options, gens = ctx.judge, ctx.options, ctx.gens
    fmt = judge._plan.formats[0]
    assert fmt is not None
    if options is not None and options.fast:  # verdict only: no rationale to decode
        fmt = fmt.fast() or fmt
    gens += yield [(ctx.messages(0), fmt)]
    res = judge._single(gens, fmt, ctx.raw)
    if options is not None and options.probs and res.scored and gens[0].choice_steps is not None:
        res.expected_score = fmt.expected_score(gens[0].choice_steps)
    if judge.spec.alignment is not None:
        res = judge._aligned(res, fmt)
    return res


def _typed(judge: ProgramJudge, want: type[S]) -> S:
    """The judge's section as the type `want` its program reads (a kind whose traits name a program of another
    kind's section is a programming error, named)."""
    return typed_section(judge.section, want, judge.spec.kind)


def _matched_calls(ctx: CallContext[KindSection]) -> Calls:
    """No call: the judge computes its score itself (tool_call_match, judges/toolmatch.py; `traits.needs_model` is
    False)."""
    judge, raw = ctx.judge, ctx.raw
    sec = ctx.typed(ToolCallMatchSection).section
    fmt = judge._plan.formats[0]
    if sec.match == "mlflow_exact":  # the whole call list at once (a session row's `tool_calls`)
        yes = mlflow_exact_match(raw["tool_calls"], raw["expected_tool_calls"], ordered=sec.match_ordered)
        details = {"match": "mlflow_exact", "ordered": sec.match_ordered, "mlflow_value": "yes" if yes else "no"}
        return ctx.scored(fmt, float(yes), float(yes), None, None, details)
    index = raw["tool_call_index"]
    if isinstance(index, bool) or not isinstance(index, int | str) or not str(index).isdigit():
        raise InputError(f"judge '{judge.spec.name}': variable 'tool_call_index' must be a non-negative integer, got {index!r}")
    score = match_score(sec.match, raw["tool_call"], int(index), raw["expected_tool_calls"])
    details = {"match": sec.match, "tool_call_index": int(index)}
    return ctx.scored(fmt, score, score, None, None, details)
    yield  # a generator that yields nothing


# ------------------------------------------------------------------------------------------ per item


def _per_item_first(judge: ProgramJudge, raw: Values, text: Texts) -> list[list[Message]]:
    return [judge._messages(0, raw, t) for _, t in judge._item_texts(raw, text)]


def _per_item_calls(ctx: CallContext[KindSection]) -> Calls:
    """One call per item of the item variable, side by side."""
    judge, raw, gens = ctx.judge, ctx.raw, ctx.gens
    items = judge._item_texts(raw, ctx.text)
    fmt = judge._plan.formats[0]
    assert fmt is not None
    gens += yield [(judge._messages(0, raw, t), fmt) for _, t in items]
    return judge._per_item(gens, fmt, isinstance(raw.get(ctx.typed(PerItemSection).section.item_variable), list | tuple))


# ---------------------------------------------------------------------------------------- two stages


def _two_stage_calls(ctx: CallContext[KindSection]) -> Calls:
    """Statements, then one verdict per statement (`Judge._two_stage`)."""
    return (yield from ctx.judge._two_stage(ctx))


# ------------------------------------------------------------------------------------ several calls


def _stages(section: type[S], calls: Callable[[CallContext[S]], Calls]) -> CallsFn:
    """A several-call module's generator (it takes the context with its kind's section typed) as a program's
    `calls`."""

    def program_calls(ctx: CallContext[KindSection]) -> Calls:
        return (yield from calls(ctx.typed(section)))

    return program_calls


def _first_request(section: type[S], first_request: Callable[[StageJudge, S, Values, Texts], list[Message]]) -> FirstFn:
    """A several-call module's one up-front request (given its kind's section, typed) as a program's `first`."""
    return lambda judge, raw, text: [first_request(judge, _typed(judge, section), raw, text)]


PROGRAMS: dict[str, Program] = {
    "one": Program(_one_calls, _one_first),
    "none": Program(_matched_calls, _one_first),
    "per_item": Program(_per_item_calls, _per_item_first),
    "two_stage": Program(_two_stage_calls, _one_first, one_format=False),
    "ragas_agent": Program(
        _stages(RagasAgentSection, ragas_agent.agent_calls), _first_request(RagasAgentSection, ragas_agent.first_request)
    ),
    "deepeval_agentic": Program(_stages(DeepEvalAgenticSection, deepeval_agentic.agentic_calls), _one_first),
    "deepeval_conversation": Program(
        _stages(DeepEvalConversationSection, deepeval_conversation.conversation_calls),
        _first_request(DeepEvalConversationSection, deepeval_conversation.first_request),
    ),
    "deepeval_geval": Program(
        _stages(DeepEvalGEvalSection, deepeval_geval.geval_calls),
        _first_request(DeepEvalGEvalSection, deepeval_geval.first_request),
    ),
}


def register_program(shape: str, program: Program) -> None:
    """Add (or replace) the program of call shape `shape`; a kind whose traits name `shape` runs it."""
    PROGRAMS[shape] = program


def program_of(shape: str) -> Program:
    """The program of call shape `shape`; a shape with none is a programming error, named."""
    try:
        return PROGRAMS[shape]
    except KeyError:
        raise KeyError(f"no program for call shape {shape!r}; known: {', '.join(sorted(PROGRAMS))}") from None
