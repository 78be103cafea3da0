"""`localjudge serve` answers byte for byte as before its responses became typed models: key order, keys
omitted versus null, JSON separators (compact bodies, spaced SSE chunks), statuses and content types.

tests/golden/serve/ was captured from the code before the change (`tests/serve_golden_cases.py`, whose
docstring says how); ids, `created` and the uptime are the only parts replaced by fixed text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serve_golden_cases import answers, file_name

GOLDEN = Path(__file__).parent / "golden" / "serve"
INDEX = json.loads((GOLDEN / "index.json").read_text())


@pytest.fixture(scope="module")
def wire(_localjudge_home):
    return answers()


def test_every_golden_case_is_still_served(wire):
    assert sorted(wire) == sorted(INDEX)


@pytest.mark.parametrize("name", sorted(INDEX))
def test_each_answer_is_byte_identical_to_the_golden_one(wire, name):
    got, want = wire[name], INDEX[name]
    assert (got["status"], got["type"]) == (want["status"], want["content_type"])
    assert got["body"].decode() == (GOLDEN / file_name(name, want["content_type"])).read_bytes().decode()
