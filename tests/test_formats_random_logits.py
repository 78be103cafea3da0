"""Every output format a built-in judge uses (52 of them, each stage of the several-call judges included), decoded
by the product's own DecodeJob over the default model's real vocabulary on seeded random logits (tests/random_logits.py,
no weights): each output parses, ends for a reason the format allows, and never passes its token budget. Random
logits reach far more of a format's texts than the real model's few cases (tests/test_formats_real.py keeps those)."""

from __future__ import annotations

import pytest
from random_logits import RandomLogitsEngine

from localjudge.engine import DecodeOptions
from localjudge.formats import OutputFormat
from localjudge.judges import list_judges

# seeds per format: 150 for each of the 51 constrained formats (7,650 decodes, about 4.6 ms each), 5 for free text
# (256 random tokens each, about 50 ms); with the tight budgets below (5,100 more, about 2 ms each), about 45 s of
# decoding on one core of a loaded 2-core machine (2026-12-07; CONTRIBUTING.md: why not 1,000)
SEEDS, FREE_TEXT_SEEDS = 150, 5
OPTS = DecodeOptions(field_tokens=6)  # the real-model cases' cap, so the budgets bind as they do there


def builtin_formats() -> dict[str, OutputFormat]:
    formats: dict[str, OutputFormat] = {}
    for judge in list_judges(plugins=False):
        for fmt in judge.output_formats:
            formats.setdefault(fmt.describe(), fmt)
    return formats


FORMATS = builtin_formats()


@pytest.fixture(scope="module")
def engine():
    eng = RandomLogitsEngine()
    yield eng
    eng.close()


def test_the_formats_are_every_built_in_judges_stages():
    assert len(FORMATS) >= 50 and any(k.startswith("json_schema(") for k in FORMATS)


@pytest.mark.parametrize("key", sorted(FORMATS), ids=lambda k: k[:48])
def test_random_logits_decode_to_a_parsable_output_within_the_budget(engine, key):
    fmt = FORMATS[key]
    budget = OPTS.max_tokens or fmt.max_tokens()
    for seed in range(SEEDS if fmt.constrained else FREE_TEXT_SEEDS):
        g = engine.decode(fmt, seed, OPTS)
        assert g.n_output_tokens <= budget, (key, seed, g.n_output_tokens, budget)
        if fmt.constrained:
            assert g.stop_reason in ("eos", "final"), (key, seed, g.stop_reason, g.text)
            fmt.parse(g.text)  # valid by construction: raises ParseError otherwise


TIGHT_SEEDS = 100  # 5,100 decodes


@pytest.mark.parametrize("key", sorted(k for k, f in FORMATS.items() if f.constrained), ids=lambda k: k[:48])
def test_random_logits_under_a_budget_just_above_the_shortest_output_still_close_within_it(engine, key):
    # max_tokens = the fewest tokens of a complete output + 0..3: the close path must end the output within it at
    # every step, where the cases above (field_tokens 6, the format's own budget) seldom reach the budget at all
    fmt = FORMATS[key]
    shortest = engine.compile(fmt).shortest
    for seed in range(TIGHT_SEEDS):
        budget = shortest + seed % 4
        g = engine.decode(fmt, seed, DecodeOptions(field_tokens=6, max_tokens=budget))
        assert g.n_output_tokens <= budget, (key, seed, g.n_output_tokens, budget, g.text)
        fmt.parse(g.text)  # complete, whichever way it ended
