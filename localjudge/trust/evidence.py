"""Whether the labelled rows give evidence that a judge carries information: the one-sided test that the correlation
between the judge's predictions and the human labels is above zero (Student's t with n - 2 degrees of freedom).

PPI++ (`ppi.ppi_mean`) uses the judge only when this test rejects at the interval's own level (two-sided
significance 1 - level, positive side: a negative correlation already gives lambda = 0). Without that, a judge at
chance gets a tuned lambda well above zero in small draws whenever its predictions line up with the labels by luck,
and the result reads "weighted" while the interval is barely narrower than the labels-only one. For 0/1 labels the
test is the pooled two-sample t-test of the predictions between passing and failing rows, so it needs no normality of
the labels. The t distribution is computed here (regularised incomplete beta, Lentz's continued fraction) so the
core needs no scipy; tests/test_ppi_fallback.py compares it with `scipy.stats.t`.
"""

from __future__ import annotations

import math

import numpy as np

_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz; converges for x < (a+1)/(a+b+2))."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        for aa in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_upper_tail(t: float, df: int) -> float:
    """P(T > t) for Student's t with `df` >= 1 degrees of freedom."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    two_sided = regularized_beta(df / 2.0, 0.5, df / (df + t * t))  # P(|T| > |t|)
    return two_sided / 2.0 if t >= 0 else 1.0 - two_sided / 2.0


def correlation_p_value(labels: np.ndarray, predictions: np.ndarray) -> float:
    """The one-sided p-value of "the predictions correlate positively with the labels" on the labelled rows: 1 when
    it cannot be tested (fewer than 3 rows, or labels or predictions all equal: no evidence either way)."""
    n = labels.size
    if n < 3 or np.ptp(labels) == 0 or np.ptp(predictions) == 0:
        return 1.0
    r = float(np.clip(np.corrcoef(labels, predictions)[0, 1], -1.0, 1.0))
    if r >= 1.0:
        return 0.0
    if r <= -1.0:
        return 1.0
    return t_upper_tail(r * math.sqrt((n - 2) / (1.0 - r * r)), n - 2)


def carries_information(labels: np.ndarray, predictions: np.ndarray, level: float) -> bool:
    """True when the labelled rows show a positive correlation significant at two-sided 1 - `level` (one-sided
    p < (1 - level) / 2): the rule PPI++ uses before it weights the judge at all."""
    return correlation_p_value(labels, predictions) < (1.0 - level) / 2.0
