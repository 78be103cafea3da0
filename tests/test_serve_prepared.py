"""A served request is decided once (issue 44 part 4): serve renders and tokenizes the prompt and decides the budget on
the engine thread (`ServerState.prepare`), and the engine decodes those tokens with that budget
(`GenerateOptions.prepared`) instead of rendering, tokenizing and budgeting the messages again. Unit tier: the
default model's real vocabulary without weights (tests/random_logits.py), the product's `_job`."""

from __future__ import annotations

import threading

import pytest
from random_logits import RandomLogitsEngine

from localjudge.engine.base import GenerateOptions, Generation, ModelIdentity, Prepared
from localjudge.errors import PromptTooLongError
from localjudge.formats import JSONSchemaFormat
from localjudge.serve.core import plan as protocol
from localjudge.serve.core.state import ServeConfig, ServerState

SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}, "why": {"type": "string"}}}


class Recording(RandomLogitsEngine):
    """Records the decode job of each submitted request (what it would feed and how far it may go), and answers."""

    def __init__(self) -> None:
        super().__init__(n_ctx=512)
        self.jobs: list = []
        self.tokenized = 0
        self._answers: list = []

    def prompt_tokens(self, messages):
        self.tokenized += 1
        return super().prompt_tokens(messages)

    def submit(self, requests, options, callback, cancel=None):
        self.jobs += [self._job(m, f, options) for m, f in requests]
        self._answers.append(lambda: callback([Generation(text="{}") for _ in requests]))

    def drain(self, poll=None):
        while True:
            if poll is not None:
                poll()
            if not self._answers:
                return
            self._answers.pop(0)()


@pytest.fixture(scope="module")
def served():
    eng = Recording()
    state = ServerState(eng, ServeConfig(precompile=False), ModelIdentity(backend="llama", model_id="m", digest="d"))
    yield eng, state
    state.worker.close()
    eng.close()


def _run(state, p, fmt):
    return state.submit(p, fmt, threading.Event(), None, lambda: None).result(timeout=60)


def _plan(content: str, **extra):
    body = {"model": "m", "messages": [{"role": "user", "content": content}], **extra}
    return protocol.plan(protocol.parse_request(body), field_tokens=80)


@pytest.mark.parametrize("think", [0, 16])
def test_a_served_request_is_tokenized_once_and_decoded_with_the_tokens_and_budget_decided(served, think):
    eng, state = served
    fmt = JSONSchemaFormat(SCHEMA, constraint="llguidance")
    p = _plan("Is the sky blue? " * 5, max_tokens=200, think_tokens=think)
    eng.jobs.clear()
    eng.tokenized = 0
    _run(state, p, fmt)
    assert eng.tokenized == 1
    (job,) = eng.jobs
    prompt = eng.tokenize("\n".join(m.content for m in p.messages))
    assert job.prompt == prompt
    # as the engine decided it before: the budget it was handed as max_tokens, the same tokens
    alone = eng._job(p.messages, fmt, p.options.model_copy(update={"max_tokens": job.budget}))
    assert (alone.prompt, alone.budget, alone.think_open, alone.think_close) == (
        job.prompt,
        job.budget,
        job.think_open,
        job.think_close,
    )
    assert job.budget == state.budget(eng, p, fmt, len(prompt))


def test_a_free_text_request_without_max_tokens_gets_the_same_budget_as_before(served):
    eng, state = served
    p = _plan("Say something.")
    eng.jobs.clear()
    _run(state, p, state.text_format)
    (job,) = eng.jobs
    assert job.budget == min(state.text_format.max_tokens(), eng.n_ctx - len(job.prompt))


def test_a_prompt_too_long_is_refused_by_serve_before_the_engine_with_the_same_message(served):
    eng, state = served
    eng.jobs.clear()
    p = _plan("word " * 600)
    with pytest.raises(PromptTooLongError) as e:
        _run(state, p, state.text_format)
    assert str(e.value).startswith("this model's context is 512 tokens; the messages take ")
    assert eng.jobs == []


def test_a_request_nobody_prepared_is_still_tokenized_and_budgeted_by_the_engine():
    eng = Recording()
    try:
        fmt = JSONSchemaFormat(SCHEMA, constraint="llguidance")
        job = eng._job(_plan("Is it?").messages, fmt, GenerateOptions())
        assert eng.tokenized == 1 and job.budget == min(fmt.max_tokens(), max(1, eng.n_ctx - len(job.prompt)))
        given = eng._job([], fmt, GenerateOptions(max_tokens=9, prepared=Prepared((1, 2, 3), 9)))
        assert eng.tokenized == 1 and (given.prompt, given.budget) == ([1, 2, 3], 9)
    finally:
        eng.close()
