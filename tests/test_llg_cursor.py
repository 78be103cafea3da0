"""A compiled llguidance grammar is shared read-only by the requests that use it: what the close path learns while
one request decodes (the order that closed, whether the search beat greedy closing) lives in that request's cursor,
so one request's history never changes another's output."""

from __future__ import annotations

import copy

import pytest

from localjudge import constraints
from localjudge.constraints.llg import CloseState
from localjudge.formats import make_format

pytestmark = pytest.mark.system

# From the start, the first greedy order closes ("[" "n" "]"); inside "(...)" it loops on "," and the second order
# (")" early) is the one that closes: a request that goes there learns the second order.
GRAMMAR = 'start: "[" ITEM "]" | "(" NAME ("," NAME)* ")"\nITEM: /[a-z]+/\nNAME: /[a-z]+/'


def _compiled(engine):
    spec = make_format("grammar", grammar=GRAMMAR, max_tokens=40).constraint()
    return constraints.get("llguidance").compile(spec, engine.vocab)


def _step(engine, cur, text: str, log: list) -> None:
    """Feed `text` byte by byte (single-byte tokens), logging what the cursor offers and its close path."""
    for b in text.encode():
        tok = engine.vocab.byte_token(b)
        ids, can_end, _ = cur.choices(30, False)
        assert tok in ids
        log.append((tuple(ids.tolist()), can_end, cur.settle(tok, 30), cur.distance()))
        cur.advance(tok)
        log.append(("after", tuple(cur._path or ()), cur.distance()))


def test_two_interleaved_requests_see_what_each_sees_alone(engine):
    alone_a, alone_b = [], []
    _step(engine, _compiled(engine).start(None, engine.vocab), "(ab,c)", alone_a)
    _step(engine, _compiled(engine).start(None, engine.vocab), "[xy]", alone_b)

    shared = _compiled(engine)
    a, b = shared.start(None, engine.vocab), shared.start(None, engine.vocab)
    mixed_a, mixed_b = [], []
    for pa, pb in zip(["(a", "b,", "c)"], ["[", "x", "y]"], strict=True):
        _step(engine, a, pa, mixed_a)
        _step(engine, b, pb, mixed_b)
    later = []
    _step(engine, shared.start(None, engine.vocab), "[xy]", later)
    assert (mixed_a, mixed_b, later) == (alone_a, alone_b, alone_b)


def test_decoding_leaves_the_compiled_grammar_as_it_was(engine):
    shared = _compiled(engine)
    before = {k: copy.copy(v) if isinstance(v, (list, dict, CloseState)) else v for k, v in vars(shared).items()}
    _step(engine, shared.start(None, engine.vocab), "(ab,c)", [])
    assert vars(shared) == before
