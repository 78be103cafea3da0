"""PPI++ (localjudge.trust.ppi) against the authors' implementation, ppi-python, on the same seeded inputs."""

from __future__ import annotations

import numpy as np
import pytest

from localjudge.errors import InputError
from localjudge.trust import ppi
from localjudge.trust.evidence import carries_information

ppi_py = pytest.importorskip("ppi_py")


def _judge(rng: np.random.Generator, n: int, big_n: int, quality: float, binary: bool) -> tuple[np.ndarray, ...]:
    """Labels (0/1) and the judge's predictions: `quality` 1 = the true probability, 0 = noise."""
    p = rng.beta(0.6, 0.8, n + big_n)
    y = (rng.random(n + big_n) < p).astype(float)
    f = quality * p + (1 - quality) * rng.random(n + big_n)
    if binary:
        f = (f >= 0.5).astype(float)
    return y[:n], f[:n], f[n:]


CASES = [
    (n, big_n, q, b)
    for n, big_n in [(20, 200), (50, 1000), (200, 2000), (500, 600)]
    for q in (0.0, 0.5, 1.0)
    for b in (False, True)
]


@pytest.mark.parametrize(("n", "big_n", "quality", "binary"), CASES)
def test_ppi_mean_matches_ppi_python_estimate_and_interval(n: int, big_n: int, quality: float, binary: bool) -> None:
    rng = np.random.default_rng(1000 * n + big_n + int(10 * quality) + binary)
    y, f, u = _judge(rng, n, big_n, quality, binary)
    ours = ppi.ppi_mean(y.tolist(), f.tolist(), u.tolist(), level=0.95)
    theirs_est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, u, lam=None)))
    lo, hi = ppi_py.ppi_mean_ci(y, f, u, alpha=0.05, lam=None)
    fallbacks = ("the judge's predictions would widen", "the judge carries no information")  # lam = 0, documented
    if ours.lam == 0.0 and ours.note.startswith(fallbacks):
        lo, hi = ppi_py.ppi_mean_ci(y, f, u, alpha=0.05, lam=0)
        theirs_est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, u, lam=0)))
    assert ours.estimate == pytest.approx(theirs_est, abs=1e-9)
    assert ours.interval[0] == pytest.approx(float(np.squeeze(lo)), abs=1e-9)
    assert ours.interval[1] == pytest.approx(float(np.squeeze(hi)), abs=1e-9)
    assert 0.0 <= (ours.lam or 0.0) <= 1.0


def test_labels_only_matches_ppi_python_classical_interval() -> None:
    rng = np.random.default_rng(7)
    y, f, u = _judge(rng, 80, 500, 0.5, False)
    ours = ppi.labels_only(y.tolist())
    lo, hi = ppi_py.ppi_mean_ci(y, f, u, alpha=0.05, lam=0)
    assert ours.interval == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=1e-9)


def test_ppi_interval_is_never_wider_than_labels_only() -> None:
    rng = np.random.default_rng(11)
    for trial in range(300):
        n = int(rng.integers(3, 60))
        y, f, u = _judge(rng, n, int(rng.integers(3, 300)), float(rng.random()), bool(trial % 2))
        assert ppi.ppi_mean(y, f, u).half_width <= ppi.labels_only(y).half_width + 1e-15


def test_uninformative_judge_falls_back_to_labels_only_and_says_so() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(100) < 0.4).astype(float)
    est = ppi.ppi_mean(y, np.zeros(100) + 0.5, np.zeros(1000) + 0.5)  # a judge that always says 0.5
    assert est.lam == 0.0
    assert "no information" in est.note
    assert est.estimate == pytest.approx(y.mean())


def test_informative_judge_narrows_the_interval_and_reports_lambda() -> None:
    rng = np.random.default_rng(5)
    y, f, u = _judge(rng, 100, 5000, 1.0, False)
    est, lab = ppi.ppi_mean(y, f, u), ppi.labels_only(y)
    assert est.lam is not None and est.lam > 0.5
    assert est.half_width < 0.9 * lab.half_width
    assert (est.n_labels, est.n_predictions) == (100, 5100)


def test_estimates_put_rogan_gladen_beside_ppi_from_calibrate() -> None:
    from localjudge.labels.calibration import calibrate

    rng = np.random.default_rng(9)
    y, f, u = _judge(rng, 120, 1000, 1.0, True)
    preds = f.tolist() + u.tolist()
    labels = {i: float(y[i]) for i in range(120)}
    out = ppi.estimates(preds, labels)
    cal = calibrate([p >= 0.5 for p in preds], [(y[i] >= 0.5, preds[i] >= 0.5) for i in range(120)])
    assert out.rogan_gladen is not None and out.rogan_gladen.estimate == cal.corrected
    assert out.rogan_gladen.interval == cal.corrected_ci
    assert out.ppi.estimate == pytest.approx(ppi.ppi_mean(y, f, u).estimate)
    assert out.labels_only.estimate == pytest.approx(y.mean())


def test_estimates_carry_the_rogan_gladen_refusal_for_a_chance_judge() -> None:
    preds = [1.0, 0.0] * 100
    labels = {i: float(i % 4 < 2) for i in range(40)}  # labels unrelated to the alternating verdicts
    out = ppi.estimates(preds, labels)
    assert out.rogan_gladen is None and out.rogan_gladen_refused is not None


def test_paired_difference_matches_ppi_python_on_row_differences() -> None:
    rng = np.random.default_rng(13)
    ya, fa, ua = _judge(rng, 60, 600, 1.0, False)
    yb, fb, ub = _judge(rng, 60, 600, 1.0, False)
    a = (fa.tolist() + ua.tolist(), {i: float(ya[i]) for i in range(60)})
    b = (fb.tolist() + ub.tolist(), {i: float(yb[i]) for i in range(60)})
    d = ppi.ppi_difference(a, b)
    lo, hi = ppi_py.ppi_mean_ci(ya - yb, fa - fb, ua - ub, alpha=0.05, lam=None)
    assert d.method == "ppi++ difference" and d.note.startswith("paired")
    assert d.interval == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=1e-9)


def test_independent_difference_adds_the_two_variances() -> None:
    rng = np.random.default_rng(17)
    ya, fa, ua = _judge(rng, 50, 400, 1.0, False)
    yb, fb, ub = _judge(rng, 70, 300, 0.5, False)
    a = (fa.tolist() + ua.tolist(), {i: float(ya[i]) for i in range(50)})
    b = (fb.tolist() + ub.tolist(), {i: float(yb[i]) for i in range(70)})
    d = ppi.ppi_difference(a, b)
    ea, eb = ppi.ppi_mean(ya, fa, ua), ppi.ppi_mean(yb, fb, ub)
    assert d.note.startswith("independent")
    assert d.estimate == pytest.approx(ea.estimate - eb.estimate)
    assert d.std_error == pytest.approx((ea.std_error**2 + eb.std_error**2) ** 0.5)
    with pytest.raises(InputError, match="paired"):
        ppi.ppi_difference(a, b, paired=True)


def test_too_few_labels_is_an_input_error_naming_the_fix() -> None:
    with pytest.raises(InputError, match="at least 2 labelled rows"):
        ppi.ppi_mean([1.0], [1.0], [0.0, 1.0])
    with pytest.raises(InputError, match="no prediction"):
        ppi.split_rows([0.1, 0.2], {5: 1.0})


def test_a_tuned_lambda_that_would_widen_the_interval_falls_back_to_labels_only() -> None:
    # wild labelled predictions that track the labels (a significant correlation, so the judge is not dismissed as
    # uninformative first), flat unlabelled ones
    y, f, u = [0.0] * 5 + [1.0] * 5, [-10.0, -9.0, -10.0, -11.0, -10.0, 10.0, 9.0, 10.0, 11.0, 10.0], [0.0] * 1000
    assert ppi.tuned_lambda(np.asarray(y), np.asarray(f), np.asarray(u)) == 1.0
    assert carries_information(np.asarray(y), np.asarray(f), 0.95)
    est = ppi.ppi_mean(y, f, u)
    assert est.lam == 0.0 and est.note.startswith("the judge's predictions would widen")
    assert est.interval == ppi.labels_only(y).interval
