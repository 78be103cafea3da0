"""DeepEval 4.3.1's ConversationalGEval (deepeval/metrics/conversational_g_eval/) as a judge kind, `deepeval_geval`:
a judge file (or `make_conversational_geval_judge`) gives the criteria, and this module makes the calls the metric's
`measure()` makes with `async_mode=False` on a model without `generate_raw_response` (no logprobs).

Stage 0 (only without `evaluation_steps`) turns `criteria` into steps (`Steps`); stage 1 scores the conversation
(`ReasonScore`) from the numbered steps (`1. step\\n` each), the optional rubric (`start-end: outcome` per band,
sorted by start; `start: outcome` for a one-score band), the turns as DeepEval's `convert_turn_to_dict` gives them
(the turn fields among `evaluation_params`, in their order, printed as Python's `str(list)`;
`retrieval_context` and `tools_called` read by deepeval_geval_turns.py) and the
conversation-level fields (`Scenario:\\n{value} \\n\\n` ...). Score = the model's 0-10 score / 10 (kept in [0, 1]),
0 under `strict_mode` when below 1. The prompt texts are DeepEval's own (templates/deepeval_geval.toml, written by
scripts/catalog/make_deepeval_geval_templates.py). A call whose output does not parse makes the result unscored
(`parse_error`, naming the stage); the calls made so far are kept on it.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Any

from ..engine.base import Calls, Message
from ..errors import ParseError
from .context import CallContext, Judge
from .deepeval_geval_turns import TURN_TEXTS, merged_turns, turn_sources
from .sections import DeepEvalGEval, DeepEvalGEvalSection, GEvalParam
from .spec import Variable

# DeepEval's CONVERSATIONAL_G_EVAL_PARAMS labels, for the params localjudge supports
LABELS: dict[str, str] = {
    "content": "Content",
    "role": "Role",
    "expected_outcome": "Expected Outcome",
    "scenario": "Scenario",
    "retrieval_context": "Retrieval Context",
    "tools_called": "Tools Called",
}
TURN_FIELDS: tuple[GEvalParam, ...] = ("content", "role")
# the params `convert_turn_to_dict` prints per turn (the rest are conversation-level)
PER_TURN: tuple[GEvalParam, ...] = ("content", "role", "retrieval_context", "tools_called")
# the row value each extra turn field is read from (its turns also give content and role)
TURN_SOURCES: dict[GEvalParam, str] = {"retrieval_context": "deepeval_rag_turns", "tools_called": "deepeval_tool_turns"}
# the placeholders its calls fill (DeepEval's template variables)
FILLS = ("criteria", "parameters", "evaluation_steps", "test_case_content", "turns", "rubric")
STAGES = ("generate_evaluation_steps", "generate_evaluation_results")


@functools.cache
def texts() -> dict[str, str]:
    """DeepEval's ConversationalGEval texts and schemas (templates/deepeval_geval.toml)."""
    path = resources.files("localjudge.judges").joinpath("templates/deepeval_geval.toml")
    return tomllib.loads(path.read_text("utf-8"))


def params(cfg: DeepEvalGEval) -> list[GEvalParam]:
    """`evaluation_params` as DeepEval keeps them: `content` then `role` appended when missing."""
    out = list(cfg.evaluation_params)
    out += [p for p in TURN_FIELDS if p not in out]
    return out


def params_text(names: list[GEvalParam]) -> str:
    """`construct_conversational_g_eval_turn_params_string`: `A`, `A and B`, or `A, B, and C`."""
    labels = [LABELS[n] for n in names]
    if len(labels) <= 2:
        return " and ".join(labels)
    return ", ".join(labels[:-1]) + ", and " + labels[-1]


def numbered(steps: list[str]) -> str:
    """`number_evaluation_steps`."""
    return "".join(f"{i}. {s}\n" for i, s in enumerate(steps, start=1))


def rubric_text(cfg: DeepEvalGEval) -> str:
    """`format_rubrics` of the rubric sorted by its bands' starts (`validate_and_sort_rubrics`)."""
    bands = sorted(cfg.rubric, key=lambda r: r.score_range[0])
    return "\n".join(
        f"{r.score_range[0]}: {r.expected_outcome}"
        if r.score_range[0] == r.score_range[1]
        else f"{r.score_range[0]}-{r.score_range[1]}: {r.expected_outcome}"
        for r in bands
    )


def plan_parts(cfg: DeepEvalGEval) -> tuple[list[Variable], list[str], list[str]]:
    """The kind's plan (built by `builders`, which imports this module lazily): its variables (`deepeval_turns`,
    and one per conversation-level param), DeepEval's two prompts (the results prompt's rubric variant when a
    rubric is given) and their output schemas."""
    t = texts()
    variables = [Variable(name=v, description=TURN_TEXTS[v]) for v in turn_sources(cfg)]
    variables += [
        Variable(name=p, description=f"the conversation's {LABELS[p].lower()} (DeepEval's ConversationalTestCase.{p})")
        for p in params(cfg)
        if p not in PER_TURN
    ]
    results = t["generate_evaluation_results_rubric" if cfg.rubric else "generate_evaluation_results"]
    return variables, [t["generate_evaluation_steps"], results], [t["steps_schema"], t["reason_score_schema"]]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def conversation_level(cfg: DeepEvalGEval, raw: dict[str, Any]) -> str:
    """`construct_non_turns_test_case_string`: the conversation-level params' values, '' when none."""
    body = "".join(f"{LABELS[p]}:\n{_text(raw[p])} \n\n" for p in params(cfg) if p not in PER_TURN)
    return f"Conversation-level fields:\n{body}" if body else ""


def turn_dicts(cfg: DeepEvalGEval, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """`convert_turn_to_dict` of each turn: the turn fields among the params, in their order, a turn's
    `retrieval_context` / `tools_called` only when it has one (DeepEval leaves out a None field)."""
    fields = [p for p in params(cfg) if p in PER_TURN]
    return [{f: t[f] for f in fields if f in t} for t in merged_turns(cfg, raw)]


def _steps_messages(judge: Judge, cfg: DeepEvalGEval, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    return judge._messages(0, raw, {**text, "criteria": cfg.criteria or "", "parameters": params_text(params(cfg))})


def _results_messages(
    judge: Judge, cfg: DeepEvalGEval, raw: dict[str, Any], text: dict[str, str], steps: list[str]
) -> list[Message]:
    fields = {
        "evaluation_steps": numbered(steps),
        "test_case_content": conversation_level(cfg, raw),
        "turns": str(turn_dicts(cfg, raw)),
        "parameters": params_text(params(cfg)),
        "rubric": rubric_text(cfg),
    }
    return judge._messages(1, raw, {**text, **fields})


def first_request(judge: Judge, sec: DeepEvalGEvalSection, raw: dict[str, Any], text: dict[str, str]) -> list[Message]:
    """The first call: the steps call from the criteria, or (steps given) the scoring call."""
    cfg = sec.deepeval_geval
    if cfg.evaluation_steps:
        return _results_messages(judge, cfg, raw, text, cfg.evaluation_steps)
    return _steps_messages(judge, cfg, raw, text)


def geval_calls(ctx: CallContext[DeepEvalGEvalSection]) -> Calls:
    """ConversationalGEval's calls as a generator (see `Judge._calls`): yields requests, returns the `JudgeResult`."""
    judge, raw, text, gens, outputs = ctx.judge, ctx.raw, ctx.text, ctx.gens, ctx.outputs
    cfg = ctx.section.deepeval_geval
    fmts = judge.output_formats
    stage = 0
    try:
        turn_dicts(cfg, raw)  # a bad turns value fails before any call
        steps = cfg.evaluation_steps
        if not steps:
            gens += yield [(_steps_messages(judge, cfg, raw, text), fmts[0])]
            steps = [_text(s) for s in fmts[0].value(fmts[0].parse(gens[-1].text))["steps"]]
        outputs["evaluation_steps"] = steps
        stage = 1
        gens += yield [(_results_messages(judge, cfg, raw, text, steps), fmts[1])]
        answer = fmts[1].value(fmts[1].parse(gens[-1].text))
        g_score = float(answer["score"])
        shown = g_score / 10
        if cfg.strict_mode and shown < 1:
            shown = 0.0
        outputs["g_score"] = g_score
        score = min(max(shown, 0.0), 1.0)
        details = {**outputs, "strict_mode": cfg.strict_mode, "deepeval_score": shown}
        return ctx.scored(fmts[1], shown, score, answer["reason"], outputs, details)
    except ParseError as e:
        return ctx.parse_failed(STAGES[stage], e)
