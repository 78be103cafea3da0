"""The `grammar` format's token budgets on the real default model: llguidance's lexeme option
`text[max_tokens=N]` bounds one free part (the model would write more), the whole-output `max_tokens`
bounds a grammar whose free part is unbounded (the output still ends valid, never past it: a budget no
completion fits is refused), the same output however slow the machine, and options spelt on an uppercase
terminal are refused with the right spelling."""

from __future__ import annotations

import re
import time

import pytest

from localjudge.engine import Message, llg_search
from localjudge.errors import ConstraintError
from localjudge.formats import make_format
from localjudge.formats.grammar import GrammarError

ASK = [Message(role="user", content="Describe the city of Paris in a long paragraph, with many details.")]
FREE = re.compile(r"Paris is [a-zA-Z ,]+\.")


def _chosen(gen) -> int:
    """Tokens the model chose (the grammar's literals are forced)."""
    return sum(not t.forced for t in gen.tokens)


@pytest.mark.system
@pytest.mark.parametrize("bounded", ["text[max_tokens=5]: /[a-zA-Z ,]+/", "text[max_tokens=5]: TEXT\nTEXT: /[a-zA-Z ,]+/"])
def test_a_rules_max_tokens_bounds_its_free_part_where_the_model_would_write_more(engine, bounded):
    free = engine.generate(ASK, make_format("grammar", grammar='start: "Paris is " text "."\ntext: /[a-zA-Z ,]+/', max_tokens=60))
    short = engine.generate(ASK, make_format("grammar", grammar=f'start: "Paris is " text "."\n{bounded}', max_tokens=60))
    assert FREE.fullmatch(free.text) and FREE.fullmatch(short.text), (free.text, short.text)
    assert _chosen(free) > 6  # left alone, the model writes more than 5 tokens here ...
    assert 1 <= _chosen(short) <= 6  # ... bounded, at most 5 (and perhaps the closing '.' itself)
    assert free.text.startswith(short.text[:-1])  # the same greedy words, cut where the bound ends the lexeme


@pytest.mark.system
def test_an_unbounded_lexeme_ends_valid_inside_a_tight_whole_output_budget(engine):
    fmt = make_format("grammar", grammar='start: "Paris is " TEXT "."\nTEXT: /[a-zA-Z ,]+/', max_tokens=8)
    gen = engine.generate(ASK, fmt)
    assert FREE.fullmatch(gen.text) and gen.n_output_tokens <= 8 and _chosen(gen) >= 1, gen.text


def _fresh(engine, fmt):
    """The generation of `fmt` from a new compile (the engine keeps compiled grammars: its close path is found once)."""
    engine._fsm_cache.pop("llg\0" + fmt.llg_grammar(), None)
    return engine.generate(ASK, fmt)


@pytest.mark.system
def test_the_close_path_and_the_output_are_the_same_however_slow_the_machine(engine, monkeypatch):
    """Issue 29: on a slower machine the close-path search ran out of time, the greedy path (24 filler bytes)
    won and the budget was raised. Here every state the search looks at costs 1 ms more (this search tries
    hundreds): it is bounded by work alone, so the close path, the text and every token id stay the same."""
    fmt = make_format("grammar", grammar='start: "Paris is " TEXT "."\nTEXT: /[a-zA-Z ,]+/', max_tokens=8)
    fast = _fresh(engine, fmt)
    path = list(engine.compile(fmt).path)
    fingerprint = llg_search._fingerprint

    def slow(m, js):
        time.sleep(0.001)
        return fingerprint(m, js)

    monkeypatch.setattr(llg_search, "_fingerprint", slow)
    slowed = _fresh(engine, fmt)
    assert list(engine.compile(fmt).path) == path
    monkeypatch.undo()
    assert FREE.fullmatch(fast.text) and fast.n_output_tokens <= 8, fast.text
    assert (slowed.text, [t.id for t in slowed.tokens]) == (fast.text, [t.id for t in fast.tokens])


@pytest.mark.system
def test_a_compile_time_search_past_its_time_limit_is_refused_never_answered_differently(engine, monkeypatch):
    """The search's only wall-clock bound refuses: with the clock jumping 10 s at each reading, a search that
    tries more than `CLOCK_EVERY` moves is refused in one line naming the limit, never answered with the
    greedy path; the same grammar compiles again once the clock is back."""
    fmt = make_format("grammar", grammar='start: "Paris is " TEXT "."\nTEXT: /[a-zA-Z ,]+/', max_tokens=8)
    engine._fsm_cache.pop("llg\0" + fmt.llg_grammar(), None)
    clock = [time.perf_counter()]

    def jumping() -> float:
        clock[0] += 10.0
        return clock[0]

    monkeypatch.setattr(time, "perf_counter", jumping)
    with pytest.raises(ConstraintError, match=r"time limit \(2 s\); simplify the format") as e:
        engine.generate(ASK, fmt)
    monkeypatch.undo()
    assert isinstance(e.value, llg_search.SearchTimeLimit) and "\n" not in str(e.value)
    assert FREE.fullmatch(engine.generate(ASK, fmt).text)


@pytest.mark.system
@pytest.mark.parametrize(
    "grammar",
    [
        'start: "Paris is " TEXT "."\nTEXT: /[a-zA-Z ,]+/',
        'start: "n=" NUM ";"\nNUM: /[0-9]+/',
        'start: "[" ITEM ("," ITEM)* "]"\nITEM: /[a-z]+/',
        'start: "<" TAG ">" TEXT "</" TAG ">"\nTAG: /[a-z]+/\nTEXT: /[^<]+/',
    ],
    ids=["sentence", "number", "list", "tag"],
)
def test_no_output_exceeds_max_tokens_and_a_budget_no_completion_fits_is_refused(engine, grammar):
    """Unbounded lexemes under the tightest budgets: every budget from the shortest completion up ends valid
    within it; one token fewer is refused before decoding, naming max_tokens and the minimum (never raised)."""
    compiled = engine.compile(make_format("grammar", grammar=grammar))
    shortest = compiled.shortest
    for budget in (shortest, shortest + 1, shortest + 3):
        gen = engine.generate(ASK, make_format("grammar", grammar=grammar, max_tokens=budget))
        m = compiled.start(None, engine.vocab).m  # a fresh matcher accepts the output's tokens as a whole sentence
        assert gen.n_output_tokens <= budget and m.consume_tokens([t.id for t in gen.tokens]) and m.is_accepting(), (
            budget,
            gen.text,
        )
    with pytest.raises(ConstraintError, match=f"^max_tokens: {shortest - 1} is too few .*\\({shortest} tokens\\); raise it$"):
        engine.generate(ASK, make_format("grammar", grammar=grammar, max_tokens=shortest - 1))


@pytest.mark.system
def test_a_per_part_bound_lets_a_free_part_followed_by_a_literal_close_inside_the_budget(engine):
    """Without the bound this grammar is refused today (the greedy close path never reaches " END"); with it the
    lexeme ends after its tokens and the literal follows, within the whole-output budget."""
    fmt = make_format("grammar", grammar='start: "Paris is " text " END"\ntext[max_tokens=20]: /[a-zA-Z ,.]+/', max_tokens=30)
    gen = engine.generate(ASK, fmt)
    assert re.fullmatch(r"Paris is [a-zA-Z ,.]+ END", gen.text) and gen.n_output_tokens <= 30 and _chosen(gen) <= 21, gen.text


def test_options_on_an_uppercase_terminal_are_refused_with_the_right_spelling():
    with pytest.raises(GrammarError, match=r"lowercase rule, not on the terminal TEXT: write `text\[\.\.\.\]: /\.\.\./`"):
        make_format("grammar", grammar='start: "A " TEXT "."\nTEXT[max_tokens=5]: /[a-z ]+/\n')
    with pytest.raises(GrammarError, match="unknown name") as e:  # other errors keep llguidance's reason alone
        make_format("grammar", grammar="start: nowhere")
    assert "lowercase rule" not in str(e.value)
