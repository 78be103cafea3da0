"""Active statistical inference (Zrnic & Candès, arXiv 2403.03208): label the rows the judge is unsure of more often,
and weight each label by the inverse of its sampling probability so the estimate stays unbiased.

Design: every row i gets a probability pi_i of being labelled (`sampling_probabilities`): proportional to the judge's
uncertainty u_i (for a verdict with probability p, sqrt(p(1 - p)), `binary_uncertainty`), mixed with the uniform
budget / N so that every row has at least `floor_share * budget / N`, capped at 1 and scaled so the expected number of
labels is the budget. Each row is then labelled or not by its own coin (`draw`: Bernoulli sampling), and pi_i is
stored with the label: it is data, the estimate cannot be computed without it.

Estimate (`active_mean`): the mean over all N rows of

    Z_i = lam * f_i + (Y_i - lam * f_i) * xi_i / pi_i        (xi_i = 1 when row i was labelled)

which is unbiased for the mean of Y whatever lam, as long as lam does not depend on xi_i; its standard error is the
sample standard deviation of Z over sqrt(N). lam minimises Var(Z) = Var(Y) + E[(Y - lam f)^2 (1 - pi) / pi],
estimated on labelled rows with inverse-probability weights, clipped to [0, 1]. Tuned on the same labels it is
applied to, lam correlates with xi_i and the estimate is biased at O(1/n) (issue 33 measured +1.87 standard errors
at 200 labels); so lam is cross-fitted (`active_terms`): the rows are split by the parity of their index, a split
fixed before any coin is drawn, and each half's Z uses the lam tuned on the other half's labels. Each coin is
independent of the lam it meets, so E[Z_i] = Y_i exactly. With pi = budget / N everywhere this is a random sample with
the same estimator, the fair baseline (`uniform_probabilities`).

A caveat for a labelling queue: the coins are drawn up front. A person who stops early has labelled a subsample of
the drawn rows; if the queue shows the drawn rows in random order, scale every stored pi by (labelled / drawn).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from ..errors import InputError
from .ppi import Estimate, correction_for, lambda_note, normal_interval


class WeightedLabel(BaseModel):
    """A human label on row `row` with the probability that row had of being picked for labelling."""

    row: int = Field(ge=0)
    label: float
    probability: float = Field(gt=0, le=1)


def binary_uncertainty(probabilities: Sequence[float]) -> list[float]:
    """sqrt(p (1 - p)) per row: the standard deviation of a 0/1 verdict the judge gives probability p (0 when sure)."""
    p = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)
    return [float(x) for x in np.sqrt(p * (1 - p))]


def uniform_probabilities(n_rows: int, budget: float) -> list[float]:
    """budget / N on every row: a random sample of expected size `budget`."""
    if n_rows <= 0 or not 0 < budget <= n_rows:
        raise InputError(f"the label budget must be between 0 and the number of rows ({n_rows}), not {budget}")
    return [budget / n_rows] * n_rows


def sampling_probabilities(uncertainty: Sequence[float], budget: float, *, floor_share: float = 0.2) -> list[float]:
    """Probabilities proportional to `uncertainty`, mixed with uniform (weight `floor_share`, so each row keeps at
    least floor_share * budget / N), capped at 1 with the excess spread over the others; they sum to `budget`."""
    u = np.asarray(uncertainty, dtype=float)
    n = u.size
    base = np.asarray(uniform_probabilities(n, budget))
    if not 0 < floor_share <= 1:
        raise InputError(f"floor_share must be in (0, 1], not {floor_share}")
    if not np.isfinite(u).all() or (u < 0).any():
        raise InputError("uncertainties must be finite and non-negative")
    shape = u / u.mean() if u.sum() > 0 else np.ones(n)
    pi = base * ((1 - floor_share) * shape + floor_share)
    for _ in range(n):  # cap at 1: the rows at 1 keep it, the rest share what is left of the budget
        over = pi >= 1
        if not (pi > 1 + 1e-12).any():
            break
        rest = budget - over.sum()
        pi = np.where(over, 1.0, pi * rest / pi[~over].sum())
    return [float(x) for x in np.minimum(pi, 1.0)]


def draw(probabilities: Sequence[float], seed: int) -> list[int]:
    """The rows to label: row i with probability probabilities[i], independently (seeded)."""
    pi = np.asarray(probabilities, dtype=float)
    coins = np.random.default_rng(seed).random(pi.size) < pi
    return [int(i) for i in np.flatnonzero(coins)]


def _z_terms(f: np.ndarray, rows: np.ndarray, y: np.ndarray, pi: np.ndarray, lam: float) -> np.ndarray:
    z = lam * f
    z[rows] += (y - lam * f[rows]) / pi
    return z


def _active_lambda(f_lab: np.ndarray, y: np.ndarray, pi: np.ndarray) -> float:
    """argmin of E[(Y - lam f)^2 (1 - pi) / pi], each labelled row weighted 1 / pi, clipped to [0, 1]."""
    w = (1 - pi) / pi / pi
    den = float(np.sum(w * f_lab * f_lab))
    if den <= 0:
        return 0.0
    return float(np.clip(np.sum(w * y * f_lab) / den, 0.0, 1.0))


def active_terms(
    f: np.ndarray, rows: np.ndarray, y: np.ndarray, pi: np.ndarray, lam: float | None = None
) -> tuple[np.ndarray, float]:
    """(Z_i for every row, the lam reported): with `lam` None, the even rows' Z use the lam tuned on the odd rows'
    labels and the odd rows' Z the lam tuned on the even rows' (cross-fitting; the reported lam is the labels-weighted
    mean of the two). `rows`, `y` and `pi` are the labelled rows, their labels and their probabilities."""
    if lam is not None:
        return _z_terms(f.copy(), rows, y, pi, float(lam)), float(lam)
    z = np.empty(f.size)
    lams, counts = [], []
    for half in (0, 1):
        other = rows % 2 != half
        lam_h = _active_lambda(f[rows[other]], y[other], pi[other])
        mine = rows % 2 == half
        z_half = _z_terms(f.copy(), rows[mine], y[mine], pi[mine], lam_h)
        z[half::2] = z_half[half::2]
        lams.append(lam_h)
        counts.append(int(other.sum()))
    reported = float(np.average(lams, weights=counts)) if sum(counts) else 0.0
    return z, reported


def active_mean(
    predictions: Sequence[float], labels: Sequence[WeightedLabel], *, level: float = 0.95, lam: float | None = None
) -> Estimate:
    """The inverse-probability-weighted PPI estimate of the mean label over all rows of `predictions`, from labels
    that carry their sampling probability; `lam` None tunes it by cross-fitting (`active_terms`). Raises InputError for a label on a missing row, a
    row labelled twice, or fewer than 2 labels."""
    f = np.asarray(predictions, dtype=float)
    rows = np.asarray([lab.row for lab in labels], dtype=int)
    if len(labels) < 2:
        raise InputError(f"an interval needs at least 2 labelled rows, got {len(labels)}; label more rows")
    if rows.max() >= f.size or len(set(rows.tolist())) != rows.size:
        raise InputError("each label must name a distinct row that has a prediction")
    y = np.asarray([lab.label for lab in labels], dtype=float)
    pi = np.asarray([lab.probability for lab in labels], dtype=float)
    z, tuned = active_terms(f, rows, y, pi, lam)
    est, se = float(z.mean()), float(np.std(z, ddof=1)) / math.sqrt(f.size)
    # the shown interval adds half a label step over the labels' count on each side, as the PPI++ and labels-only
    # intervals do (ppi.correction_for); the normal interval alone is kept as `ppi_python_interval`
    normal = normal_interval(est, se, level)
    c = correction_for(y.tolist())
    return Estimate(
        method="active",
        estimate=est,
        interval=(normal[0] - c, normal[1] + c),
        ppi_python_interval=normal,
        std_error=se,
        n_labels=int(rows.size),
        n_predictions=int(f.size),
        lam=tuned,
        level=level,
        note="labels weighted by 1 / their sampling probability; " + lambda_note(tuned),
    )
