"""The active (Horvitz-Thompson) estimate is exactly unbiased: on a population small enough to enumerate every
outcome of the labelling coins, its expectation is the true mean (issue 33: the lam tuned on the same labels was not)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from localjudge.trust.active import WeightedLabel, active_mean

# rows 0 and 1 are always labelled (probability 1) so every outcome has the 2 labels an estimate needs
Y = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
F = [0.9, 0.2, 0.3, 0.8, 0.6, 0.95, 0.1, 0.4, 0.7]
PI = [1.0, 1.0, 0.3, 0.6, 0.45, 0.2, 0.7, 0.35, 0.5]


def _expectation(lam: float | None) -> float:
    """E[estimate] summed exactly over all 2^7 outcomes of the coins of the rows with probability < 1."""
    coin_rows = [i for i, p in enumerate(PI) if p < 1]
    total = 0.0
    for coins in itertools.product((0, 1), repeat=len(coin_rows)):
        weight = float(np.prod([PI[r] if c else 1 - PI[r] for r, c in zip(coin_rows, coins, strict=True)]))
        rows = [0, 1] + [r for r, c in zip(coin_rows, coins, strict=True) if c]
        labels = [WeightedLabel(row=r, label=Y[r], probability=PI[r]) for r in rows]
        total += weight * active_mean(F, labels, lam=lam).estimate
    return total


def test_active_estimate_with_tuned_lambda_has_expectation_equal_to_the_true_mean() -> None:
    assert _expectation(0.7) == pytest.approx(float(np.mean(Y)), abs=1e-9)  # the enumeration is exact: a fixed lambda
    assert _expectation(None) == pytest.approx(float(np.mean(Y)), abs=1e-9)  # the tuned one (same-sample: 0.5057)
