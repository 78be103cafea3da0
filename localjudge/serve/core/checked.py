"""Schemas constrained on a relaxation: every answer checked against the schema as sent, repaired or
resampled within a bounded number of tries, given only when it validates.

`FormatCache.get` builds a `CheckedFormat` when the grammar compiler refuses keywords that
`constraints.relax` can leave out (`uniqueItems`, `not`, `if`/`then`/`else`, `dependencies`, an
overlapping `oneOf`): the format constrains on the relaxed schema and keeps the original. `submit`
runs the request once, checks the answer with `jsonschema` (`validate.answer_problem`), repairs what
can be repaired without changing a valid part (`validate.repair`: a repeated item of a `uniqueItems`
array left out, when the array keeps its `minItems`), and otherwise samples again, up to `RESAMPLES`
more times, with a temperature of at least `RESAMPLE_TEMPERATURE` and the seed moved on by one each
time (bounded by work, never by wall time). When no try validates, the request fails with
`AnswerRefused`, a 400 naming the keyword the last answer broke. A relaxed answer is not streamed
token by token (it is not known to be valid until it ends): the request counts as accepted (a stream
begins) only once an answer validated, and the answer comes whole in the last chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from ...engine.base import Generation
from ...errors import InputError
from ...formats import JSONSchemaFormat
from . import validate
from .plan import Plan
from .reasoning import split_reasoning

RESAMPLES = 3  # tries after the first, when an answer does not validate and cannot be repaired
RESAMPLE_TEMPERATURE = 0.7  # greedy decoding would write the same answer again


class AnswerRefused(InputError):
    """No try at a relaxed schema gave an answer valid against the schema as sent (a 400 naming the keyword)."""


class CheckedFormat(JSONSchemaFormat):
    """A JSON schema constrained on its relaxation (`schema`); answers are checked against `original`."""

    def __init__(self, original: dict[str, Any], relaxed: dict[str, Any], keywords: tuple[str, ...], **kw: Any):
        super().__init__(relaxed, **kw)
        self.original = original
        self.relaxed_keywords = keywords  # what the constraint leaves to the check: uniqueItems, not, ...

    def settle(self, text: str) -> tuple[str, validate.Problem | None]:
        """`text` as it will be answered (repaired if it could be) and what is still wrong with it (None: valid)."""
        reasoning, answer = split_reasoning(text)
        problem = validate.answer_problem(self.original, answer)
        if problem is None:
            return text, None
        fixed = validate.repair(self.original, answer)
        if fixed is None or validate.answer_problem(self.original, fixed) is not None:
            return text, problem
        return text[: len(text) - len(answer)] + fixed, None


Submit = Callable[[Plan, Callable[[], None]], "Future[Generation]"]


def submit(once: Submit, p: Plan, fmt: CheckedFormat, cancel: Any, accepted: Callable[[], None]) -> Future[Generation]:
    """Run `p` through `once` (one generation, not streamed) until an answer validates against `fmt.original`,
    at most 1 + `RESAMPLES` times; the generation given carries the tokens of every try in its usage."""
    out: Future[Generation] = Future()
    tries = [p.options] + [
        p.options.model_copy(update={"temperature": max(p.options.temperature, RESAMPLE_TEMPERATURE), "seed": p.options.seed + k})
        for k in range(1, RESAMPLES + 1)
    ]
    spent = {"prompt": 0, "output": 0}

    def go(i: int) -> None:
        try:
            fut = once(replace(p, options=tries[i]), _nothing)  # accepted only with a valid answer (below)
        except Exception as e:  # noqa: BLE001 - the worker's refusal (busy, closing) is the request's answer
            out.set_exception(e)
            return
        fut.add_done_callback(lambda f: landed(i, f))

    def landed(i: int, fut: Future[Generation]) -> None:
        err = fut.exception()
        if err is not None:
            out.set_exception(err)
            return
        gen = fut.result()
        spent["prompt"] += gen.n_prompt_tokens
        spent["output"] += gen.n_output_tokens
        if gen.stop_reason == "cancelled":
            out.set_result(gen)
            return
        text, problem = fmt.settle(gen.text)
        if problem is None:
            accepted()  # a stream begins only now, so that a refusal is a plain 400, not an error inside the stream
            out.set_result(
                gen.model_copy(update={"text": text, "n_prompt_tokens": spent["prompt"], "n_output_tokens": spent["output"]})
            )
        elif i + 1 < len(tries) and not cancel.is_set():
            go(i + 1)
        else:
            out.set_exception(AnswerRefused(refusal(problem, fmt.relaxed_keywords, len(tries))))

    go(0)
    return out


def refusal(problem: validate.Problem, relaxed: tuple[str, ...], tries: int) -> str:
    """The one-line 400 when no try validated: the keyword the last answer broke, where, and what to change."""
    advice = (
        "use anyOf, or make the branches distinct (e.g. a const discriminator property)"
        if problem.keyword == "oneOf"
        else f"loosen `{problem.keyword}` or raise max_tokens"
    )
    return (
        f"response schema: no answer valid against `{problem.keyword}` in {tries} tries (the constraint cannot express "
        f"{', '.join(relaxed)}; the last answer at {problem.where}: {problem.message}); {advice}"
    )


def _nothing() -> None:
    return None


__all__ = ["RESAMPLES", "RESAMPLE_TEMPERATURE", "AnswerRefused", "CheckedFormat", "submit"]
