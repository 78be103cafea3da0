"""`POST /v1/responses` (OpenAI's Responses API) on `localjudge serve`, driven by the official openai client
(`responses.create`, `.parse`, `.stream`) and by openai-agents (`Agent(output_type=...)` on an
`OpenAIResponsesModel`), on the real default model (one thread), on the app `localjudge serve` builds, in this process
(tests/serve_support.py `serve_inprocess`: the clients' httpx transport is the app's TestClient; `system` tier for the
compile guard's child process that reads each client schema); every bad input is a 400 in OpenAI's error shape naming
the Responses parameter."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel
from serve_support import healthy, post, serve_inprocess

from localjudge.formats.json_schema import validate

pytestmark = pytest.mark.system

openai = pytest.importorskip("openai")

MODEL = "smollm2-135m"
RATING = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}, "verdict": {"enum": ["pass", "fail"]}},
    "required": ["score", "verdict"],
    "additionalProperties": False,
}
RATING_FORMAT = {"format": {"type": "json_schema", "name": "rating", "schema": RATING, "strict": True}}


class Verdict(BaseModel):
    grounded: bool
    reason: str


@pytest.fixture(scope="module")
def app(_localjudge_home):
    with serve_inprocess("--option", "n_threads=1", "--compile-timeout", "20") as a:
        yield a


@pytest.fixture(scope="module")
def client(app):
    return openai.OpenAI(base_url=app.url, api_key="unused", timeout=600, max_retries=0, http_client=app.client)


def test_create_answers_a_string_input_under_instructions_within_max_output_tokens(client):
    r = client.responses.create(model=MODEL, instructions="Answer briefly.", input="Name a colour.", max_output_tokens=8)
    assert r.object == "response" and r.id.startswith("resp_") and r.output[0].type == "message"
    assert r.output_text and r.usage.output_tokens <= 8 and r.usage.input_tokens > 0
    assert r.status in ("completed", "incomplete") and (r.status == "incomplete") == (r.incomplete_details is not None)


def test_text_format_json_schema_is_valid_by_construction_and_messages_input_works(client):
    msgs = [
        {"role": "system", "content": "You are a judge."},
        {"role": "user", "content": [{"type": "input_text", "text": "Rate: 2+2=4."}]},
    ]
    r = client.responses.create(model=MODEL, input=msgs, text=RATING_FORMAT)
    assert r.status == "completed" and validate(json.loads(r.output_text), RATING, RATING) is None


def test_parse_returns_the_pydantic_model(client):
    r = client.responses.parse(
        model=MODEL, input="Is 'Paris is in France' grounded in 'Paris is the capital of France'?", text_format=Verdict
    )
    assert isinstance(r.output_parsed, Verdict)


def test_stream_sends_the_events_in_order_and_the_same_text_as_one_answer(client):
    ask = "Is 'the sky is green' grounded in 'the sky is blue'?"
    whole = client.responses.parse(model=MODEL, input=ask, text_format=Verdict)
    with client.responses.stream(model=MODEL, input=ask, text_format=Verdict) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == final.output_text == whole.output_text and final.output_parsed == whole.output_parsed


def test_reasoning_effort_thinks_before_the_constrained_answer(client):
    r = client.responses.create(model=MODEL, input="Rate: 2+2=4.", text=RATING_FORMAT, reasoning={"effort": "low"})
    assert [o.type for o in r.output] == ["reasoning", "message"]
    assert r.output[0].content[0].text and "<think>" not in r.output_text
    assert validate(json.loads(r.output_text), RATING, RATING) is None
    assert 0 < r.usage.output_tokens_details.reasoning_tokens <= 128 + 16  # the markers on top


def test_a_named_function_tool_answers_a_call_with_valid_arguments(client):
    tool = {"type": "function", "name": "grade", "description": "Grade it.", "parameters": RATING, "strict": True}
    r = client.responses.create(
        model=MODEL, input="Grade: 2+2=4.", tools=[tool], tool_choice={"type": "function", "name": "grade"}
    )
    call = r.output[0]
    assert call.type == "function_call" and call.name == "grade" and call.call_id
    assert validate(json.loads(call.arguments), RATING, RATING) is None
    follow = client.responses.create(
        model=MODEL,
        input=[
            {"role": "user", "content": "Grade: 2+2=4."},
            {"type": "function_call", "call_id": call.call_id, "name": "grade", "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "recorded"},
        ],
        max_output_tokens=8,
    )
    assert follow.output[0].type == "message"


def test_logprobs_come_with_the_text_when_included(client):
    r = client.responses.create(
        model=MODEL, input="Rate: 2+2=4.", text=RATING_FORMAT, include=["message.output_text.logprobs"], top_logprobs=3
    )
    part = r.output[0].content[0]
    assert "".join(t.token for t in part.logprobs) == part.text
    chosen = [t for t in part.logprobs if t.logprob < 0]
    assert chosen and all(len(t.top_logprobs) == 3 for t in chosen)


RAG = [
    ("What is the capital of France?", "Paris is the capital of France.", "Paris is the capital and largest city of France."),
    ("How many legs has a spider?", "A spider has six legs.", "Spiders have eight legs and two body parts."),
    ("When did Apollo 11 land?", "Apollo 11 landed in 1969.", "Apollo 11 landed on the Moon on 20 July 1969."),
    ("What is water made of?", "Water is hydrogen and oxygen.", "A water molecule has two hydrogen atoms and one oxygen atom."),
    ("Who wrote Hamlet?", "Hamlet was written by Dickens.", "Hamlet is a tragedy written by William Shakespeare."),
]


@pytest.fixture
def agents(monkeypatch):
    """openai-agents, made to run with the venv's openai: agents 0.13.6 builds its empty usage as
    `InputTokensDetails(cached_tokens=0)`, which openai 2.54 refuses (`cache_write_tokens` became required),
    so no run can start. The client-side default gets the field; nothing the server sends is touched."""
    agents = pytest.importorskip("agents")
    from openai.types.responses.response_usage import InputTokensDetails

    class Details(InputTokensDetails):
        cache_write_tokens: int = 0

    monkeypatch.setattr(agents.usage, "InputTokensDetails", Details)
    return agents


@pytest.mark.slow
def test_openai_agents_output_type_parses_on_five_rag_cases(app, agents):
    agents.set_tracing_disabled(True)
    model = agents.OpenAIResponsesModel(
        model=MODEL,
        openai_client=openai.AsyncOpenAI(base_url=app.url, api_key="unused", max_retries=0, http_client=app.async_client()),
    )
    judge = agents.Agent(
        name="groundedness",
        instructions="Decide whether the answer is grounded in the context.",
        output_type=Verdict,
        model=model,
        model_settings=agents.ModelSettings(max_tokens=96),
    )

    async def all_cases() -> list[Verdict]:  # one event loop: the async client's connections belong to it
        return [(await agents.Runner.run(judge, f"Question: {q}\nAnswer: {a}\nContext: {c}")).final_output for q, a, c in RAG]

    outs = asyncio.run(all_cases())
    assert len(outs) == 5 and all(isinstance(v, Verdict) for v in outs)


@pytest.mark.parametrize(
    ("extra", "param", "words"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id", "stores no responses"),
        ({"background": True}, "background", "not supported"),
        ({"tools": [{"type": "web_search"}]}, "tools[0].type", "function tools"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            "input[0].content",
            "input_image",
        ),
        ({"input": [{"type": "message", "content": "hi"}]}, "input[0]", "needs a role"),
        ({"input": []}, "input", "no message"),
        ({"text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format.schema", "needs its JSON schema"),
        (
            {"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object", "minProperties": "x"}}}},
            "text.format",
            "minProperties",
        ),
        ({"text": {"format": {"type": "xml"}}}, "text.format.type", "Input should be"),
        ({"reasoning": {"effort": "extreme"}}, "reasoning.effort", "Input should be"),
        ({"max_output_tokens": 0}, "max_output_tokens", "greater than or equal"),
        ({"temperature": 3}, "temperature", "less than or equal"),
        ({"tool_choice": {"type": "file_search"}}, "tool_choice", "expected"),
        ({"model": "gpt-4o"}, "model", "does not exist"),
    ],
)
def test_each_bad_input_is_an_openai_shaped_4xx_naming_the_responses_parameter(app, extra, param, words):
    status, body, _ = post(app, {"model": MODEL, "input": "hi", **extra}, path="/responses")
    assert status == (404 if param == "model" else 400), body
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["param"] == param and words in err["message"], err
    assert "\n" not in err["message"] and healthy(app)


def test_max_output_tokens_too_few_for_the_schema_names_max_output_tokens(app):
    body = {"model": MODEL, "input": "hi", "text": RATING_FORMAT, "max_output_tokens": 1}
    status, out, _ = post(app, body, path="/responses")
    assert (
        status == 400 and out["error"]["param"] == "max_output_tokens" and out["error"]["message"].startswith("max_output_tokens")
    )


def test_a_streamed_reasoning_request_sends_the_reasoning_item_then_the_message(client, app):
    body = {"model": MODEL, "input": "Rate: 2+2=4.", "text": RATING_FORMAT, "reasoning": {"effort": "low"}}
    whole = client.responses.create(**body)
    with client.responses.stream(**body) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds.index("response.reasoning_text.done") < kinds.index("response.content_part.added")
    thought = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    said = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert thought == final.output[0].content[0].text == whole.output[0].content[0].text
    assert said == final.output_text == whole.output_text and [o.id for o in final.output] == [
        e.item.id for e in events if e.type == "response.output_item.done"
    ]


def test_a_streamed_function_call_comes_whole_at_the_end(client):
    tool = {"type": "function", "name": "grade", "parameters": RATING}
    with client.responses.stream(
        model=MODEL, input="Grade: 2+2=4.", tools=[tool], tool_choice={"type": "function", "name": "grade"}
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert "response.function_call_arguments.done" in kinds and "response.output_text.delta" not in kinds
    call = final.output[0]
    assert call.type == "function_call" and validate(json.loads(call.arguments), RATING, RATING) is None
