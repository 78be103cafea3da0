"""PPI++ falls back to labels-only, and says so, when the labelled rows give no evidence that the judge carries
information (issue 33): the one-sided correlation test of trust/evidence.py at the interval's level."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from conftest import cli
from test_trust_wiring import _labels, _run, _truth_and_verdicts

from localjudge.trust import ppi
from localjudge.trust.evidence import correlation_p_value, t_upper_tail

NO_INFO = "the judge carries no information here; this is the labels-only estimate"


def _fallback_share(y: np.ndarray, f: np.ndarray, n: int, draws: int, seed: int) -> float:
    """The share of seeded draws of n labelled rows (without replacement) where PPI++ fell back and said so."""
    rng = np.random.default_rng(seed)
    fell = 0
    for _ in range(draws):
        rows = rng.choice(y.size, n, replace=False)
        est = ppi.ppi_rows(f.tolist(), {int(i): float(y[i]) for i in rows})
        if est.note == NO_INFO:
            assert est.lam == 0.0 and est.interval == pytest.approx(ppi.labels_only(y[rows]).interval, abs=1e-12)
            fell += 1
    return fell / draws


def test_students_t_tail_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 8, 28, 198, 5000):
        for t in (-4.0, -0.7, 0.0, 0.4, 1.7, 2.1, 3.5, 12.0):
            assert t_upper_tail(t, df) == pytest.approx(float(stats.t.sf(t, df)), abs=1e-10)


def test_correlation_p_value_is_one_without_variation_and_zero_for_a_perfect_judge() -> None:
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    assert correlation_p_value(y, np.full(5, 0.9)) == 1.0  # a judge that says the same on every row
    assert correlation_p_value(y[:2], y[:2]) == 1.0  # two rows: no degrees of freedom
    assert correlation_p_value(y, y) == 0.0
    assert correlation_p_value(y, 1 - y) > 0.99  # negatively correlated: no evidence of information either


def test_a_judge_at_chance_falls_back_in_nearly_every_draw_and_an_informative_judge_never() -> None:
    # At chance like SmolLM2 on TruthfulQA: an expected score near 0.9 on every row, varying a little, independent of
    # the labels. Before issue 33 PPI++ fell back in 46-79 % of these draws (the tuned lambda above 0.05 by luck).
    rng = np.random.default_rng(33)
    y = (rng.random(300) < 0.4).astype(float)
    f = np.clip(0.9 + rng.normal(0, 0.03, 300), 0, 1)
    for n in (10, 30, 100):
        assert _fallback_share(y, f, n, 200, seed=n) >= 0.95, n
    # Informative: a sharp expected score at 50 labels, and a pass/fail judge with TPR 0.90 / TNR 0.80 (the
    # simulation's weakest) at 100 (at 50 labels one draw in 200 is unlucky enough, r = 0.20, to give no evidence).
    verdicts = np.where(y == 1, rng.random(300) < 0.9, rng.random(300) >= 0.8).astype(float)
    scores = np.clip(0.2 + 0.6 * y + rng.normal(0, 0.15, 300), 0, 1)
    assert _fallback_share(y, scores, 50, 200, seed=7) == 0.0
    assert _fallback_share(y, verdicts, 100, 200, seed=7) == 0.0


def _agree_ppi_line(tmp: Path, truth: list[bool], verdicts: list[bool]) -> str:
    """The `pass rate by PPI++` line `agree` prints for a real run of these verdicts with the first 80 rows labelled."""
    run, labels = _run(tmp, "run", verdicts), _labels(tmp / "l.jsonl", truth, range(80))
    out = cli("agree", str(run), "--labels", str(labels), "--label-column", "h", "-o", str(tmp / "agreement.json"))
    assert out.returncode == 0, out.stderr
    return next(x for x in out.stdout.splitlines() if "pass rate by PPI++" in x)


@pytest.mark.system
def test_agree_says_a_judge_at_chance_carries_no_information_and_weights_an_informative_one(tmp_path: Path) -> None:
    rng = random.Random(2)  # verdicts at chance that line up with the first 80 labels by luck: "weighted 0.11" before
    truth = [rng.random() < 0.4 for _ in range(200)]
    line = _agree_ppi_line(tmp_path / "chance", truth, [rng.random() < 0.5 for _ in truth])
    assert line.endswith(f"(from the judge's verdict; {NO_INFO})"), line
    line = _agree_ppi_line(tmp_path / "informative", *_truth_and_verdicts(5, 400))  # TPR 0.90 / TNR 0.85
    assert "(from the judge's verdict; the judge's predictions are weighted 0." in line, line
    assert line.endswith("(PPI++ power tuning))"), line
