"""Large physical batches (n_ubatch above 32) keep "prefix reuse never changes an output": every prompt is fed
in batches that start at multiples of n_ubatch, and a cached prefix is reused only up to such a boundary inside
what a prompt feed computed, so warm and cold evaluate the same batches (real model, one thread)."""

from __future__ import annotations

import pytest

from localjudge.engine import Message
from localjudge.formats import YesNoJSON

pytestmark = pytest.mark.model

FACTS = " ".join(f"fact {i}: item {i} weighs {i * 3} grams." for i in range(24))
ASK = [Message(role="user", content=FACTS + "\nQuestion: what does item 7 weigh? Answer: 21 grams. Correct? Explain.")]
OTHER = [Message(role="user", content=FACTS + "\nQuestion: what does item 9 weigh? Answer: 5 grams, I think.")]
SHORTER = [Message(role="user", content=" ".join(FACTS.split()[:90]) + "\nIs this list complete? Explain.")]


def _trace(g) -> list[tuple[str, float | None]]:
    """Every output token with its log-probability: equal only where every logit the decode read was equal."""
    return [(t.text, t.logprob) for t in g.tokens]


def test_a_large_batch_gives_the_same_logprobs_cold_and_after_any_reused_prefix() -> None:
    from localjudge.engine import load_engine

    n_ubatch = 128
    fmt = YesNoJSON(field_tokens=16)
    eng = load_engine(n_threads=1, n_ubatch=n_ubatch)
    try:
        cold = {}
        for name, msgs in (("ask", ASK), ("other", OTHER), ("shorter", SHORTER)):
            eng.reset()
            cold[name] = eng.generate(msgs, fmt)
        eng.reset()
        eng.generate(ASK, fmt)
        again = eng.generate(ASK, fmt)  # after itself
        shared = eng.generate(OTHER, fmt)  # after a prompt sharing most of its prefix
        shorter = eng.generate(SHORTER, fmt)  # sharing a prefix shorter than the cached prompt
        back = eng.generate(ASK, fmt)  # after that shorter one
    finally:
        eng.close()
    assert cold["ask"].n_prompt_tokens > 2 * n_ubatch
    warm = {
        "after itself": (again, "ask"),
        "after more": (shared, "other"),
        "after less": (shorter, "shorter"),
        "back": (back, "ask"),
    }
    assert {k: _trace(g) for k, (g, _) in warm.items()} == {k: _trace(cold[name]) for k, (_, name) in warm.items()}
    assert all(g.n_cached_prompt_tokens % n_ubatch == 0 for g, _ in warm.values())
    assert again.n_cached_prompt_tokens > cold["ask"].n_prompt_tokens - n_ubatch - 1
    assert shared.n_cached_prompt_tokens >= n_ubatch and shorter.n_cached_prompt_tokens >= n_ubatch


def test_a_prompt_that_extends_a_decoded_answer_reuses_only_what_a_prompt_feed_computed() -> None:
    """A second turn whose prompt holds the first answer: the answer's tokens were decoded one or a few at a
    time, never in the batch a cold prompt puts them in, so they are evaluated again."""
    from localjudge.engine import load_engine
    from localjudge.engine.job import common_prefix

    fmt = YesNoJSON(field_tokens=16)
    # a batch boundary inside the decoded answer the follow-up repeats: where it falls depends on how long the model's
    # answer is (its words are the CPU's and the weight layout's arithmetic), so the first batch size that puts one
    # there is used (100 put it at 400 with the shipped Q4_1 file; 36 at 396 with Q4_0 here); every size is above
    # SPLIT_FREE_UBATCH (32), where prompts are fed at fixed positions and reuse stops at a boundary
    for n_ubatch in (100, 99, 90, 80, 79, 72, 66, 64, 60, 56, 50, 48, 45, 44, 42, 40, 36, 35, 34, 33):
        eng = load_engine(n_threads=1, n_ubatch=n_ubatch)
        try:
            first = eng.generate(ASK, fmt)
            fed = first.n_prompt_tokens + next(i for i, t in enumerate(first.tokens) if not t.forced)  # prompt + forced start
            follow = [*ASK, Message(role="assistant", content=first.text), Message(role="user", content="Are you sure?")]
            cached = eng.prompt_tokens(ASK) + [t.id for t in first.tokens]
            shared = common_prefix(cached, eng.prompt_tokens(follow))
            if shared // n_ubatch * n_ubatch <= fed:
                continue  # no boundary past the fed tokens at this size: the next one
            warm = eng.generate(follow, fmt)
            eng.reset()
            cold = eng.generate(follow, fmt)
            break
        finally:
            eng.close()
    else:
        raise AssertionError("no batch size put a boundary inside the decoded answer the follow-up repeats")
    assert shared // n_ubatch * n_ubatch > fed  # the follow-up shares decoded tokens past a batch boundary
    assert _trace(warm) == _trace(cold)
    assert 0 < warm.n_cached_prompt_tokens <= fed and warm.n_cached_prompt_tokens % n_ubatch == 0
