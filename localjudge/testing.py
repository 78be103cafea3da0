"""Judges as assertions in your own test suite (pytest or any other runner).

    from localjudge.testing import assert_judge

    def test_answer_is_relevant():
        answer = my_app("What is the capital of France?")
        assert_judge("relevance_to_query", input="What is the capital of France?", output=answer, min_score=0.5)

A failing judgement raises `AssertionError` with the judge, verdict, score, rationale and inputs; an
unscored one (the model's output could not be used, the prompt is too long) fails with its reason. It
passes when `score >= min_score`, or without `min_score` when the judge's own pass threshold is met.

Judgements go through the batch runner's store and cache (`$LOCALJUDGE_HOME/runs.sqlite`): the same
judge, inputs, model and options are judged once; a re-run of the suite reads them back without
loading the model. The model (`model=`, else `$LOCALJUDGE_TEST_MODEL`, else the default model) loads at
the first judgement that is not cached, once per test session (process).

With `pytest_plugins = ["localjudge.testing"]` in your conftest.py, pytest prints one summary line:
how many judgements, how many judged now, how many from the cache, whether the model was loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .engine.base import DecodeOptions, Engine
from .judges.protocol import JudgeProtocol
from .store.results import JudgeResult


@dataclass
class Stats:
    """What `assert_judge` did in this process: judgements, judged by the model, from the cache."""

    judgements: int = 0
    judged: int = 0
    cached: int = 0
    model_loaded: bool = False

    def line(self) -> str:
        """One summary line."""
        loaded = "yes" if self.model_loaded else "no"
        return (
            f"localjudge: {self.judgements} judgements: {self.judged} judged now, {self.cached} from the cache; "
            f"model loaded: {loaded}"
        )


STATS = Stats()


def _clip(value: Any, n: int = 300) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def judge_cached(
    judge: str | JudgeProtocol,
    *,
    model: str | None = None,
    model_options: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | Mapping[str, Any] | None = None,
    judges_dir: str | None = None,
    **variables: Any,
) -> tuple[JudgeResult, str | None]:
    """One judgement through the runner's store and cache: (result, the row's error or None)."""
    from .api import execute
    from .run.spec import RunSpec

    if engine is None and model is None:
        model = os.environ.get("LOCALJUDGE_TEST_MODEL") or None
    spec = RunSpec.build(
        [variables],
        [judge],
        model=model,
        model_options=model_options,
        engine=engine,
        options=dict(options) if isinstance(options, Mapping) else options,
        judges_dir=judges_dir,
    )
    run = execute(spec)
    STATS.judgements += 1
    STATS.judged += run.counts.evaluated
    STATS.cached += run.counts.cached + run.counts.reused
    STATS.model_loaded = STATS.model_loaded or run.counts.engine_loaded
    row = next(iter(run.results))
    return row.result, row.error


def assert_judge(
    judge: str | JudgeProtocol,
    *,
    min_score: float | None = None,
    model: str | None = None,
    model_options: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | Mapping[str, Any] | None = None,
    judges_dir: str | None = None,
    **variables: Any,
) -> JudgeResult:
    """Judge one example and assert it passes: `score >= min_score`, or the judge's own pass threshold.

    `variables`: the judge's variables (`input=`, `output=`, `ground_truth=`, ... or their aliases; see
    `localjudge judges show NAME`). Returns the `JudgeResult`; raises `AssertionError` with the verdict,
    score, rationale and inputs when it fails or cannot be scored (bad input raises `InputError`)."""
    __tracebackhide__ = True
    r, error = judge_cached(
        judge, model=model, model_options=model_options, engine=engine, options=options, judges_dir=judges_dir, **variables
    )
    name = r.judge
    shown = "\n".join(f"  {k}: {_clip(v)}" for k, v in variables.items())
    if not r.scored:
        raise AssertionError(
            f"{name} could not score this ({r.unscored_reason}): {error or r.error}\n  raw output: {_clip(r.raw_text)}\n{shown}"
        )
    if min_score is not None:
        ok = r.score is not None and r.score >= min_score
        need = f"min_score {min_score:g}"
    else:
        ok = bool(r.passed)
        need = "the judge's pass threshold"
    if not ok:
        score = "none" if r.score is None else f"{r.score:.2f}"
        raise AssertionError(
            f"{name} judged {r.value!r} (score {score}), below {need}\n  rationale: {_clip(r.rationale or '', 600)}\n{shown}"
        )
    return r


# ------------------------------------------------------------------------ pytest plugin (opt-in)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """With `pytest_plugins = ["localjudge.testing"]`: one line of what the judges did in this session."""
    if STATS.judgements:
        terminalreporter.write_line(STATS.line())
