"""Rank statistics of scores against labels: Spearman's and Kendall's correlations (scipy, imported
only here), average ranks and ROC AUC."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from .agreement import check_pairs


class Correlation(BaseModel):
    """A correlation statistic with its p-value and the number of pairs."""

    statistic: float | None  # None when undefined (a constant input)
    p_value: float | None
    n: int


def _finite(x: Any) -> float | None:
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def _correlation(fn_name: str, x: Sequence[float], y: Sequence[float]) -> Correlation:
    n = check_pairs(x, y)
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
    check_pairs(positive, scores)
    r = ranks(list(scores))  # average ranks, 0-based
    n_pos = sum(1 for p in positive if p)
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    rank_sum = sum(ri + 1 for ri, p in zip(r, positive, strict=True) if p)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
