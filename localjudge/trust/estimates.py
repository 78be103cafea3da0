"""Trust with fewer labels, one import point: prediction-powered estimates (ppi.py), active labelling (active.py),
the label budget (budget.py) and the bias report (bias.py).

    from localjudge.trust.estimates import estimates, label_budget, position_bias
    out = estimates(predictions, {row: label, ...})      # PPI++, labels-only and Rogan–Gladen side by side
    print(out.ppi.estimate, out.ppi.interval, out.ppi.note)

    from localjudge import judge_trust                   # the same, and the bias report, from a run's rows
    print("\n".join(judge_trust(run.rows, "correctness", pass_labels, target_half_width=0.05).lines()))

This is the public home of the estimators (`localjudge.estimates`, `localjudge.judge_trust`, ... re-export it);
`localjudge.calibration` stays the deprecated alias of labels/calibration.py (Rogan–Gladen alone).

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
from .judge_trust import JudgeTrust, judge_trust, run_difference, run_trust, stored_trust
from .ppi import (
    Estimate,
    Estimates,
    estimates,
    labels_only,
    ppi_difference,
    ppi_mean,
    ppi_rows,
    shown_difference,
    split_rows,
)

__all__ = [
    "BudgetAnswer",
    "Estimate",
    "Estimates",
    "JudgeTrust",
    "LabelBudget",
    "LengthBias",
    "PositionBias",
    "SelfPreference",
    "WeightedLabel",
    "active_mean",
    "binary_uncertainty",
    "draw",
    "estimates",
    "judge_trust",
    "label_budget",
    "labels_only",
    "length_bias",
    "position_bias",
    "position_picks",
    "ppi_difference",
    "ppi_mean",
    "shown_difference",
    "ppi_rows",
    "run_difference",
    "run_trust",
    "same_model",
    "sampling_probabilities",
    "self_preference",
    "split_rows",
    "stored_trust",
    "uniform_probabilities",
]
