"""The judge catalog's one-tool rule (issue 32): a known judge prompt (a RAGAS 0.4 metric prompt here) sent
with exactly one tool and no tool_choice/format, as instructor's TOOLS mode through LiteLLM's `ollama_chat/`
sends it, is answered with a call of that tool, on /api/chat and /v1/chat/completions alike, and says so in
`X-Localjudge-Contract`. Another prompt with one tool, or the same request to a `--no-catalog-formats`
server, is planned as before (auto: the model may write text). The app `localjudge serve` builds, in this process
(tests/serve_support.py `serve_inprocess`; LiteLLM's httpx client on the app's transport), real RAGAS, instructor and
LiteLLM (the catalog's framework text is checked against the installed packages by
tests/test_serve_framework_catalog.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest
from serve_support import healthy, post, serve_inprocess

from localjudge.engine.base import Message
from localjudge.serve.core.catalog import Catalog

ragas = pytest.importorskip("ragas")
ROOT = Path(__file__).resolve().parent.parent
HEADER = "x-localjudge-contract"
ROWS = [
    ("What is the capital of France?", "Paris is the capital of France.", ["Paris is the capital and largest city of France."]),
    ("How many legs has a spider?", "A spider has six legs.", ["Spiders have eight legs and two body parts."]),
]


def _statements_request(model: str, prompt: str | None = None) -> tuple[dict, dict]:
    from ragas.metrics.collections.faithfulness.util import (
        StatementGeneratorInput,
        StatementGeneratorOutput,
        StatementGeneratorPrompt,
    )

    q, a, _ = ROWS[0]
    text = prompt or StatementGeneratorPrompt().to_string(StatementGeneratorInput(question=q, answer=a))
    schema = StatementGeneratorOutput.model_json_schema()
    tool = {"type": "function", "function": {"name": "StatementGeneratorOutput", "description": "x", "parameters": schema}}
    return {"model": model, "messages": [{"role": "user", "content": text}], "tools": [tool], "stream": False}, schema


def test_a_ragas_prompt_is_known_and_its_text_request_gets_the_metrics_contract():
    body, _ = _statements_request("m")
    msgs = [Message(role="user", content=body["messages"][0]["content"])]
    catalog = Catalog.builtin()
    c = catalog.known(msgs)
    assert c is not None and c.judge == "ragas.collections.answer_correctness.util.StatementGeneratorPrompt"
    hit = catalog.tighten(msgs, None)
    assert hit is not None and hit.schema == c.schema and hit.schema["properties"]["statements"]["minItems"] == 1
    changed = [Message(role="user", content=msgs[0].content.replace("Break down", "Break up"))]
    assert catalog.known(changed) is None


@pytest.fixture(scope="module")
def apps(_localjudge_home):
    """Two servers' apps in this process, one thread each (one shared load of the model): the catalog on, and
    `--no-catalog-formats`."""
    with (
        serve_inprocess("--option", "n_threads=1", "--compile-timeout", "20") as on,
        serve_inprocess("--option", "n_threads=1", "--compile-timeout", "20", "--no-catalog-formats") as off,
    ):
        yield on, off


@pytest.mark.system
@pytest.mark.slow
def test_a_known_prompt_with_one_tool_is_answered_with_its_call_on_both_routes(apps):
    on, _ = apps
    body, schema = _statements_request(on.model)
    s, out, h = post(on.host, body, path="/api/chat")
    assert s == 200, out
    (call,) = out["message"]["tool_calls"]
    assert call["function"]["name"] == "StatementGeneratorOutput"
    jsonschema.validate(call["function"]["arguments"], schema)
    assert h[HEADER].startswith("ragas.collections.answer_correctness.util.StatementGeneratorPrompt@") and h[HEADER].endswith(
        "+tool_call"
    )
    s, out, h = post(on, body)
    assert s == 200, out
    (call,) = out["choices"][0]["message"]["tool_calls"]
    jsonschema.validate(json.loads(call["function"]["arguments"]), schema)
    assert out["system_fingerprint"].endswith("+tool_call") and h[HEADER].endswith("+tool_call")


@pytest.mark.system
@pytest.mark.slow
def test_without_the_catalog_or_with_an_unknown_prompt_tools_stay_optional(apps):
    on, off = apps
    body, _ = _statements_request(on.model)
    s, out, h = post(off.host, body, path="/api/chat")
    assert s == 200, out
    assert HEADER not in h and not out["message"].get("tool_calls")  # as before: the small model writes text
    other, _ = _statements_request(on.model, prompt="Tell me a short story about a cat.")
    s, out, h = post(on.host, other, path="/api/chat")
    assert s == 200, out
    assert HEADER not in h and not out["message"].get("tool_calls") and out["message"]["content"]


@pytest.mark.system
@pytest.mark.slow
def test_ragas_faithfulness_through_litellm_ollama_chat_scores_every_row(apps):
    import instructor
    import litellm
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    on, _ = apps
    handler = AsyncHTTPHandler()
    handler.client = on.async_client(timeout=600, follow_redirects=True)  # LiteLLM's own client, on the app

    async def acompletion(*args, **kwargs):
        return await litellm.acompletion(*args, client=handler, **kwargs)

    client = instructor.from_litellm(acompletion)
    llm = llm_factory(f"ollama_chat/{on.model}", provider="litellm", client=client, adapter="litellm", api_base=on.host.url)
    metric = Faithfulness(llm=llm)

    async def score() -> list[float]:
        return [(await metric.ascore(user_input=q, response=a, retrieved_contexts=c)).value for q, a, c in ROWS]

    values = asyncio.run(score())
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in values), values
    assert healthy(on)["errors"] == 0
