"""Reasoning judges (issue 23): `think_tokens = N` makes the model think in free text inside
`<think>...</think>` for at most N tokens (force-closed when spent), then write the constrained verdict;
the parsers read the verdict after the block, whichever backend wrote it; cache keys without thinking
are unchanged."""

from __future__ import annotations

import json
import re

import pytest

from localjudge.engine import Message
from localjudge.engine.base import DecodeOptions
from localjudge.formats import make_format
from localjudge.formats.base import strip_think, think_text

ASK = [Message(role="user", content="Is Paris the capital of France? Think first, then answer.")]


@pytest.mark.system
def test_the_output_is_a_think_block_within_n_tokens_then_the_format(engine):
    fmt = make_format("yes_no_json")
    gen = engine.generate(ASK, fmt, DecodeOptions(think_tokens=12))
    m = re.fullmatch(r"<think>\n(.*?)\n</think>\n(\{.*\})", gen.text, re.S)
    assert m is not None, gen.text
    n_open = len(engine.tokenize("<think>\n"))
    assert all(t.forced for t in gen.tokens[:n_open])
    chosen = next(i for i, t in enumerate(gen.tokens[n_open:]) if t.forced)  # the model's think tokens, then the close
    assert 1 <= chosen <= 12 and "".join(t.text for t in gen.tokens[n_open : n_open + chosen]).strip() == m.group(1).strip()
    assert fmt.parse(gen.text).result in ("yes", "no")  # the verdict is read after the block
    assert think_text(gen.text) == m.group(1).strip()
    plain = engine.generate(ASK, fmt)
    assert plain.text.startswith("{") and "<think>" not in plain.text  # no think block unless asked


def test_parsers_strip_a_think_block_from_any_backend_and_leave_other_text_alone():
    fmt = make_format("yes_no_json")
    text = '<think>maybe {"rationale": "decoy", "result": "no"}</think>\n{"rationale": "It is.", "result": "yes"}'
    assert fmt.parse(text).result == "yes"
    assert (
        strip_think("score: 3") == "score: 3"
        and make_format("score_lines", min=1, max=5).parse("<think>x</think>score: 4\njustification: ok").score == 4
    )


def test_think_tokens_zero_keeps_every_cache_key_as_it_was():
    assert "think_tokens" not in DecodeOptions().model_dump()
    assert DecodeOptions(think_tokens=8).model_dump()["think_tokens"] == 8


@pytest.mark.system
def test_a_judge_file_with_think_tokens_thinks_then_judges_and_keeps_its_version_without(engine):
    from localjudge.judges.registry import judge_from_dict

    spec = {
        "name": "polite",
        "variables": [{"name": "reply", "description": "the reply"}],
        "messages": [{"role": "user", "template": "Is this reply polite? {{reply}}"}],
        "output": {"kind": "yes_no_json", "field_tokens": 16},
    }
    plain, thinking = judge_from_dict(spec), judge_from_dict({**spec, "think_tokens": 6})
    assert plain.version == judge_from_dict({**spec, "think_tokens": 0}).version != thinking.version
    result = thinking.evaluate(engine, reply="Thank you so much!")
    assert result.raw_text.startswith("<think>\n") and "\n</think>\n{" in result.raw_text and result.value in ("yes", "no")


def test_a_streamed_reasoning_answer_never_sends_text_it_takes_back():
    """Fed one character at a time, the serve stream's split only ever grows, never shows a marker, and ends
    equal to the whole answer's split (a closing marker or a stop sequence cut in two is held back)."""
    from localjudge.serve.core.reasoning import ThinkSplit, split_reasoning

    for text, hold in (
        ('<think>\nIt is blue.\n</think>\n{"ok": false}', 0),
        ("  <think> a < b </thin </think>  answer ENDX", 3),
        ("no block at all", 0),
        ("<thinking>cut off while thinking", 0),
    ):
        split, last = ThinkSplit(hold), ("", "")
        for i in range(len(text) + 1):
            now = split.parts(text[:i])
            assert now[0].startswith(last[0]) and now[1].startswith(last[1]), (text[:i], last, now)
            assert not any(m in part for m in ("<think>", "</think>", "<thinking>") for part in now), now
            last = now
        reasoning, content = split_reasoning(text)
        assert (reasoning or "").startswith(last[0]) and content.startswith(last[1])
        assert len(content) - len(last[1]) <= hold


@pytest.mark.system
def test_think_tokens_carry_their_top_logprobs_like_the_verdicts_tokens(engine):
    from localjudge.engine.base import GenerateOptions

    gen = engine.generate(ASK, make_format("yes_no_json"), GenerateOptions(think_tokens=6, top_logprobs=3))
    chosen = [t for t in gen.tokens if not t.forced]
    n_think = next(i for i, t in enumerate(gen.tokens) if i > 0 and t.forced and not gen.tokens[i - 1].forced)
    assert any(not t.forced for t in gen.tokens[:n_think])
    assert all(len(t.top) == 3 and t.top[0][1] >= t.top[-1][1] for t in chosen), [t.top for t in chosen]


# ----------------------------------------------------------------------------------------- the served budget

OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}


@pytest.fixture(scope="module")
def one_thread_server(_localjudge_home):
    """`localjudge serve --threads 1 --no-precompile`'s app (the default model on one thread), in this process."""
    from serve_support import serve_inprocess

    with serve_inprocess("--threads", "1", "--no-precompile") as app:
        yield app


def ask(url, **kw) -> tuple[int, dict]:
    from serve_support import post

    rf = {"type": "json_schema", "json_schema": {"name": "Ok", "schema": OK_SCHEMA}}
    messages = [{"role": "user", "content": "Is Paris the capital of France? Think first, then answer."}]
    s, b, _ = post(url, {"model": "smollm2-135m", "messages": messages, "response_format": rf, "logprobs": True, **kw})
    return s, b


@pytest.mark.system  # in process, but the compile guard reads the client schema in a child process
def test_served_max_tokens_bounds_thinking_and_answer_together_and_usage_reports_the_reasoning_part(one_thread_server):
    for max_tokens, think in ((40, 16), (30, 12), (None, 8)):
        s, b = ask(one_thread_server, think_tokens=think, **({"max_tokens": max_tokens} if max_tokens else {}))
        assert s == 200, b
        usage, choice = b["usage"], b["choices"][0]
        reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
        tokens = [t["token"] for t in choice["logprobs"]["content"]]
        assert len(tokens) == usage["completion_tokens"] and usage["total_tokens"] == usage["prompt_tokens"] + len(tokens)
        assert usage["completion_tokens"] <= (max_tokens or 10**9)  # the think block counts toward max_tokens
        # the reasoning part is the think block, markers included; the rest is exactly the answer
        assert "".join(tokens[:reasoning]).startswith("<think>") and "".join(tokens[:reasoning]).endswith("</think>\n")
        assert "".join(tokens[reasoning:]) == choice["message"]["content"] and "ok" in json.loads(choice["message"]["content"])
        model_chosen = [t for t in choice["logprobs"]["content"][:reasoning] if t["logprob"] != 0.0]
        assert 1 <= len(model_chosen) <= think
    s, b = ask(one_thread_server, max_tokens=24)
    assert s == 200 and b["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0  # no think block, none counted


@pytest.mark.system  # in process, but the compile guard reads the client schema in a child process
def test_a_think_budget_that_leaves_the_answer_no_room_is_a_400_naming_think_tokens(one_thread_server):
    from serve_support import assert_openai_error

    s, b = ask(one_thread_server, max_tokens=16, think_tokens=32)
    assert_openai_error(
        s, b, 400, "think_tokens: 32", "of max_tokens 16 for the answer, which needs at least", param="think_tokens"
    )
    assert "raise max_tokens to at least" in b["error"]["message"] and "output tokens" not in b["error"]["message"]
    s, b = ask(one_thread_server, think_tokens=8192)  # no max_tokens: the context is the bound
    assert_openai_error(s, b, 400, "think_tokens: 8192", "of this model's context", "lower think_tokens", param="think_tokens")
    s, b = ask(one_thread_server, max_tokens=24, think_tokens=4)  # room enough: answered, within 24
    assert s == 200 and b["usage"]["completion_tokens"] <= 24, b
