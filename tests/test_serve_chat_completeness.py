"""Chat completions on `localjudge serve` beyond one schema: `tools` and `response_format` in one request
(the answer is a call of a tool or content valid for the schema), `strict` checked, `logprobs` /
`top_logprobs` as DeepEval's G-Eval requests them, and logprobs that cover only the answer of a reasoning
request; on the real default model (one thread), on the app `localjudge serve` builds, in this process
(tests/serve_support.py `serve_inprocess`: the clients' httpx transport is the app's TestClient); `system` tier for the
compile guard's child process that reads each client schema."""

from __future__ import annotations

import json

import pytest
from serve_support import post, serve_inprocess

from localjudge.formats.json_schema import validate
from localjudge.serve import protocol
from localjudge.serve.core.wire import ChatRequest

openai = pytest.importorskip("openai")

MODEL = "smollm2-135m"
RATING = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}, "verdict": {"enum": ["pass", "fail"]}},
    "required": ["score", "verdict"],
    "additionalProperties": False,
}
LOOKUP = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": 20}},
    "required": ["query"],
    "additionalProperties": False,
}
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Search the docs.", "parameters": LOOKUP}}]
RF = {"type": "json_schema", "json_schema": {"name": "rating", "schema": RATING, "strict": True}}


@pytest.fixture(scope="module")
def app(_localjudge_home):
    with serve_inprocess("--option", "n_threads=1", "--compile-timeout", "20") as a:
        yield a


@pytest.fixture(scope="module")
def client(app):
    return openai.OpenAI(base_url=app.url, api_key="unused", timeout=600, max_retries=0, http_client=app.client)


def test_tools_and_a_response_format_constrain_to_a_call_or_the_schema():
    req = ChatRequest.model_validate(
        {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "tools": TOOLS, "response_format": RF}
    )
    p = protocol.plan(req, field_tokens=80)
    call, answer = p.schema["anyOf"]
    assert call["properties"]["name"] == {"const": "lookup"} and call["properties"]["arguments"] == LOOKUP
    assert answer == RATING and p.tool_mode == "auto"


@pytest.mark.system
def test_tools_and_a_response_format_answer_a_valid_call_or_valid_content(client):
    ask = [{"role": "user", "content": "Look up 'capital of France' with the lookup function."}]
    r = client.chat.completions.create(model=MODEL, messages=ask, tools=TOOLS, response_format=RF)
    msg = r.choices[0].message  # the schema alone (before) left no way to call the tool
    assert r.choices[0].finish_reason == "tool_calls" and msg.content is None and msg.tool_calls[0].function.name == "lookup"
    assert validate(json.loads(msg.tool_calls[0].function.arguments), LOOKUP, LOOKUP) is None
    r = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Rate: 2+2=4."}], tools=TOOLS, response_format=RF
    )
    msg = r.choices[0].message
    if msg.tool_calls:
        assert validate(json.loads(msg.tool_calls[0].function.arguments), LOOKUP, LOOKUP) is None
    else:
        assert validate(json.loads(msg.content), RATING, RATING) is None


@pytest.mark.system
@pytest.mark.parametrize(
    ("extra", "param"),
    [
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": RATING, "strict": "yes please"}}},
            "response_format",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": LOOKUP, "strict": "maybe"}}]},
            "tools[0].function.strict",
        ),
    ],
)
def test_strict_that_is_not_a_boolean_is_a_400_naming_it(app, extra, param):
    status, body, _ = post(app, {"model": MODEL, "messages": [{"role": "user", "content": "x"}], **extra})
    assert status == 400 and body["error"]["param"] == param and "strict" in body["error"]["message"]


@pytest.mark.system
def test_deepeval_geval_raw_response_request_parses_and_weights_the_score(app):
    deepeval = pytest.importorskip("deepeval")
    from deepeval.metrics.g_eval.utils import calculate_weighted_summed_score
    from deepeval.models import GPTModel

    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 9}, "reason": {"type": "string", "maxLength": 60}},
        "required": ["score", "reason"],
        "additionalProperties": False,
    }
    rf = {"type": "json_schema", "json_schema": {"name": "geval", "schema": schema, "strict": True}}
    model = GPTModel(
        model=MODEL, base_url=app.url, api_key="unused", http_client=app.client, generation_kwargs={"response_format": rf}
    )
    prompt = (
        "Evaluation steps: check the answer against the context.\nContext: Paris is in France.\nAnswer: Paris.\nGive a score 0-9."
    )
    completion, _ = model.generate_raw_response(prompt, top_logprobs=20)
    raw = json.loads(completion.choices[0].message.content)
    weighted = calculate_weighted_summed_score(raw["score"], completion)
    assert deepeval and 0 <= weighted <= 9
    digit = next(t for t in reversed(completion.choices[0].logprobs.content) if t.token == str(raw["score"]))
    assert len(digit.top_logprobs) == 20 and digit.logprob < 0
