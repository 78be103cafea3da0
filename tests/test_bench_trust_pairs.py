"""scripts/benchmarks/bench_trust_pairs.py on scripted pairwise judges of known bias over the real HHH pairs: the pass label is
"humans prefer A" (about half the pairs, by the set's alternating order); a judge that always picks the first
position is at chance for that estimand (PPI++ falls back, Rogan–Gladen refuses), in both orders every pair is a tie;
a judge that picks the human-preferred answer makes PPI++ narrower than labels-only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from localjudge.engine.base import ScriptedEngine
from scripts.benchmarks import bench_trust_models as btm
from scripts.benchmarks import bench_trust_pairs as btp

N_PAIRS = 60


def _judge(rows: list[dict[str, Any]], pick: str, out: Path, *, both_orders: bool) -> btm.Judged:
    """pick 'first': always position 1; 'human': the answer humans preferred, wherever it is shown."""
    chosen = {json.loads(x)["chosen"] for x in btp.DATA.read_text(encoding="utf-8").splitlines() if x.strip()}

    def answer(messages: Sequence[Any], fmt: Any) -> str:
        text = messages[-1].content
        first = text.split("Response 1: ")[-1].split(" • Response 2: ")[0].strip()
        better = 1 if pick == "first" or first in {c.strip() for c in chosen} else 0
        return json.dumps({"better_response": better, "explanation": pick})

    return btp.judge_pairs(rows, out, both_orders=both_orders, engine=ScriptedEngine(answer))


def _cells(table_rows: list[list[str]]) -> list[dict[str, str]]:
    return [dict(zip(btm.HEAD, r, strict=True)) for r in table_rows]


def test_the_pass_label_is_humans_prefer_a_and_about_half_the_pairs_pass() -> None:
    rows = btp.hhh_rows(N_PAIRS)
    assert [r["pref"] for r in rows[:4]] == [1, 2, 1, 2]
    src = [json.loads(x) for x in btp.DATA.read_text(encoding="utf-8").splitlines()[:2]]
    assert rows[0]["answer_1"] == src[0]["chosen"] and rows[1]["answer_2"] == src[1]["chosen"]


@pytest.mark.parametrize("both_orders", [False, True])
def test_a_judge_that_always_picks_the_first_position_is_at_chance_and_ppi_falls_back(tmp_path: Path, both_orders: bool) -> None:
    judged = _judge(btp.hhh_rows(N_PAIRS), "first", tmp_path / "run", both_orders=both_orders)
    assert len(judged.pass_labels) == N_PAIRS and judged.truth == pytest.approx(0.5)
    passed = [bool(r.result.passed) for r in judged.rows]
    assert all(passed) if not both_orders else not any(passed)  # both orders: every pair a tie, so A never wins
    table, notes = btm.table(judged, (10, 20), draws=30, seed=1)
    for c in _cells(table):
        assert c["PPI++ fell back"] == "30/30" and c["RG"] == "30 of 30 refused"
        assert c["PPI++ ±"] == c["labels-only ±"]
    assert notes[0].startswith("PPI++: the judge carries no information here; this is the labels-only estimate")


def test_a_judge_that_picks_the_human_preferred_answer_makes_ppi_narrower(tmp_path: Path) -> None:
    judged = _judge(btp.hhh_rows(N_PAIRS), "human", tmp_path / "run", both_orders=True)
    table, _ = btm.table(judged, (20, 40), draws=30, seed=1)
    for c in _cells(table):
        assert c["PPI++ fell back"] == "0/30" and c["RG"] == ""  # informative: no fallback, no refusal
        assert float(c["PPI++ ±"].lstrip("±")) < float(c["labels-only ±"].lstrip("±"))
    out = btp.report(judged, (20,), 5, 1, True)
    assert "HHH pairs, both orders" in out
    assert "human pass rate 0.500 (the truth)" in out and "TNR 1.00" in out  # never says A wins when humans say B


def test_the_pairs_run_resumes_without_judging_again(tmp_path: Path) -> None:
    rows = btp.hhh_rows(6)
    first = _judge(rows, "human", tmp_path / "run", both_orders=True)
    engine = ScriptedEngine([])  # any call would raise: it has no answer to give
    again = btp.judge_pairs(rows, tmp_path / "run", engine=engine)
    assert engine.calls == 0 and again.pass_labels == first.pass_labels
