"""CONTRIBUTING's recipes "How to add an output format" and "How to add a constraint engine", followed step by step:
a tiny format and a tiny engine, run through the constraint registry on the real model with one thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from localjudge import constraints
from localjudge.constraints import Regex
from localjudge.constraints.automaton import compile_regex
from localjudge.constraints.base import Compiled, ConstraintEngine, TokenVocab
from localjudge.engine import DecodeOptions, Message, load_engine
from localjudge.errors import ParseError
from localjudge.formats import FORMATS, OutputFormat, make_format

pytestmark = pytest.mark.model

PROMPT = [Message(role="user", content="Is the sky blue on a clear day? Answer with a colour word.")]


@pytest.fixture(scope="module")
def one_thread():
    return load_engine(None, n_threads=1)


# --- How to add an output format -------------------------------------------------------------------------


class ColourVerdict(BaseModel):
    colour: str


class Colour(OutputFormat):
    """Step 1-2: a regex format, its parser and normaliser."""

    kind = "recipe_colour"

    def regex(self) -> str:
        return "colour: (blue|grey)"

    def parse(self, text: str) -> ColourVerdict:
        if not text.startswith("colour: "):
            raise ParseError(self.kind, "no 'colour: ' line", text)
        return ColourVerdict(colour=text.removeprefix("colour: ").strip())

    def normalise(self, verdict: Any) -> float:
        return 1.0 if verdict.colour == "blue" else 0.0


def test_the_format_recipe_gives_a_format_the_registry_decodes_on_the_real_model(one_thread, monkeypatch):
    monkeypatch.setitem(FORMATS, Colour.kind, Colour)  # step 3: register it in FORMATS
    fmt = make_format("recipe_colour")
    assert fmt.constraint() == Regex("colour: (blue|grey)")
    assert constraints.engine_for(fmt.constraint()).name == "automaton"
    gen = one_thread.generate(PROMPT, fmt, DecodeOptions())
    assert gen.text in ("colour: blue", "colour: grey")
    assert fmt.normalise(fmt.parse(gen.text)) in (0.0, 1.0)


# --- How to add a constraint engine ------------------------------------------------------------------------


@dataclass(frozen=True)
class OneOf:
    """Step 1: the value: hashable, with a name and the text that compiles."""

    words: tuple[str, ...]
    name = "one_of"

    def text(self) -> str:
        return "|".join(self.words)


class OneOfEngine(ConstraintEngine):
    """Step 2: compiles `OneOf` by handing an alternation to the automaton (its cursor is per request)."""

    name = "recipe_one_of"
    accepts: ClassVar[tuple[type, ...]] = (OneOf,)
    compiled: ClassVar[list[str]] = []

    def compile(self, spec: Any, vocab: TokenVocab) -> Compiled:
        self.compiled.append(spec.text())
        return compile_regex("(" + "|".join(w.replace("|", r"\|") for w in spec.words) + ")", vocab)


class Words(OutputFormat):
    """Step 4: a format that declares the engine's value."""

    kind = "recipe_words"

    def constraint(self) -> OneOf:
        return OneOf(("blue", "green"))

    def parse(self, text: str) -> ColourVerdict:
        return ColourVerdict(colour=text)

    def normalise(self, verdict: Any) -> None:
        return None


def test_the_engine_recipe_registers_an_engine_the_registry_picks_for_its_values(one_thread):
    constraints.register(OneOfEngine())  # step 3
    fmt = Words()
    assert constraints.engine_for(fmt.constraint()).name == "recipe_one_of"
    assert "recipe_one_of" in constraints.names()
    gen = one_thread.generate(PROMPT, fmt, DecodeOptions())
    assert gen.text in ("blue", "green") and OneOfEngine.compiled == ["blue|green"]
    one_thread.generate(PROMPT, fmt, DecodeOptions())
    assert OneOfEngine.compiled == ["blue|green"]  # compiled once, then the engine's in-memory cache
