"""Pairwise judges report an expected score: P(the first answer is better) from the verdict's probabilities,
averaged over both orders with --both-orders, so a judge that always picks the first position (about 0.5 on
every pair) can be told apart from one with a weak preference (agree's AUC)."""

from __future__ import annotations

import json
import re

import pytest

from localjudge import evaluate
from localjudge.engine.base import DecodeOptions, ScriptedEngine
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders, both_orders_expected
from localjudge.labels.agreement import agree
from localjudge.report import load_run

PREFIX = '{"better_response": '


def pair_engine(first_bias: float, preference: float) -> ScriptedEngine:
    """P(picks position 1) = first_bias + preference when the answer in position 1 is the good one, else
    first_bias - preference: a position bias plus (maybe) a real preference."""

    def p1(messages) -> float:
        text = messages[-1].content
        first = re.search(r"Response 1: (\w+)", text).group(1)
        return min(max(first_bias + (preference if first == "good" else -preference), 0.0), 1.0)

    return ScriptedEngine(
        lambda m, f: PREFIX + ("1" if p1(m) >= 0.5 else "2") + ', "explanation": "x"}',
        model_id="scripted-pairs",
        choice_steps=lambda m, f: [(PREFIX, {"1": p1(m), "2": 1 - p1(m)})],
    )


def pairs(n: int = 40) -> list[dict]:
    rows = []
    for i in range(n):
        good_first = i % 2 == 0
        rows.append(
            {
                "id": f"p{i}",
                "question": f"q{i}",
                "context": "c",
                "answer_1": "good" if good_first else "bad",
                "answer_2": "bad" if good_first else "good",
                "pref": 1 if good_first else 2,
            }
        )
    return rows


def test_both_orders_expected_averages_the_two_orders():
    assert both_orders_expected(0.8, 0.3) == pytest.approx(0.75)
    assert both_orders_expected(0.9, 0.9) == pytest.approx(0.5)  # always the first position: no preference left
    assert both_orders_expected(None, 0.3) is None and both_orders_expected(0.3, None) is None


@pytest.mark.parametrize(("preference", "auc_range"), [(0.0, (0.49, 0.51)), (0.1, (0.99, 1.0))])
def test_a_position_biased_judge_and_a_weak_preference_are_told_apart(tmp_path, preference, auc_range):
    rows = pairs()
    run = evaluate(
        rows,
        [BothOrders(get_judge("pairwise"))],
        engine=pair_engine(first_bias=0.9, preference=preference),
        out=tmp_path / "run",
        options=DecodeOptions(probs=True),
    )
    results = [r.result for r in run.results]
    assert all(r.value == "tie" for r in results)  # both always pick position 1: every pair is a tie either way
    assert all(r.expected_score is not None for r in results)
    rep = agree(load_run(tmp_path / "run").rows, rows, "pref", judge="pairwise")
    assert rep.kind == "pairwise" and rep.auc_score == "expected_score" and rep.n_auc == len(rows)
    assert auc_range[0] <= rep.auc <= auc_range[1]


def test_single_order_pairwise_results_carry_the_expected_score(tmp_path):
    r = get_judge("pairwise").evaluate(
        pair_engine(0.5, 0.3), options=DecodeOptions(probs=True), question="q", context="c", answer_1="good", answer_2="bad"
    )
    assert r.value == 1 and r.expected_score == pytest.approx(0.8)


@pytest.mark.system
@pytest.mark.slow
def test_the_default_model_reports_a_both_order_expected_score(engine, tmp_path):
    rows = pairs(2)
    rows[0].update(
        answer_1="Paris is the capital of France.", answer_2="Berlin is the capital of France.", question="Capital of France?"
    )
    run = evaluate(
        rows[:1],
        [BothOrders(get_judge("pairwise"))],
        engine=engine,
        out=tmp_path / "real",
        options=DecodeOptions(probs=True, fast=True),
    )
    (r,) = [x.result for x in run.results]
    assert r.scored and r.expected_score is not None and 0.0 <= r.expected_score <= 1.0
    orders = r.details["orders"]
    assert json.dumps(orders) and len(orders) == 2
