"""The interval shown for PPI++ and labels-only (trust/ppi.py `estimates`): ppi-python's normal interval widened by
the continuity correction 0.5 / n on 0/1 labels, so a 95 % interval covers >= 94 % where the normal one does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from localjudge.trust import ppi
from localjudge.trust.judge_trust import estimate_text

Z95 = 1.959963984540054


def test_shown_interval_is_ppi_python_plus_half_a_label_step_over_n_computed_by_hand() -> None:
    # labels 1,1,0,0 on rows 0-3 with predictions equal to them; rows 4-7 unlabelled with predictions 1,0,1,0.
    # lam = cov(y, f) / ((1 + n/N) var(all f, ddof 1)) = 0.25 / (2 * 2/7) = 7/16; estimate = lam/2 + (1/2 - lam/2) = 1/2;
    # y - lam f = 9/16, 9/16, 0, 0 (variance (9/32)^2); var(u) = 1/4, so se^2 = lam^2 (1/4) / 4 + (9/32)^2 / 4.
    out = ppi.estimates([1, 1, 0, 0, 1, 0, 1, 0], {0: 1.0, 1: 1.0, 2: 0.0, 3: 0.0})
    se = math.sqrt((7 / 16) ** 2 / 16 + (9 / 32) ** 2 / 4)
    assert out.ppi.lam == pytest.approx(7 / 16, abs=1e-12)
    assert out.ppi.estimate == pytest.approx(0.5, abs=1e-12)
    assert out.ppi.ppi_python_interval == pytest.approx((0.5 - Z95 * se, 0.5 + Z95 * se), abs=1e-12)
    assert out.ppi.interval == pytest.approx((0.5 - Z95 * se - 1 / 8, 0.5 + Z95 * se + 1 / 8), abs=1e-12)
    lab_se = math.sqrt(0.25 / 4)  # labels-only: the Wald interval of 2 passes in 4, then ± 0.5 / 4
    assert out.labels_only.interval == pytest.approx((0.5 - Z95 * lab_se - 1 / 8, 0.5 + Z95 * lab_se + 1 / 8), abs=1e-12)


def test_correction_is_half_the_labels_lattice_step_over_n() -> None:
    assert ppi.correction_for([0, 1, 1, 0, 1]) == pytest.approx(0.1)
    assert ppi.correction_for([0.0, 0.25, 0.75, 1.0]) == pytest.approx(0.5 * 0.25 / 4)  # a 1–5 score scaled to [0, 1]
    assert ppi.correction_for([1, 1, 1, 1]) == pytest.approx(0.5 / 4)  # one value: treated as pass/fail


def test_shown_interval_is_never_narrower_than_ppi_python_and_never_wider_for_ppi_than_labels_only() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n_rows, n = int(rng.integers(20, 300)), int(rng.integers(2, 15))
        y = (rng.random(n_rows) < rng.random()).astype(float)
        f = np.clip(y * rng.random() + rng.normal(0, rng.random(), n_rows), 0, 1)
        rows = rng.choice(n_rows, n, replace=False)
        out = ppi.estimates(f.tolist(), {int(i): float(y[i]) for i in rows})
        for est in (out.ppi, out.labels_only):
            assert est.ppi_python_interval is not None
            assert est.interval[0] < est.ppi_python_interval[0] and est.interval[1] > est.ppi_python_interval[1]
        assert out.ppi.half_width <= out.labels_only.half_width + 1e-15


def test_shown_interval_reaches_94_percent_in_the_worst_simulation_cell_where_ppi_python_does_not() -> None:
    # The worst cell of scripts/benchmarks/bench_trust_estimators.py: a pass/fail judge (TPR 0.90, TNR 0.80), true rate 0.35,
    # 50 random labels. 300 seeded trials (Monte-Carlo standard error about 1.3 points).
    rng = np.random.default_rng(2)
    shown = raw = 0
    for t in range(300):
        y = (rng.random(1000) < 0.35).astype(float)
        u = rng.random(1000)
        f = np.where(y == 1, u < 0.9, u >= 0.8).astype(float)
        rows = rng.choice(1000, 50, replace=False)
        out = ppi.estimates(f.tolist(), {int(i): float(y[i]) for i in rows}, seed=t)
        assert out.ppi.ppi_python_interval is not None
        shown += out.ppi.interval[0] <= 0.35 <= out.ppi.interval[1]
        raw += out.ppi.ppi_python_interval[0] <= 0.35 <= out.ppi.ppi_python_interval[1]
    assert shown / 300 >= 0.94
    assert raw / 300 < 0.94  # ppi-python's normal interval on the same trials


def test_paired_difference_shows_the_corrected_interval_beside_ppi_pythons() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random(200).round(), rng.random(200).round()
    labels = {i: float(a[i]) for i in range(40)}, {i: float(b[i]) for i in range(40)}
    d = ppi.shown_difference((a.tolist(), labels[0]), (b.tolist(), labels[1]))
    assert d.ppi_python_interval == ppi.ppi_difference((a.tolist(), labels[0]), (b.tolist(), labels[1])).interval
    assert d.ppi_python_interval is not None
    assert d.interval[0] == pytest.approx(d.ppi_python_interval[0] - 0.5 / 40)
    assert d.interval[1] == pytest.approx(d.ppi_python_interval[1] + 0.5 / 40)


def test_estimate_text_names_ppi_pythons_half_width_beside_the_shown_one() -> None:
    out = ppi.estimates([1, 1, 0, 0, 1, 0, 1, 0], {0: 1.0, 1: 1.0, 2: 0.0, 3: 0.0})
    text = estimate_text(out.ppi)
    raw = (out.ppi.ppi_python_interval[1] - out.ppi.ppi_python_interval[0]) * 50 if out.ppi.ppi_python_interval else 0
    assert text.endswith(f"(±{out.ppi.half_width * 100:.1f} points, n=4 labels; ppi-python ±{raw:.1f})")
    assert estimate_text(ppi.labels_only([1, 0, 1])).endswith("n=3 labels)")  # an uncorrected figure names nothing
