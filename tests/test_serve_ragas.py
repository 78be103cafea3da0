"""RAGAS 0.4 metrics with `localjudge serve` as their LLM, through an OpenAI client with `base_url` (`judge_app`:
`judge_server`'s app in this process, the client's httpx transport on it; `system` tier for the compile guard's child
process that reads each client schema): in
instructor's TOOLS mode (the schema goes out as a tool's parameters, constrained by the server) every row
is scored; the default `llm_factory` path (instructor JSON mode: json_object, schema only in the prompt)
is measured: each row is scored or fails with RAGAS's own validation error, and the server never errs.

AnswerRelevancy needs embeddings and no embedding model is installable offline here without torch, so
`HashedWords` is a tiny deterministic bag-of-words embedding written for this test (cosine of hashed
word counts): the metric's machinery is real, its similarity is crude."""

from __future__ import annotations

import asyncio
import hashlib
import math

import pytest
from serve_support import healthy

pytestmark = [pytest.mark.system, pytest.mark.slow]
ragas = pytest.importorskip("ragas")

ROWS = [
    ("What is the capital of France?", "Paris is the capital of France.", ["Paris is the capital and largest city of France."]),
    ("How many legs has a spider?", "A spider has six legs.", ["Spiders have eight legs and two body parts."]),
]


def embeddings():
    from ragas.embeddings.base import BaseRagasEmbedding

    class HashedWords(BaseRagasEmbedding):
        def embed_text(self, text, **kwargs):
            v = [0.0] * 256
            for w in text.lower().split():
                v[int(hashlib.sha256(w.strip(".,?!").encode()).hexdigest(), 16) % 256] += 1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            return [x / n for x in v]

        async def aembed_text(self, text, **kwargs):
            return self.embed_text(text)

    return HashedWords()


async def score_all(llm, rows=ROWS) -> list:
    from ragas.metrics.collections import AnswerRelevancy, Faithfulness

    faithfulness, relevancy = Faithfulness(llm=llm), AnswerRelevancy(llm=llm, embeddings=embeddings(), strictness=1)
    out = []
    for question, answer, contexts in rows:
        for metric, kw in ((faithfulness, {"retrieved_contexts": contexts}), (relevancy, {})):
            try:
                out.append((await metric.ascore(user_input=question, response=answer, **kw)).value)
            except Exception as e:  # noqa: BLE001 - measured: what RAGAS raises when the JSON does not validate
                out.append(e)
    return out


def _async_openai(app):
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=app.url, api_key="unused", timeout=1800, http_client=app.async_client(timeout=1800))


def test_ragas_tools_mode_scores_every_row(judge_app):
    import instructor
    from ragas.llms import InstructorLLM

    client = instructor.from_openai(_async_openai(judge_app), mode=instructor.Mode.TOOLS)
    llm = InstructorLLM(client=client, model=judge_app.model, provider="openai")
    values = asyncio.run(score_all(llm))
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in values), values
    assert healthy(judge_app)["errors"] == 0


def test_ragas_default_json_object_mode_is_measured(judge_app, capsys):
    from ragas.llms import llm_factory

    llm = llm_factory(judge_app.model, provider="openai", client=_async_openai(judge_app))
    values = asyncio.run(score_all(llm, ROWS[:1]))  # one row: failing re-asks run to max_tokens 1024 each
    scored = [v for v in values if isinstance(v, float) and not math.isnan(v)]
    failed = [type(v).__name__ for v in values if isinstance(v, Exception)]
    with capsys.disabled():
        print(f"\nRAGAS default (instructor JSON / json_object) mode: {len(scored)}/{len(values)} scored; failures: {failed}")
    assert len(scored) + len(failed) + sum(isinstance(v, float) and math.isnan(v) for v in values) == len(values)
    assert healthy(judge_app)["errors"] == 0
