"""Agreement of predictions with labels: accuracy, balanced accuracy, Cohen's kappa, the confusion matrix,
and how often a pairwise judge prefers the answer humans preferred."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from pydantic import BaseModel

from .intervals import wilson_interval


def check_pairs(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The number of pairs in two sequences of equal, non-zero length; `ValueError` otherwise."""
    if len(a) != len(b):
        raise ValueError(f"sequences differ in length: {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no pairs to compare")
    return len(a)


def accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Share of items where the prediction equals the label."""
    n = check_pairs(y_true, y_pred)
    return sum(t == p for t, p in zip(y_true, y_pred, strict=True)) / n


def balanced_accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Mean recall over the classes present in `y_true` (sklearn's definition, unadjusted)."""
    check_pairs(y_true, y_pred)
    per_class = Counter(y_true)
    hits = Counter(t for t, p in zip(y_true, y_pred, strict=True) if t == p)
    return sum(hits[c] / per_class[c] for c in per_class) / len(per_class)


def cohen_kappa(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float | None:
    """Cohen's kappa (po - pe) / (1 - pe); None when chance agreement is 1 (both raters constant, equal)."""
    n = check_pairs(y_true, y_pred)
    po = accuracy(y_true, y_pred)
    ct, cp = Counter(y_true), Counter(y_pred)
    pe = sum(ct[c] * cp[c] for c in ct) / (n * n)
    if math.isclose(pe, 1.0):
        return None
    return (po - pe) / (1 - pe)


def confusion_matrix(y_true: Sequence[Hashable], y_pred: Sequence[Hashable], labels: Sequence[Hashable]) -> list[list[int]]:
    """Counts with rows = label (human), columns = prediction (judge), in the order of `labels`."""
    check_pairs(y_true, y_pred)
    idx = {lab: i for i, lab in enumerate(labels)}
    unknown = sorted({str(x) for x in (*y_true, *y_pred) if x not in idx})
    if unknown:
        raise ValueError(f"values not in labels: {unknown}")
    m = [[0] * len(labels) for _ in labels]
    for t, p in zip(y_true, y_pred, strict=True):
        m[idx[t]][idx[p]] += 1
    return m


class PairwiseAccuracy(BaseModel):
    """How often a pairwise judge prefers the answer humans preferred (ties are misses)."""

    n: int
    n_correct: int
    accuracy: float
    accuracy_ci: tuple[float, float] | None
    n_ties: int  # judge said "tie" (the two orders disagreed)
    tie_rate: float
    n_decided: int
    accuracy_decided: float | None  # accuracy among pairs the judge decided


def pairwise_accuracy(labels: Sequence[Any], winners: Sequence[Any]) -> PairwiseAccuracy:
    """Share of pairs where the judge prefers the answer humans preferred; a judge tie is a miss."""
    n = check_pairs(labels, winners)
    correct = sum(lab == w for lab, w in zip(labels, winners, strict=True))
    ties = sum(w == "tie" for w in winners)
    decided = [(lab, w) for lab, w in zip(labels, winners, strict=True) if w != "tie"]
    dc = sum(lab == w for lab, w in decided)
    return PairwiseAccuracy(
        n=n,
        n_correct=correct,
        accuracy=correct / n,
        accuracy_ci=wilson_interval(correct, n),
        n_ties=ties,
        tie_rate=ties / n,
        n_decided=len(decided),
        accuracy_decided=dc / len(decided) if decided else None,
    )
