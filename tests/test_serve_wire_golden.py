"""`localjudge serve` answers byte for byte as before its responses became typed models: key order, keys
omitted versus null, JSON separators (compact bodies, spaced SSE chunks), statuses and content types.

tests/golden/serve/ was captured from the code before the change (`tests/serve_golden_cases.py`, whose
docstring says how); ids, `created` and the uptime are the only parts replaced by fixed text.

The model's free text and logprobs are the CPU's arithmetic: on a llama.cpp build that uses Intel AMX (whose
weights load without its AMX layout, engine/llama_amx.py) three free-text answers differ in their float logprobs
and a few words, nothing else (checked with the floats masked: the same keys, order and separators; two cases
also differ in a second-ranked token or the words). Those three have their bytes from such a machine in
tests/golden/serve/amx/, used there; every other case, and every case elsewhere, is held to the one golden.
"""

from __future__ import annotations

import json
from pathlib import Path

import llama_cpp
import pytest
from serve_golden_cases import answers, file_name

from localjudge.engine.llama_amx import amx_build

GOLDEN = Path(__file__).parent / "golden" / "serve"
INDEX = json.loads((GOLDEN / "index.json").read_text())
KERNELS = GOLDEN / "amx" if amx_build(llama_cpp) else None  # this CPU's own bytes of the free-text cases, if any


def golden(name: str, content_type: str) -> str:
    """The golden bytes of a case: the AMX machines' own for a free-text case on such a machine, else the one."""
    own = KERNELS / file_name(name, content_type) if KERNELS is not None else None
    return (own if own is not None and own.exists() else GOLDEN / file_name(name, content_type)).read_bytes().decode()


@pytest.fixture(scope="module")
def wire(_localjudge_home):
    return answers()


def test_every_golden_case_is_still_served(wire):
    assert sorted(wire) == sorted(INDEX)


@pytest.mark.parametrize("name", sorted(INDEX))
def test_each_answer_is_byte_identical_to_the_golden_one(wire, name):
    got, want = wire[name], INDEX[name]
    assert (got["status"], got["type"]) == (want["status"], want["content_type"])
    assert got["body"].decode() == golden(name, want["content_type"])


def test_only_the_free_text_cases_have_a_variant_for_amx_machines():
    assert sorted(p.stem for p in (GOLDEN / "amx").iterdir()) == ["stream_text", "text_logprobs", "text_stop"]
