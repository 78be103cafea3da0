"""`localjudge serve` driven by the official openai client: json_schema, json_object, tools, streaming,
logprobs, stop sequences and budgets, on the real default model. The client talks to `judge_server`'s app in this
process (`judge_app`: its httpx client is the app's TestClient), the same requests and answers a socket would carry;
`system` tier for the compile guard's child process that reads each client schema."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from localjudge.formats.json_schema import validate

pytestmark = pytest.mark.system

openai = pytest.importorskip("openai")

JUDGEMENT = {  # what MLflow 3.17 sends for its judges (captured by a recording proxy)
    "type": "object",
    "properties": {
        "result": {"description": "The evaluation rating/result", "title": "Result", "type": "string"},
        "rationale": {"description": "Detailed explanation for the evaluation", "title": "Rationale", "type": "string"},
    },
    "required": ["result", "rationale"],
    "title": "JudgeEvaluation",
    "additionalProperties": False,
}
RATING = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}, "verdict": {"enum": ["pass", "fail"]}},
    "required": ["score", "verdict"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "Is Paris the capital of France? Judge the claim and answer in JSON."}]


@pytest.fixture(scope="module")
def client(judge_app):
    """The openai client on the in-process app (its transport is the app's TestClient)."""
    return openai.OpenAI(base_url=judge_app.url, api_key="unused", timeout=600, max_retries=0, http_client=judge_app.client)


def _json_schema(schema: dict, name: str = "Judgement") -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def test_models_lists_the_one_model_with_its_identity(client, judge_app):
    models = client.models.list().data
    assert [m.id for m in models] == [judge_app.model] == ["smollm2-135m"]
    ident = models[0].model_extra["localjudge"]
    assert ident["backend"] == "llama" and len(ident["digest"]) == 64 and ident["settings"] == {"n_parallel": 4}


@pytest.mark.slow
@pytest.mark.parametrize("schema", [JUDGEMENT, RATING], ids=["mlflow_judge_evaluation", "bounded_rating"])
def test_json_schema_without_max_tokens_ends_valid_by_construction(client, schema):
    r = client.chat.completions.create(model="smollm2-135m", messages=ASK, response_format=_json_schema(schema))
    choice = r.choices[0]
    value = json.loads(choice.message.content)
    assert validate(value, schema, schema) is None and list(value) == list(schema["properties"])
    assert choice.finish_reason == "stop" and r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 0


@pytest.mark.slow
def test_json_object_is_one_json_object(client):
    r = client.chat.completions.create(
        model="smollm2-135m", messages=ASK, response_format={"type": "json_object"}, max_tokens=120
    )
    assert isinstance(json.loads(r.choices[0].message.content), dict)


class Person(BaseModel):
    name: str
    age: int


PERSON_TOOL = {
    "type": "function",
    "function": {"name": "Person", "description": "A person mentioned in the text", "parameters": Person.model_json_schema()},
}


@pytest.mark.slow
def test_a_named_tool_choice_answers_a_tool_call_valid_for_its_parameters(client):
    r = client.chat.completions.create(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "Extract the person: John is 30 years old."}],
        tools=[PERSON_TOOL],
        tool_choice={"type": "function", "function": {"name": "Person"}},
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.function.name == "Person"
    Person.model_validate_json(call.function.arguments)


@pytest.mark.slow
def test_tool_choice_required_calls_one_of_the_tools(client):
    other = {"type": "function", "function": {"name": "Skip", "description": "Nothing to extract"}}
    r = client.chat.completions.create(
        model="smollm2-135m",
        messages=[{"role": "user", "content": "Extract the person: Ann is 41."}],
        tools=[PERSON_TOOL, other],
        tool_choice="required",
    )
    call = r.choices[0].message.tool_calls[0]
    args = json.loads(call.function.arguments)
    assert (call.function.name, args) in (("Skip", {}),) or (call.function.name == "Person" and Person.model_validate(args))


@pytest.mark.slow
def test_streaming_sends_the_same_text_as_one_answer_and_the_usage_last(client):
    kw = dict(model="smollm2-135m", messages=ASK, response_format=_json_schema(JUDGEMENT), seed=1)
    whole = client.chat.completions.create(**kw).choices[0].message.content
    parts, finish, usage = [], None, None
    for chunk in client.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True}):
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            parts.append(c.delta.content or "")
            finish = c.finish_reason or finish
    assert "".join(parts) == whole and finish == "stop"
    assert len([p for p in parts if p]) > 1  # streamed as it was decoded, not in one piece
    assert usage is not None and usage.completion_tokens > 0


@pytest.mark.slow
def test_free_text_honours_max_tokens_and_stop_sequences(client):
    msgs = [{"role": "user", "content": "Count from 1 to 20, one number per line."}]
    r = client.chat.completions.create(model="smollm2-135m", messages=msgs, max_tokens=8)
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 8
    full = client.chat.completions.create(model="smollm2-135m", messages=msgs, max_tokens=40).choices[0].message.content
    cut = full.split("\n")[2] if full.count("\n") >= 3 else full[5:8]
    s = client.chat.completions.create(model="smollm2-135m", messages=msgs, max_tokens=40, stop=[cut])
    assert s.choices[0].finish_reason == "stop" and s.choices[0].message.content == full[: full.index(cut)]


@pytest.mark.slow
def test_logprobs_give_each_token_with_its_alternatives(client):
    r = client.chat.completions.create(
        model="smollm2-135m",
        messages=ASK,
        response_format=_json_schema(RATING),
        logprobs=True,
        top_logprobs=3,
    )
    content = r.choices[0].logprobs.content
    assert "".join(t.token for t in content) == r.choices[0].message.content
    chosen = [t for t in content if t.logprob < 0]  # tokens the model chose (forced ones have logprob 0)
    assert chosen and all(len(t.top_logprobs) == 3 for t in chosen)
    assert all(t.top_logprobs[0].logprob >= t.top_logprobs[-1].logprob for t in chosen)
    assert all(bytes(t.bytes).decode("utf-8", "replace") == t.token for t in content)


@pytest.mark.slow
def test_a_conversation_with_a_tool_result_and_content_parts_is_accepted(client):
    msgs = [
        {"role": "system", "content": [{"type": "text", "text": "You are a judge."}]},
        {"role": "user", "content": "Extract the person: Bo is 7."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Person", "arguments": '{"name": "Bo"}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "age is missing; try again"},
    ]
    r = client.chat.completions.create(
        model="smollm2-135m", messages=msgs, tools=[PERSON_TOOL], tool_choice={"type": "function", "function": {"name": "Person"}}
    )
    Person.model_validate_json(r.choices[0].message.tool_calls[0].function.arguments)
