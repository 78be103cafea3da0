"""Per-turn judging of one conversation on the real default model reuses the KV cache of the history the turns
share: the same outputs, byte for byte, as with a cold cache per prompt, and far fewer prompt tokens evaluated;
the run records how many (`meta["conversations"]["prompt_tokens"]`) and the command line prints it."""

from __future__ import annotations

import pytest

import localjudge
from localjudge.engine.llama import LlamaEngine
from localjudge.run.turns import conversation_lines

pytestmark = pytest.mark.model

JUDGE = "knowledge_retention"  # MLflow's per-turn-minded judge: fixed instructions, then the conversation


def six_turns() -> dict:
    messages = []
    for i in range(6):
        messages += [
            {"role": "user", "content": f"I am Ana, I live in Porto and I keep {i + 1} cats. What food should I buy?"},
            {"role": "assistant", "content": f"For {i + 1} cats in Porto, Ana, buy a {2 * (i + 1)} kg bag of dry food."},
        ]
    return {"id": "ana", "messages": messages}


def judged(tmp_path, name: str, reuse: bool):
    engine = LlamaEngine(None, n_threads=1, reuse_prefix=reuse)
    return localjudge.evaluate([six_turns()], [JUDGE], engine=engine, out=tmp_path / name, conversation="turn")


@pytest.mark.slow
def test_per_turn_judging_reuses_the_shared_history_with_byte_identical_outputs(tmp_path, _localjudge_home):
    warm, cold = judged(tmp_path, "warm", True), judged(tmp_path, "cold", False)
    w, c = list(warm.results), list(cold.results)
    assert [r.turn_index for r in w] == [0, 1, 2, 3, 4, 5]
    assert [r.result.raw_text for r in w] == [r.result.raw_text for r in c]
    assert [r.result.usage.prompt_tokens for r in w] == [r.result.usage.prompt_tokens for r in c]
    # every turn after the first finds the turns before it in the cache: all but what the turn adds
    assert w[0].result.usage.cached_prompt_tokens == 0
    for before, now in zip(w, w[1:], strict=False):
        assert now.result.usage.cached_prompt_tokens >= before.result.usage.prompt_tokens - 16
    assert all(r.result.usage.cached_prompt_tokens == 0 for r in c)

    kv, kv_cold = warm.summary.run["conversations"]["prompt_tokens"], cold.summary.run["conversations"]["prompt_tokens"]
    assert kv["total"] == kv_cold["total"] == sum(r.result.usage.prompt_tokens for r in w)
    assert kv["cached"] == sum(r.result.usage.cached_prompt_tokens for r in w) > 0
    assert kv_cold == {"total": kv["total"], "cached": 0, "evaluated": kv["total"]}
    assert kv["evaluated"] * 3 < kv_cold["evaluated"]  # six turns cost well under half of six independent prompts
    line = conversation_lines(warm.summary.run["conversations"])[-1]
    assert f"{kv['cached']} of them reused from the KV cache" in line
    assert not any("KV cache" in x for x in conversation_lines(cold.summary.run["conversations"]))
