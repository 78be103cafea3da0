"""Statistics of judge results, as short pure functions: intervals, agreement, correlation, ROC AUC, bootstrap.

Nothing here knows about judges or runs; `aggregate` (summaries), `agreement` (judge vs human
labels) and `pairwise` (position bias) build on these. scipy is imported only by the correlations.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from pydantic import BaseModel

Z95 = 1.959963984540054


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for k successes in n trials (None when n == 0)."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _check_pairs(a: Sequence[Any], b: Sequence[Any]) -> int:
    if len(a) != len(b):
        raise ValueError(f"sequences differ in length: {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no pairs to compare")
    return len(a)


def accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Share of items where the prediction equals the label."""
    n = _check_pairs(y_true, y_pred)
    return sum(t == p for t, p in zip(y_true, y_pred, strict=True)) / n


def balanced_accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Mean recall over the classes present in `y_true` (sklearn's definition, unadjusted)."""
    _check_pairs(y_true, y_pred)
    per_class = Counter(y_true)
    hits = Counter(t for t, p in zip(y_true, y_pred, strict=True) if t == p)
    return sum(hits[c] / per_class[c] for c in per_class) / len(per_class)


def cohen_kappa(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float | None:
    """Cohen's kappa (po - pe) / (1 - pe); None when chance agreement is 1 (both raters constant, equal)."""
    n = _check_pairs(y_true, y_pred)
    po = accuracy(y_true, y_pred)
    ct, cp = Counter(y_true), Counter(y_pred)
    pe = sum(ct[c] * cp[c] for c in ct) / (n * n)
    if math.isclose(pe, 1.0):
        return None
    return (po - pe) / (1 - pe)


def confusion_matrix(y_true: Sequence[Hashable], y_pred: Sequence[Hashable], labels: Sequence[Hashable]) -> list[list[int]]:
    """Counts with rows = label (human), columns = prediction (judge), in the order of `labels`."""
    _check_pairs(y_true, y_pred)
    idx = {lab: i for i, lab in enumerate(labels)}
    unknown = sorted({str(x) for x in (*y_true, *y_pred) if x not in idx})
    if unknown:
        raise ValueError(f"values not in labels: {unknown}")
    m = [[0] * len(labels) for _ in labels]
    for t, p in zip(y_true, y_pred, strict=True):
        m[idx[t]][idx[p]] += 1
    return m


class Correlation(BaseModel):
    """A correlation statistic with its p-value and the number of pairs."""

    statistic: float | None  # None when undefined (a constant input)
    p_value: float | None
    n: int


def _finite(x: Any) -> float | None:
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def _correlation(fn_name: str, x: Sequence[float], y: Sequence[float]) -> Correlation:
    n = _check_pairs(x, y)
    if n < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return Correlation(statistic=None, p_value=None, n=n)
    from scipy import stats

    res = getattr(stats, fn_name)(list(x), list(y))
    return Correlation(statistic=_finite(res.statistic), p_value=_finite(res.pvalue), n=n)


def spearman(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Spearman's rank correlation (scipy.stats.spearmanr; ties get average ranks)."""
    return _correlation("spearmanr", x, y)


def kendall(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Kendall's tau-b (scipy.stats.kendalltau), which corrects for ties."""
    return _correlation("kendalltau", x, y)


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
    n = _check_pairs(labels, winners)
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


def ranks(xs: Sequence[float]) -> list[float]:
    """Average ranks scaled to [0, n-1]."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks


# ------------------------------------------------------------------ ranking quality and resampling


def roc_auc(positive: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Area under the ROC curve: the probability that a random positive item scores above a random negative one
    (ties count one half; the Mann-Whitney U statistic over n_pos * n_neg). None when a class is absent.
    0.5 = no signal, whatever the threshold."""
    _check_pairs(positive, scores)
    r = ranks(list(scores))  # average ranks, 0-based
    n_pos = sum(1 for p in positive if p)
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    rank_sum = sum(ri + 1 for ri, p in zip(r, positive, strict=True) if p)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def bootstrap_ci(
    stat: Callable[[Sequence[int]], float | None], n: int, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `stat(indices)` over `n` items resampled with replacement (seeded, so the
    same inputs give the same interval). Resamples where the statistic is undefined (None) are skipped; None when
    fewer than half of them are defined or n == 0."""
    if n <= 0:
        return None
    rng = random.Random(seed)
    vals = []
    for _ in range(n_boot):
        idx = [rng.randrange(n) for _ in range(n)]
        v = stat(idx)
        if v is not None and not math.isnan(v):
            vals.append(v)
    if len(vals) < n_boot / 2:
        return None
    vals.sort()
    lo = vals[int(math.floor((1 - level) / 2 * (len(vals) - 1)))]
    hi = vals[int(math.ceil((1 + level) / 2 * (len(vals) - 1)))]
    return lo, hi
