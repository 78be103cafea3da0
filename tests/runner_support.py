"""Test support for the batch runner: a tiny judge built from a real OutputFormat, and scripted answers.

`TinyJudge` implements the judge contract (`localjudge.judges.protocol`) with the one-row-at-a-time
defaults of `SequentialJudge`; answers come from `ScriptedEngine` functions, so runs are fast and
deterministic. Used by tests/test_runner*.py and by the subprocess scripts they start.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from localjudge.engine.base import DecodeOptions, Message, ScriptedEngine
from localjudge.errors import MissingVariableError, ParseError
from localjudge.formats import OutputFormat, ScoreJSON, YesNoJSON
from localjudge.judges.protocol import SequentialJudge
from localjudge.store.results import JudgeResult, Timings, Usage


class TinyJudge(SequentialJudge):
    """A yes/no (or 1-5 score) judge over input/output/context; the scripted engine decides."""

    pass_threshold = 0.5

    def __init__(
        self,
        name: str = "tiny",
        fmt: OutputFormat | None = None,
        version: str = "v1",
        required: Sequence[str] = ("input", "output"),
        optional: Sequence[str] = ("context",),
    ):
        self.name, self.version = name, version
        self.format = fmt or YesNoJSON()
        self.required_variables, self.optional_variables = list(required), list(optional)

    @property
    def output_formats(self) -> list[OutputFormat]:
        return [self.format]

    def render(self, **v: Any) -> list[Message]:
        for var in self.required_variables:
            if var not in v:
                raise MissingVariableError(f"judge {self.name!r} needs variable {var!r}")
        ctx = v.get("context")
        ctx_text = "\n".join(ctx) if isinstance(ctx, list) else (ctx or "")
        body = f"[{self.name}]\nQuestion: {v['input']}\nAnswer: {v['output']}\nContext: {ctx_text}"
        return [Message(role="system", content="You are a judge."), Message(role="user", content=body)]

    def evaluate(self, engine: Any, options: DecodeOptions | None = None, **v: Any) -> JudgeResult:
        gen = engine.generate(self.render(**v), self.format, options)
        base = dict(
            judge=self.name,
            judge_version=self.version,
            format=self.format.describe(),
            raw_text=gen.text,
            model_id=gen.model_id,
            usage=Usage(prompt_tokens=gen.n_prompt_tokens, output_tokens=gen.n_output_tokens, calls=1),
            timings=Timings(total_ms=gen.total_ms),
        )
        try:
            verdict = self.format.parse(gen.text)
        except ParseError as e:
            return JudgeResult(**base, unscored_reason="parse_error", error=str(e))
        score = self.format.normalise(verdict)
        return JudgeResult(
            **base,
            value=self.format.value(verdict),
            score=score,
            passed=None if score is None else score >= 0.5,
            rationale=self.format.rationale(verdict),
            verdict=verdict.model_dump(),
        )


def answer_of(messages: Sequence[Message]) -> str:
    return messages[-1].content.split("Answer: ", 1)[1].split("\nContext:", 1)[0]


def scripted_text(messages: Sequence[Message], fmt: OutputFormat) -> str:
    """'garbled' answers → unparseable text; answers with 'wrong' → no / 1; anything else → yes / 5."""
    ans = answer_of(messages)
    if "garbled" in ans:
        return "I cannot decide"
    bad = "wrong" in ans
    if isinstance(fmt, ScoreJSON):
        return json.dumps({"eval_score": 1 if bad else 5, "explanation": "scripted"})
    return json.dumps({"rationale": "scripted", "result": "no" if bad else "yes"})


def scripted_engine(delay_s: float = 0.0, model_id: str = "scripted") -> ScriptedEngine:
    import time

    def fn(messages: Sequence[Message], fmt: OutputFormat) -> str:
        if delay_s:
            time.sleep(delay_s)
        return scripted_text(messages, fmt)

    return ScriptedEngine(fn, model_id=model_id)


def failing_engine(model_id: str = "scripted") -> ScriptedEngine:
    """Same identity as `scripted_engine`, but any call fails: proves a run was served from the cache."""

    def fn(messages: Sequence[Message], fmt: OutputFormat) -> str:
        raise AssertionError("the engine was called")

    return ScriptedEngine(fn, model_id=model_id)


def comparable_rows(out) -> list[dict]:
    """results.jsonl rows of a run directory, sorted, without run-specific fields (run id, timings)."""
    from pathlib import Path

    rows = []
    for line in (Path(out) / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        r.pop("run_id")
        r["result"].pop("timings")
        rows.append(r)
    return sorted(rows, key=lambda r: (r["row_index"], r["judge"]))


def tiny_judges() -> list[TinyJudge]:
    """The two judges the reliability and resume tests run: a yes/no one and a 1-5 score one."""
    return [TinyJudge("a"), TinyJudge("b", fmt=ScoreJSON(min=1, max=5))]
