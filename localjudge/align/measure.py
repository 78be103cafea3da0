"""What `align` measures: the stratified train/held-out split, the threshold, and agreement with bootstrap intervals.

Pure functions of labels and scores (no judge, no model); the rules are stated step by step in align.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from ..errors import InputError
from ..statistics import balanced_accuracy, bootstrap_ci, cohen_kappa, roc_auc


class Metrics(BaseModel):
    """Agreement on a set of rows, with 95 % bootstrap intervals."""

    n: int
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None = None
    kappa: float | None
    kappa_ci: tuple[float, float] | None = None
    auc: float | None
    auc_ci: tuple[float, float] | None = None


class Change(BaseModel):
    """After - before on the held-out rows, with a paired bootstrap interval, and what it means."""

    metric: str
    before: float | None
    after: float | None
    difference: float | None
    ci: tuple[float, float] | None
    verdict: str  # "no significant change", "better (CI above 0)", "worse (CI below 0)", "undefined"


def stratified_split(positive: Sequence[bool], test_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """(train, held-out) indices: each class shuffled with `random.Random(seed)`, its first round(f * n) held out."""
    if not 0 < test_fraction < 1:
        raise InputError(f"test fraction must be between 0 and 1, got {test_fraction}")
    rng = random.Random(seed)
    train: list[int] = []
    test: list[int] = []
    for cls in (True, False):
        idx = [i for i, p in enumerate(positive) if p == cls]
        rng.shuffle(idx)
        k = int(round(test_fraction * len(idx)))
        test += idx[:k]
        train += idx[k:]
    return sorted(train), sorted(test)


def choose_threshold(scores: Sequence[float], positive: Sequence[bool]) -> tuple[float, float | None]:
    """The t maximising Cohen's kappa of (score >= t) against the labels, over midpoints of distinct scores and 0.5;
    ties: higher balanced accuracy, then t closest to 0.5. Returns (t, kappa at t)."""
    distinct = sorted(set(scores))
    cands = {0.5} | {(a + b) / 2 for a, b in zip(distinct, distinct[1:], strict=False)}
    if distinct:
        cands |= {distinct[0] - 1e-9, distinct[-1] + 1e-9}
    best: tuple[float, float, float] | None = None
    best_t = 0.5
    for t in sorted(cands):
        pred = [s >= t for s in scores]
        k = cohen_kappa(list(positive), pred)
        key = (-2.0 if k is None else k, balanced_accuracy(list(positive), pred), -abs(t - 0.5))
        if best is None or key > best:
            best, best_t = key, t
    k_best = None if best is None or best[0] == -2.0 else best[0]
    return best_t, k_best


def _acc(y: Sequence[bool], p: Sequence[bool]) -> float:
    return sum(a == b for a, b in zip(y, p, strict=True)) / len(y)


def metrics(y: Sequence[bool], pred: Sequence[bool], score: Sequence[float], n_boot: int, seed: int) -> Metrics:
    """Accuracy, kappa and AUC of `score` on these rows, each with a bootstrap interval."""
    n = len(y)
    if n == 0:
        return Metrics(n=0, accuracy=None, kappa=None, auc=None)

    def sub(f: Callable[..., Any], *cols: Sequence[Any]) -> Callable[[Sequence[int]], float | None]:
        return lambda idx: f(*[[c[i] for i in idx] for c in cols])

    return Metrics(
        n=n,
        accuracy=_acc(y, pred),
        accuracy_ci=bootstrap_ci(sub(_acc, y, pred), n, n_boot, seed),
        kappa=cohen_kappa(list(y), list(pred)),
        kappa_ci=bootstrap_ci(sub(cohen_kappa, y, pred), n, n_boot, seed),
        auc=roc_auc(y, score),
        auc_ci=bootstrap_ci(sub(roc_auc, y, score), n, n_boot, seed),
    )


def paired_change(
    name: str,
    f: Callable[[Sequence[bool], Sequence[Any]], float | None],
    y: Sequence[bool],
    before: Sequence[Any],
    after: Sequence[Any],
    n_boot: int,
    seed: int,
) -> Change:
    """after - before of statistic `f(labels, values)` with a paired bootstrap interval over the same rows."""
    b, a = f(y, before), f(y, after)
    diff = None if a is None or b is None else a - b

    def stat(idx: Sequence[int]) -> float | None:
        yy = [y[i] for i in idx]
        fa, fb = f(yy, [after[i] for i in idx]), f(yy, [before[i] for i in idx])
        return None if fa is None or fb is None else fa - fb

    ci = bootstrap_ci(stat, len(y), n_boot, seed) if y else None
    if diff is None or ci is None:
        verdict = "undefined"
    elif ci[0] > 0:
        verdict = "better (CI above 0)"
    elif ci[1] < 0:
        verdict = "worse (CI below 0)"
    else:
        verdict = "no significant change"
    return Change(metric=name, before=b, after=a, difference=diff, ci=ci, verdict=verdict)


def accuracy_or_none(y: Sequence[bool], p: Sequence[bool]) -> float | None:
    """Accuracy of `p` against `y`; None on no rows (a statistic for `paired_change`)."""
    return _acc(y, p) if y else None
