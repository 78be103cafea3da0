"""Statistics of judge results, as short pure functions: intervals (intervals.py), agreement with labels
(agreement.py), rank correlation and ROC AUC (correlation.py).

Nothing here knows about judges or runs; `run/aggregate.py` (summaries), `labels/agreement.py` (judge vs human
labels), `judges/pairwise.py` (position bias), `align/` and `trust/` build on these. scipy is imported only by
the correlations. Every name is importable from `localjudge.statistics` itself (and, for one release, from the
old `localjudge.stats`).
"""

from .agreement import (
    PairwiseAccuracy,
    accuracy,
    balanced_accuracy,
    check_pairs,
    cohen_kappa,
    confusion_matrix,
    pairwise_accuracy,
)
from .correlation import Correlation, kendall, ranks, roc_auc, spearman
from .intervals import Z95, bootstrap_ci, wilson_interval

__all__ = [
    "Z95",
    "Correlation",
    "PairwiseAccuracy",
    "accuracy",
    "balanced_accuracy",
    "bootstrap_ci",
    "check_pairs",
    "cohen_kappa",
    "confusion_matrix",
    "kendall",
    "pairwise_accuracy",
    "ranks",
    "roc_auc",
    "spearman",
    "wilson_interval",
]
