"""A localjudge conversation judge as a DeepEval conversational metric. Needs `localjudge[deepeval]`.

    from deepeval import evaluate
    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric

    metric = LocalJudgeConversationalMetric("knowledge_retention")          # session-level, the default model
    evaluate(test_cases=[conversational_test_case], metrics=[metric])

`LocalJudgeConversationalMetric` subclasses DeepEval's own `BaseConversationalMetric`, so `deepeval.evaluate`,
`assert_test` and `metric.measure(test_case)` take it like DeepEval's metrics. A `ConversationalTestCase` is read
with `conversations.from_deepeval` (an assistant turn's `tools_called` become a call turn, a tool-result turn per
call with an output, then the assistant's text; `chatbot_role` the persona, `expected_outcome` kept), then judged
as a run judges it (`ConversationDataset`: the judge's `conversation` is the conversation as MLflow renders it,
`conversation_with_tool_calls` for MLflow's tool-call judges, `tools_called` / `available_tools` as MLflow
formats them, `expected_outcome` / `chatbot_role` / `scenario` where the judge takes them).

Granularity: session-level (one judgement of the whole conversation) unless `window_size` is given; then one
judgement per unit interaction, each seeing that unit and up to `window_size - 1` before it (DeepEval's sliding
window, `TurnRelevancyMetric`'s convention), aggregated to `score` by `aggregate` (run/aggregate.py's rule:
`mean` of the scored turns' scores, their `min`, or `pass_fraction`, the share passing). `reason` is the judge's
rationale (per turn: one line per turn). `success` is `score >= threshold` (the judge's `pass_threshold` when no
threshold is given; 1 with `strict_mode`), as DeepEval's `is_successful` has it. A judgement left unscored (the
model's answer could not be read, the prompt does not fit the context) raises one `MetricError` line naming the
test case and the reason, which DeepEval records as the metric's error (`ignore_errors`) or raises.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, Literal

from ..conversations.dataset import ConversationDataset, ConversationOptions, conversation_sources
from ..conversations.model import Conversation
from ..conversations.readers import DEFAULT_BOUNDS, Bounds, from_deepeval
from ..engine.base import DecodeOptions, Engine
from ..errors import InputError
from ..judges.protocol import JudgeProtocol
from ..store.results import JudgeResult
from .common import BoundJudge, bind_variables, check_fixed, require

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
require("deepeval", "deepeval", "DeepEval")

from deepeval.metrics import BaseConversationalMetric  # noqa: E402
from deepeval.test_case import ConversationalTestCase  # noqa: E402

Aggregate = Literal["mean", "min", "pass_fraction"]


class MetricError(InputError):
    """A conversation the judge left unscored, or a test case it cannot read: one line naming which and why."""


def to_conversation(test_case: Any, *, bounds: Bounds = DEFAULT_BOUNDS) -> Conversation:
    """A DeepEval `ConversationalTestCase` as localjudge's `Conversation` (`conversations.from_deepeval`)."""
    return from_deepeval(test_case, bounds=bounds)


def _where(test_case: Any) -> str:
    """How an error names a test case: `test case <name>` (`(unnamed)` without one)."""
    name = test_case.name if isinstance(test_case, ConversationalTestCase) else None
    return f"test case {name or '(unnamed)'}"


def _case_values(case: ConversationalTestCase) -> dict[str, Any]:
    """The test case's own fields a judge may take as variables (those set)."""
    fields = {
        "expected_outcome": case.expected_outcome,
        "chatbot_role": case.chatbot_role,
        "role": case.chatbot_role,
        "scenario": case.scenario,
        "user_description": case.user_description,
        "context": list(case.context) if case.context else None,
    }
    return {k: v for k, v in fields.items() if v is not None}


def window_values(conv: Conversation, window_size: int | None) -> list[dict[str, Any]]:
    """The values of each judgement of `conv`: one (session-level, `window_size` None) or one per unit
    interaction with its sliding window, as a run over conversations builds its rows."""
    opts = (
        ConversationOptions(granularity="session")
        if window_size is None
        else ConversationOptions(granularity="turn", window=window_size)
    )
    return [row.values for row in ConversationDataset([conv], opts)]


class LocalJudgeConversationalMetric(BaseConversationalMetric):
    """A localjudge judge (a catalog name, a judge file's path, or a judge) as DeepEval's conversational metric.

    `model` / `model_options` / `engine` / `options`: the local model as `BoundJudge` takes it (None: the default
    model, loaded on the first judgement). `threshold`: success is `score >= threshold` (None: the judge's
    `pass_threshold`). `window_size`: judge each unit interaction with that many units of context (None: the whole
    conversation once). `aggregate`: how per-turn scores make `score`. `values`: fixed values for other variables
    of the judge. `name`: the metric's name in DeepEval's results (default: the judge's name)."""

    def __init__(
        self,
        judge: str | JudgeProtocol,
        *,
        model: str | None = None,
        model_options: Mapping[str, Any] | None = None,
        engine: Engine | None = None,
        options: DecodeOptions | Mapping[str, Any] | None = None,
        judges_dir: str | None = None,
        threshold: float | None = None,
        window_size: int | None = None,
        aggregate: Aggregate = "mean",
        values: Mapping[str, Any] | None = None,
        name: str | None = None,
        include_reason: bool = True,
        async_mode: bool = True,
        strict_mode: bool = False,
        verbose_mode: bool = False,
        bounds: Bounds = DEFAULT_BOUNDS,
    ):
        if window_size is not None and window_size < 1:
            raise InputError(f"window_size: {window_size}; give a number of unit interactions of at least 1, or None")
        if aggregate not in ("mean", "min", "pass_fraction"):
            raise InputError(f"aggregate: {aggregate!r} is not one of mean, min, pass_fraction")
        self.bound = BoundJudge(
            judge, model=model, model_options=model_options, engine=engine, options=options, judges_dir=judges_dir
        )
        self.fixed = dict(values or {})
        check_fixed(self.bound.judge, self.fixed)
        # every argument is kept under its own name: DeepEval's evaluate copies a metric per test case by calling
        # its class with the attributes named like __init__'s parameters (metrics/utils/metrics.py copy_metrics)
        self.judge, self.model_options, self.engine, self.options = self.bound.judge, model_options, engine, options
        self.judges_dir, self.values, self.name, self.bounds = judges_dir, values, name, bounds
        self.model = model  # type: ignore[assignment]  # DeepEval types it as its LLM; here the local model's spec
        self.threshold = 1.0 if strict_mode else self.bound.judge.pass_threshold if threshold is None else threshold
        self.window_size, self.aggregate = window_size, aggregate
        self.include_reason, self.async_mode = include_reason, async_mode
        self.strict_mode, self.verbose_mode = strict_mode, verbose_mode
        self.evaluation_model = f"localjudge:{self.bound.ref.identity().model_id}"
        self.results: list[JudgeResult] = []

    @property
    def __name__(self) -> str:  # DeepEval names a metric by this property
        return self.name or self.bound.name

    # ------------------------------------------------------------------------------------------ judging

    def _requests(self, test_case: Any) -> list[dict[str, Any]]:
        """The judge's variables for each judgement of `test_case` (bad input: one `MetricError` line)."""
        where = _where(test_case)
        try:
            conv = to_conversation(test_case, bounds=self.bounds)
        except InputError as e:
            raise MetricError(f"{where}: {e}") from None
        judge = self.bound.judge
        extra = _case_values(test_case)
        rows = []
        sources = conversation_sources(judge.variables)  # what a variable reads, as its judge file declares
        for vals in window_values(conv, self.window_size):
            vals = {**vals, **{v: vals[src] for v, src in sources.items() if src in vals}}
            try:
                rows.append(
                    bind_variables(
                        judge,
                        [vals, extra],
                        {},
                        self.fixed,
                        where=f"the DeepEval {where}",
                        hint="pass it in values={'{var}': ...}",
                    )
                )
            except InputError as e:
                raise MetricError(str(e)) from None
        if not rows:
            raise MetricError(
                f"{where}: no unit interaction to judge (a user turn answered by an assistant turn); window_size needs one"
            )
        return rows

    def _finish(self, test_case: Any, results: list[JudgeResult]) -> float:
        """Set score, reason, success and the verbose logs from the judgements; returns the score."""
        self.results = results
        where = _where(test_case)
        scored = [r for r in results if r.scored and r.score is not None]
        if self.window_size is None or not scored:
            r = results[0]
            if not scored:
                why = r.error or r.unscored_reason or "no score"
                self.error = f"{where}: judge '{self.bound.name}' left it unscored ({r.unscored_reason}): {why}"
                self.success = False
                raise MetricError(self.error)
            self.score = r.score
            self.reason = r.rationale if self.include_reason else None
        else:
            scores = [r.score for r in scored if r.score is not None]
            passes = [r.passed for r in scored if r.passed is not None]
            if self.aggregate == "min":
                self.score = min(scores)
            elif self.aggregate == "pass_fraction":
                self.score = sum(passes) / len(passes) if passes else None
            else:
                self.score = sum(scores) / len(scores)
            lines = [
                f"turn {i}: " + (f"{r.score:.2f} {r.rationale or ''}".rstrip() if r.scored else f"unscored ({r.unscored_reason})")
                for i, r in enumerate(results)
            ]
            self.reason = "\n".join(lines) if self.include_reason else None
        self.error = None
        self.success = self.is_successful()
        self.score_breakdown = {f"turn {i}": r.score for i, r in enumerate(results)} if self.window_size is not None else {}
        self.verbose_logs = "\n".join(
            f"judgement {i}: {r.model_dump_json(include={'value', 'score', 'passed', 'rationale'})}"
            for i, r in enumerate(results)
        )
        return self.score if self.score is not None else 0.0

    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        """Judge `test_case` (every window side by side on the shared engine worker) and return the score."""
        futures = [self.bound.submit(v) for v in self._requests(test_case)]
        return self._finish(test_case, [f.result() for f in futures])

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        """`measure` for DeepEval's async mode: waits on the engine worker without blocking the loop."""
        futures = [asyncio.wrap_future(self.bound.submit(v)) for v in self._requests(test_case)]
        return self._finish(test_case, list(await asyncio.gather(*futures)))

    def is_successful(self) -> bool:
        """`score >= threshold`, False once the metric has an error (DeepEval's rule)."""
        if self.error is not None or self.score is None:
            self.success = False
        else:
            self.success = self.score >= (self.threshold if self.threshold is not None else 0.5)
        return self.success
