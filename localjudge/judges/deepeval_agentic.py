"""The calls of DeepEval 4.3.1's LLM-judged agentic metric ArgumentCorrectnessMetric (kind `deepeval_agentic`),
and its arithmetic as DeepEval computes it (deepeval/metrics/argument_correctness/argument_correctness.py).

Stage 0 (`generate_verdicts`) gives a yes/no verdict per tool call in `{{deepeval_tools_called}}` on whether its
arguments address `{{deepeval_input}}` (with `--granularity tool_call` a row holds one call, so one verdict);
score = the fraction of `yes` verdicts (`score_qag_verdicts`; 1 when the model gives none). Stage 1
(`generate_reason`) explains the score from the `no` verdicts' reasons (Python's `str` of their list, as Jinja
prints it) and the score with two decimals. A row with no tool calls scores 1.0 with DeepEval's reason "No tool
calls provided" and no model call. An output that does not parse makes the result unscored (`parse_error`,
naming the stage); the calls made so far are kept on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine.base import Calls, Generation
from ..errors import ParseError
from ..formats import OutputFormat
from .ragas_agent import Judge

NO_CALLS = "[]"  # deepeval_tools_called of a row without tool calls (conversations/deepeval_case.py)


def verdicts_score(verdicts: Sequence[str]) -> float:
    """`score_qag_verdicts` with passing = yes: the fraction of `yes`, 1 when there is no verdict."""
    if not verdicts:
        return 1.0
    return sum(v == "yes" for v in verdicts) / len(verdicts)


def incorrect_reasons_text(verdicts: Sequence[dict[str, Any]]) -> str:
    """The `no` verdicts' reasons as DeepEval's reason prompt prints their Python list (None when absent)."""
    return str([v.get("reason") for v in verdicts if v.get("verdict") == "no"])


def argument_correctness_calls(
    judge: Judge, raw: dict[str, Any], text: dict[str, str], gens: list[Generation], model_id: str
) -> Calls:
    """The metric's calls as a generator (see `Judge._calls`): yields requests, returns the `JudgeResult`."""
    fmts: list[OutputFormat] = [f for f in judge.formats if f is not None]
    if str(raw.get("deepeval_tools_called", "")).strip() == NO_CALLS:
        reason = "No tool calls provided"
        return judge._scored(judge._base(gens, fmts[1], model_id), 1.0, 1.0, reason, None, {"verdicts": []})
    outputs: dict[str, Any] = {}
    try:
        gens += yield [(judge._messages(0, raw, text), fmts[0])]
        verdicts = outputs["verdicts"] = list(fmts[0].value(fmts[0].parse(gens[-1].text))["verdicts"])
        score = verdicts_score([v["verdict"] for v in verdicts])
        fields = {"score": format(score, ".2f"), "incorrect_tool_calls_reasons": incorrect_reasons_text(verdicts)}
        gens += yield [(judge._messages(1, raw, {**text, **fields}), fmts[1])]
        reason = outputs["reason"] = fmts[1].value(fmts[1].parse(gens[-1].text))["reason"]
        return judge._scored(judge._base(gens, fmts[1], model_id), score, score, reason, outputs, dict(outputs))
    except ParseError as e:
        stage = judge.spec.stages[len(outputs)].name
        return judge._unscored(gens, model_id, "parse_error", f"{stage}: {e}", outputs)
