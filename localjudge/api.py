"""The three-line Python API: judge one example, or constrain any prompt to a format.

import localjudge
r = localjudge.judge("correctness", input="2+2?", output="4", ground_truth="4")
print(r.value, r.score, r.rationale)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .engine.backends import ModelRef
from .engine.base import DecodeOptions, Engine, Message
from .errors import InputError, ParseError
from .formats import OutputFormat
from .store.results import JudgeResult, Timings, Usage

if TYPE_CHECKING:
    from .judges.protocol import JudgeProtocol


def _engine(model: str | None, engine: Engine | None, model_options: Mapping[str, Any] | None) -> Engine:
    if engine is not None:
        return engine
    return ModelRef(model, model_options).engine()


def judge(
    name: str | JudgeProtocol,
    *,
    model: str | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | None = None,
    judges_dir: str | None = None,
    model_options: Mapping[str, Any] | None = None,
    engine_kwargs: Mapping[str, Any] | None = None,
    **variables: Any,
) -> JudgeResult:
    """Run a judge (a catalog name or a judge object) on one example; loads the model once per process.

    `model` is a model spec (see `engine.backends`), `model_options` its backend's options
    (`engine_kwargs` is their former name)."""
    from .judges import get_judge

    j = get_judge(name, judges_dir=judges_dir) if isinstance(name, str) else name
    return j.evaluate(_engine(model, engine, {**(engine_kwargs or {}), **(model_options or {})}), options=options, **variables)


def run_format(
    fmt: OutputFormat,
    prompt: str,
    *,
    system: str | None = None,
    model: str | None = None,
    engine: Engine | None = None,
    options: DecodeOptions | None = None,
    model_options: Mapping[str, Any] | None = None,
    engine_kwargs: Mapping[str, Any] | None = None,
) -> JudgeResult:
    """Generate under any output format for a free prompt and parse it into a typed result."""
    if not prompt or not prompt.strip():
        raise InputError("the prompt is empty; pass the text the model should answer")
    eng = _engine(model, engine, {**(engine_kwargs or {}), **(model_options or {})})
    if options is not None and options.fast:
        fmt = fmt.fast() or fmt
    msgs = ([Message(role="system", content=system)] if system else []) + [Message(role="user", content=prompt)]
    gen = eng.generate(msgs, fmt, options)
    base = dict(
        judge=f"format:{fmt.kind}",
        judge_version="",
        format=fmt.describe(),
        raw_text=gen.text,
        model_id=gen.model_id,
        usage=Usage.of([gen]),
        timings=Timings.of([gen]),
    )
    try:
        v = fmt.parse(gen.text)
    except ParseError as e:
        return JudgeResult(**base, unscored_reason="parse_error", error=str(e))
    score = fmt.normalise(v)
    expected = fmt.expected_score(gen.choice_steps) if gen.choice_steps is not None else None
    return JudgeResult(
        **base,
        value=fmt.value(v),
        score=score,
        passed=None if score is None else score >= 0.5,
        rationale=fmt.rationale(v),
        verdict=v.model_dump(),
        expected_score=expected,
    )
