"""Determinism: the same inputs, model and seed give byte-identical results across two processes
(timings excluded), both greedy and with seeded sampling."""

from __future__ import annotations

import json

import pytest
from conftest import cli

pytestmark = pytest.mark.system

ARGS = [
    "judge",
    "correctness",
    "--field",
    "input=Who wrote Hamlet?",
    "--field",
    "output=Shakespeare wrote it in 1600.",
    "--field",
    "ground_truth=William Shakespeare",
    "--field-tokens",
    "24",
]


def _run(extra: list[str]) -> dict:
    r = cli(*ARGS, *extra)
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    out.pop("timings")
    return out


@pytest.mark.parametrize("extra", [[], ["--temperature", "0.8", "--seed", "3"]], ids=["greedy", "seeded"])
def test_two_processes_give_byte_identical_results(extra):
    a, b = _run(extra), _run(extra)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["unscored_reason"] is None and a["value"] in ("yes", "no")
