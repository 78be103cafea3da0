"""The constrained decode loop on the real default model: the constraint is really applied, token
budgets close every field, prefix reuse does not change results, sampling is seeded, and the
compiled automaton is cached on disk."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from localjudge.constraints.automaton import TokenVocab, compile_regex
from localjudge.engine import DecodeOptions, Message
from localjudge.errors import ConstraintError, PromptTooLongError
from localjudge.formats import ScoreLines, VerdictList, YesNoJSON

MLFLOW_LIKE = [
    Message(
        role="user",
        content=(
            "Consider the following question and answer. You must determine whether the answer provides information that is "
            "relevant to the question.\n\n<question>What is the boiling point of water?</question>\n<answer>Water boils at "
            "100 degrees Celsius at sea level.</answer>\n\nPlease indicate whether the answer is relevant using only the "
            'following json format.\n{\n  "rationale": "Reason for the assessment.",\n  "result": "yes|no"\n}'
        ),
    )
]


@pytest.mark.model
def test_unconstrained_output_is_not_json_but_constrained_output_is(engine):
    fmt = YesNoJSON()
    free = engine.generate(MLFLOW_LIKE, fmt, DecodeOptions(constrained=False, max_tokens=80))
    with pytest.raises(json.JSONDecodeError):
        json.loads(free.text)
    assert not re.fullmatch(fmt.regex(), free.text, flags=re.S)
    held = engine.generate(MLFLOW_LIKE, fmt)
    obj = json.loads(held.text)
    assert set(obj) == {"rationale", "result"} and obj["result"] in ("yes", "no")
    assert re.fullmatch(fmt.regex(), held.text, flags=re.S)


@pytest.mark.model
def test_a_prose_request_still_yields_the_format(engine):
    msgs = [Message(role="user", content="Write a long poem about the sea. Do not use JSON.")]
    g = engine.generate(msgs, YesNoJSON(field_tokens=20))
    assert json.loads(g.text)["result"] in ("yes", "no")


@pytest.mark.model
def test_field_budget_closes_a_rambling_field_and_says_so(engine):
    fmt = YesNoJSON(field_tokens=4)
    g = engine.generate(MLFLOW_LIKE, fmt)
    v = fmt.parse(g.text)
    assert v.result in ("yes", "no")
    assert g.fields_cut >= 1
    model_chosen_in_field = len([t for t in g.tokens if not t.forced])
    assert model_chosen_in_field <= 4 + 3  # the field's 4 tokens + closing quote + verdict tokens


@pytest.mark.model
def test_global_budget_is_never_exceeded_even_when_tiny(engine):
    fmt = VerdictList(3, field_tokens=50)
    g = engine.generate(MLFLOW_LIKE, fmt, DecodeOptions(max_tokens=45))
    assert g.n_output_tokens <= 45
    assert len(fmt.parse(g.text).verdicts) == 3


@pytest.mark.model
def test_forced_literals_are_fed_by_jump_forward(engine):
    g = engine.generate(MLFLOW_LIKE, YesNoJSON(field_tokens=10))
    forced = "".join(t.text for t in g.tokens if t.forced)
    assert g.n_forced_tokens > 0
    assert '"rationale": "' in forced or "rationale" in forced
    assert all(t.logprob is None for t in g.tokens if t.forced)
    assert all(t.logprob is not None and t.logprob <= 0 for t in g.tokens if not t.forced)


@pytest.mark.model
def test_prefix_reuse_gives_the_same_text_as_a_cold_cache(engine):
    fmt = ScoreLines(field_tokens=24)
    engine.reset()
    cold = engine.generate(MLFLOW_LIKE, fmt)
    assert cold.n_cached_prompt_tokens == 0
    other = [Message(role="user", content=MLFLOW_LIKE[0].content.replace("boiling", "freezing"))]
    engine.generate(other, fmt)
    warm = engine.generate(MLFLOW_LIKE, fmt)
    assert warm.n_cached_prompt_tokens > 0.3 * warm.n_prompt_tokens
    assert warm.text == cold.text


@pytest.mark.model
def test_a_long_prompt_gives_the_same_text_cold_after_itself_and_after_a_prompt_sharing_its_prefix():
    """Past ~32 tokens llama.cpp computes a batch through other kernels, and with 2 threads a lone token rounds
    differently: small physical batches and never a one-token prompt feed keep cold and warm identical."""
    from localjudge.engine import load_engine

    facts = " ".join(f"fact {i}: item {i} weighs {i * 3} grams." for i in range(20))
    ask = [Message(role="user", content=facts + "\nQuestion: what does item 7 weigh? Answer: 21 grams. Correct? Explain.")]
    other = [Message(role="user", content=facts + "\nQuestion: what does item 9 weigh? Answer: 5 grams, I think.")]
    fmt = YesNoJSON(field_tokens=48)
    eng = load_engine(n_threads=2)
    try:
        cold = eng.generate(ask, fmt)
        again = eng.generate(ask, fmt)
        eng.generate(other, fmt)
        shared = eng.generate(ask, fmt)
    finally:
        eng.close()
    assert again.text == cold.text and shared.text == cold.text
    assert cold.n_prompt_tokens > 300 and cold.n_cached_prompt_tokens == 0
    assert again.n_cached_prompt_tokens == cold.n_prompt_tokens - 2
    assert 250 < shared.n_cached_prompt_tokens < cold.n_prompt_tokens - 2


@pytest.mark.model
def test_seeded_sampling_is_reproducible(engine):
    fmt = YesNoJSON(field_tokens=16)
    a = engine.generate(MLFLOW_LIKE, fmt, DecodeOptions(temperature=1.0, seed=7))
    b = engine.generate(MLFLOW_LIKE, fmt, DecodeOptions(temperature=1.0, seed=7))
    assert a.text == b.text
    assert fmt.parse(a.text).result in ("yes", "no")


@pytest.mark.model
def test_prompt_longer_than_the_context_is_refused_with_its_length(engine):
    long = [Message(role="user", content="word " * 6000)]
    with pytest.raises(PromptTooLongError) as e:
        engine.generate(long, YesNoJSON())
    assert e.value.n_prompt > 4000 and e.value.n_ctx == engine.n_ctx
    assert "context window" in str(e.value) and "--n-ctx" in str(e.value)


@pytest.mark.model
def test_compiled_automaton_is_cached_on_disk(engine):
    rx = YesNoJSON().regex() + "x"  # a regex no other test compiles
    first = compile_regex(rx, engine.vocab)
    second = compile_regex(rx, engine.vocab)
    assert not first.from_cache and second.from_cache
    assert np.array_equal(first.ids, second.ids) and np.array_equal(first.dist, second.dist)


@pytest.mark.model
def test_distance_to_final_counts_tokens(engine):
    fsm = compile_regex(r'\{"a": "(yes|no)"\}', engine.vocab)
    assert fsm.dist[fsm.initial] >= 1
    assert all(fsm.dist[s] == 0 for s in np.nonzero(fsm.final)[0])


def test_a_vocabulary_that_cannot_spell_the_format_is_rejected():
    vocab = TokenVocab(pieces=[b"", b"a", b"b", b"c"], eos_ids=[0])
    with pytest.raises(ConstraintError, match="vocabulary"):
        compile_regex(r"yes|no", vocab, use_cache=False)
