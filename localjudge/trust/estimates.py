"""Trust with fewer labels, one import point: prediction-powered estimates (ppi.py), active labelling (active.py),
the label budget (budget.py) and the bias report (bias.py).

    from localjudge.trust.estimates import estimates, label_budget, position_bias
    out = estimates(predictions, {row: label, ...})      # PPI++, labels-only and Rogan–Gladen side by side
    print(out.ppi.estimate, out.ppi.interval, out.ppi.note)

These modules need numpy (a base dependency) and nothing from an extra.
"""

from __future__ import annotations

from .active import (
    WeightedLabel,
    active_mean,
    binary_uncertainty,
    draw,
    sampling_probabilities,
    uniform_probabilities,
)
from .bias import (
    LengthBias,
    PositionBias,
    SelfPreference,
    length_bias,
    position_bias,
    position_picks,
    same_model,
    self_preference,
)
from .budget import BudgetAnswer, LabelBudget, label_budget
from .ppi import Estimate, Estimates, estimates, labels_only, ppi_difference, ppi_mean, ppi_rows, split_rows

__all__ = [
    "BudgetAnswer",
    "Estimate",
    "Estimates",
    "LabelBudget",
    "LengthBias",
    "PositionBias",
    "SelfPreference",
    "WeightedLabel",
    "active_mean",
    "binary_uncertainty",
    "draw",
    "estimates",
    "label_budget",
    "labels_only",
    "length_bias",
    "position_bias",
    "position_picks",
    "ppi_difference",
    "ppi_mean",
    "ppi_rows",
    "same_model",
    "sampling_probabilities",
    "self_preference",
    "split_rows",
    "uniform_probabilities",
]
