"""Trust with fewer labels: small seeded simulations of the estimators (coverage, width, unbiasedness), the label
budget, and the bias report on scripted judges (localjudge.trust.estimates)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders
from localjudge.trust import estimates as te

N_ROWS = 1000


def calibrated(rng: np.random.Generator, n_rows: int = N_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """True labels and a judge's calibrated probabilities (p ~ Beta(0.4, 0.6): true pass rate 0.4)."""
    p = rng.beta(0.4, 0.6, n_rows)
    return (rng.random(n_rows) < p).astype(float), p


def test_ppi_covers_the_true_rate_and_is_never_wider_than_labels_only() -> None:
    rng = np.random.default_rng(20261126)
    hits = {"ppi": 0, "labels": 0, "rg": 0}
    n_rg = 0
    for t in range(200):
        y, p = calibrated(rng)
        rows = rng.choice(N_ROWS, 80, replace=False)
        out = te.estimates(p.tolist(), {int(i): float(y[i]) for i in rows}, seed=t)
        assert out.ppi.half_width <= out.labels_only.half_width
        hits["ppi"] += out.ppi.interval[0] <= 0.4 <= out.ppi.interval[1]
        hits["labels"] += out.labels_only.interval[0] <= 0.4 <= out.labels_only.interval[1]
        if out.rogan_gladen is not None:
            n_rg += 1
            hits["rg"] += out.rogan_gladen.interval[0] <= 0.4 <= out.rogan_gladen.interval[1]
    assert hits["ppi"] / 200 >= 0.9 and hits["labels"] / 200 >= 0.9
    assert n_rg > 150 and hits["rg"] / n_rg >= 0.9


def test_ppi_is_narrower_than_rogan_gladen_for_an_informative_judge() -> None:
    rng = np.random.default_rng(7)
    ppi_w, rg_w = [], []
    for t in range(40):
        y, p = calibrated(rng)
        rows = rng.choice(N_ROWS, 100, replace=False)
        out = te.estimates(p.tolist(), {int(i): float(y[i]) for i in rows}, seed=t)
        assert out.rogan_gladen is not None
        ppi_w.append(out.ppi.half_width)
        rg_w.append(out.rogan_gladen.half_width)
    assert np.mean(ppi_w) < 0.8 * np.mean(rg_w)


def test_sampling_probabilities_follow_uncertainty_keep_a_floor_and_spend_the_budget() -> None:
    p = np.concatenate([np.full(900, 0.001), np.full(100, 0.5)])
    pi = np.asarray(te.sampling_probabilities(te.binary_uncertainty(p), 60, floor_share=0.2))
    assert pi.sum() == pytest.approx(60)
    assert pi[-1] > 5 * pi[0]
    assert pi.min() >= 0.2 * 60 / 1000 - 1e-12 and pi.max() <= 1
    capped = np.asarray(te.sampling_probabilities([0.0] * 990 + [1.0] * 10, 50, floor_share=0.1))
    assert capped.max() == 1.0 and capped.sum() == pytest.approx(50)


def _active_trials(weighted: bool, trials: int = 200) -> np.ndarray:
    rng = np.random.default_rng(99)
    errors = []
    for t in range(trials):
        y, p = calibrated(rng)
        probs = te.sampling_probabilities(te.binary_uncertainty(p), 100)
        rows = te.draw(probs, seed=t)
        if weighted:
            labels = [te.WeightedLabel(row=r, label=float(y[r]), probability=probs[r]) for r in rows]
            errors.append(te.active_mean(p.tolist(), labels).estimate - 0.4)
        else:  # the same labels as a plain random sample: what forgetting the stored probabilities gives
            errors.append(te.ppi_rows(p.tolist(), {r: float(y[r]) for r in rows}).estimate - 0.4)
    return np.asarray(errors)


def test_active_estimate_is_unbiased_with_its_sampling_weights() -> None:
    err = _active_trials(weighted=True)
    se = err.std() / math.sqrt(err.size)
    assert abs(err.mean()) <= 3 * se


def test_active_labels_without_their_weights_give_a_biased_estimate() -> None:
    rng = np.random.default_rng(1)
    y, p = calibrated(rng, 4000)
    probs = te.sampling_probabilities(te.binary_uncertainty(p), 400)
    rows = te.draw(probs, seed=0)
    chosen = np.asarray(probs)[rows]
    assert np.corrcoef(chosen, np.sqrt(p[rows] * (1 - p[rows])))[0, 1] > 0.9  # the uncertain rows were picked
    weighted = te.active_mean(p.tolist(), [te.WeightedLabel(row=r, label=float(y[r]), probability=probs[r]) for r in rows])
    assert weighted.interval[0] <= 0.4 <= weighted.interval[1]
    assert (p[rows].mean() - 0.4) ** 2 > (weighted.estimate - 0.4) ** 2  # the picked rows alone are not the population


def test_active_with_uniform_probabilities_covers_like_a_random_sample() -> None:
    rng = np.random.default_rng(5)
    hits = 0
    for t in range(200):
        y, p = calibrated(rng)
        probs = te.uniform_probabilities(N_ROWS, 100)
        rows = te.draw(probs, seed=t)
        est = te.active_mean(p.tolist(), [te.WeightedLabel(row=r, label=float(y[r]), probability=probs[r]) for r in rows])
        hits += est.interval[0] <= 0.4 <= est.interval[1]
    assert hits / 200 >= 0.9


def test_label_budget_predicts_the_labels_that_reach_the_width() -> None:
    rng = np.random.default_rng(3)
    y, p = calibrated(rng, 5000)
    order = rng.permutation(5000)
    first = order[:40]
    rest = order[40:]
    budget = te.label_budget(y[first].tolist(), p[first].tolist(), p[rest].tolist(), target_half_width=0.04)
    assert budget.ppi is not None and budget.ppi.more is not None and budget.labels_only.more is not None
    assert budget.ppi.more < budget.labels_only.more
    assert budget.text.startswith(f"{budget.ppi.more} more labels to reach ±0.04 (PPI++")
    total = budget.ppi.total_needed
    assert total is not None
    done = order[:total]
    reached = te.ppi_rows(p.tolist(), {int(i): float(y[i]) for i in done})
    assert reached.half_width == pytest.approx(0.04, rel=0.15)


def test_label_budget_assumes_the_worst_when_the_labels_are_all_equal_and_says_so() -> None:
    out = te.label_budget([1.0, 1.0, 1.0], target_half_width=0.05)
    zs, c, w = 1.959963984540054 * 0.5, 0.5, 0.05  # the worst sd; half a pass/fail step (the shown interval's correction)
    need = math.ceil(1 / ((-zs + math.sqrt(zs * zs + 4 * c * w)) / (2 * c)) ** 2)  # zs / sqrt(n) + c / n <= w
    assert need > math.ceil((zs / w) ** 2)  # more than ppi-python's interval alone would need
    assert out.labels_only.assumed_worst_case and out.labels_only.more == need - 3
    assert "assuming the most spread" in out.text


def test_label_budget_says_when_the_width_is_out_of_reach() -> None:
    out = te.label_budget([0.0, 1.0] * 10, [0.5] * 20, [0.5] * 30, target_half_width=0.01)
    assert out.ppi is not None and out.ppi.reachable is False and out.labels_only.reachable is False
    assert "out of reach" in out.text


@pytest.mark.parametrize("width", [1e-300, 5e-324, 1e-7])
def test_label_budget_refuses_a_width_too_small_to_count_in_one_line(width: float) -> None:
    """W near 0 made the quadratic's root cancel to 0 (ZeroDivisionError, a 500 in the view); now a clear refusal."""
    for unlabelled in ([], [0.5] * 30):
        with pytest.raises(InputError, match=r"^the target half-width .* is too small: reaching it would take more than"):
            te.label_budget([0.0, 1.0, 1.0], [0.5] * 3 if unlabelled else [], unlabelled, target_half_width=width)
    assert te.label_budget([0.0, 1.0, 1.0], target_half_width=1e-5).labels_only.more == 8536675154  # as before


PREFIX = '{"better_response": '


def _pairs(n: int) -> list[dict[str, str]]:
    return [{"question": f"q{i}", "context": "c", "answer_1": f"answer a{i}", "answer_2": f"answer b{i}"} for i in range(n)]


def test_a_judge_scripted_to_prefer_the_first_position_is_flagged_with_its_rate_and_interval() -> None:
    rng = np.random.default_rng(11)
    engine = ScriptedEngine(lambda m, f: PREFIX + ("1" if rng.random() < 0.8 else "2") + ', "explanation": "x"}')
    judge = BothOrders(get_judge("pairwise"))
    results = [judge.evaluate(engine, **row) for row in _pairs(60)]
    picks = te.position_picks(results)
    assert len(picks) == 60
    bias = te.position_bias(picks)
    assert bias.flagged and 0.7 <= bias.rate <= 0.9 and bias.interval[0] > 0.5
    assert f"{bias.rate:.0%}" in bias.sentence and "Position bias" in bias.sentence


def test_a_judge_picking_by_content_is_not_flagged() -> None:
    bias = te.position_bias([(1, 2)] * 30 + [(2, 1)] * 30)  # answer A every time, whichever order
    assert not bias.flagged and bias.rate == 0.5


def test_pairs_failing_together_widen_the_position_interval() -> None:
    coin_per_pair = [(1, 1)] * 28 + [(2, 2)] * 22  # each pair's two orders agree by position: half the information
    independent = [(1, 2)] * 14 + [(2, 1)] * 14 + [(1, 1)] * 14 + [(2, 2)] * 8
    a, b = te.position_bias(coin_per_pair), te.position_bias(independent)
    assert a.design_effect > 1.5
    assert a.interval[1] - a.interval[0] > b.interval[1] - b.interval[0]


def test_a_judge_scripted_to_prefer_longer_answers_is_flagged_with_its_length_coefficient() -> None:
    rng = np.random.default_rng(21)
    judge = get_judge("correctness")

    def answer(messages, fmt) -> str:
        words = len(re.findall(r"\bword\b", messages[-1].content))
        yes = rng.random() < 1 / (1 + math.exp(-(words - 40) / 10))
        return json.dumps({"rationale": "Let's think step by step", "result": "yes" if yes else "no"})

    engine = ScriptedEngine(answer)
    lengths = rng.integers(5, 80, 150)
    values = [
        float(judge.evaluate(engine, input="q", output=" ".join(["word"] * int(k)), ground_truth="g").score or 0.0)
        for k in lengths
    ]
    bias = te.length_bias(values, lengths.tolist())
    assert bias.flagged and bias.coefficient > 1 and bias.coefficient_interval[0] > 0
    assert bias.spearman is not None and bias.spearman > 0.4
    assert f"coefficient {bias.coefficient:.2f}" in bias.sentence


def test_length_controlled_rate_removes_a_length_gap_in_pairwise_verdicts() -> None:
    rng = np.random.default_rng(8)
    la, lb = rng.integers(20, 400, 400), rng.integers(20, 400, 400)
    diff = (la - lb) / np.std(la - lb)
    wins = (rng.random(400) < 1 / (1 + np.exp(-(0.4 + 1.5 * diff)))).astype(float)  # A is better, and longer wins
    out = te.length_bias(wins.tolist(), la.tolist(), other_lengths=lb.tolist())
    assert out.flagged
    assert out.length_controlled_interval[0] <= 1 / (1 + math.exp(-0.4)) <= out.length_controlled_interval[1]


def test_a_judge_indifferent_to_length_is_not_flagged() -> None:
    rng = np.random.default_rng(4)
    out = te.length_bias((rng.random(300) < 0.6).astype(float).tolist(), rng.integers(10, 500, 300).tolist())
    assert not out.flagged and out.sentence.startswith("No length bias")


def test_self_preference_flagged_when_the_generator_names_the_judge_model() -> None:
    gens = ["models/SmolLM2-135M-Instruct-Q8_0.gguf"] * 60 + ["gemma3-270m"] * 60
    values = [1.0] * 50 + [0.0] * 10 + [1.0] * 30 + [0.0] * 30
    out = te.self_preference(values, gens, "llama:smollm2-135m-instruct")
    assert out is not None and out.flagged and out.n_own == 60
    assert out.difference == pytest.approx(50 / 60 - 0.5)
    assert "Self-preference" in out.sentence
    assert te.self_preference(values, ["gemma3-270m"] * 120, "smollm2-135m") is None


def test_bias_inputs_that_cannot_be_measured_are_input_errors() -> None:
    with pytest.raises(InputError, match="both orders"):
        te.position_bias([(None, None)])
    with pytest.raises(InputError, match="at least 10 rows"):
        te.length_bias([1.0, 0.0], [3, 4])


def test_bench_script_prints_the_coverage_and_the_active_tables(capsys: pytest.CaptureFixture[str]) -> None:

    from scripts.benchmarks import bench_trust_estimators as bench

    assert bench.main(["--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("| labels | PPI++ cover") == 4 and "**Active vs random labelling**" in out
    assert "3/3" in out  # PPI++ never wider than labels-only, trial by trial


def test_length_bias_of_verdicts_that_are_all_the_same_is_an_input_error_not_a_crash():
    from localjudge.errors import InputError
    from localjudge.trust.bias import length_bias

    with pytest.raises(InputError, match="all 12 verdicts are the same"):
        length_bias([1.0] * 12, [float(10 + i) for i in range(12)])


def test_the_active_interval_is_the_normal_interval_widened_by_half_a_label_step_over_the_labels_count() -> None:
    from localjudge.trust.active import WeightedLabel, active_mean

    f = [0.2, 0.8, 0.5, 0.9, 0.1, 0.6]
    labels = [
        WeightedLabel(row=0, label=0.0, probability=0.5),
        WeightedLabel(row=1, label=1.0, probability=0.5),
        WeightedLabel(row=3, label=1.0, probability=0.8),
    ]
    est = active_mean(f, labels, lam=0.5)
    z = 1.959963984540054
    assert est.ppi_python_interval == pytest.approx((est.estimate - z * est.std_error, est.estimate + z * est.std_error))
    lo, hi = est.ppi_python_interval
    assert est.interval == pytest.approx((lo - 0.5 / 3, hi + 0.5 / 3))  # 0/1 labels: a step of 1, 3 labels


def test_bench_active_bias_is_reported_against_both_the_per_trial_and_the_monte_carlo_standard_error() -> None:

    from scripts.benchmarks import bench_trust_estimators as bte

    cell = bte.ipw_cell([0.1] * 4, [True] * 4, [100] * 4, [0.01, 0.03, -0.01, 0.01], [0.05, 0.05, 0.05, 0.05])
    assert cell.mean_error == pytest.approx(0.01)
    assert cell.error_over_se == pytest.approx(0.2)  # 0.01 / the estimator's own SE 0.05
    mc = float(np.std([0.01, 0.03, -0.01, 0.01], ddof=1)) / 2  # SD / sqrt(4 trials)
    assert cell.mc_se == pytest.approx(mc) and cell.error_over_mc_se == pytest.approx(0.01 / mc)
    row = bte.active_vs_random(bte.JUDGES[0], 3, 1)
    assert len(row) == 5 + 6  # widths and labels, coverage, then mean error and both ratios at 100 and at 200
