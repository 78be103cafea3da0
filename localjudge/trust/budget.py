"""How many more labels reach a target interval half-width, from the labels so far.

The standard error of a mean falls as 1 / sqrt(n), so the labels so far predict the labels needed:

  * labels-only: z * sd(Y) / sqrt(n') <= W, so n' = ceil((z sd(Y) / W)^2);
  * PPI++ (trust/ppi.py): z * sqrt((var(Y) - 2 lam cov(Y, f) + lam^2 var(f)) / n' + lam^2 var(f) / (N - n')) <= W,
    the smallest n' < N, with var(Y), cov(Y, f) and var(f) as measured now and lam retuned for each n' as PPI++ will
    tune it then (cov / (var(f) (1 + n'/(N - n'))), clipped to [0, 1]); a lam held at today's value would make PPI++
    look worse than labels alone as n' nears N. Never more than labels alone need (PPI++ falls back to lam = 0).
  * Both add the shown interval's continuity correction, half a label step over n' (trust/ppi.py `correction_for`),
    so the count reaches the interval `agree` and `view` show, not only ppi-python's.

With fewer than 2 labels, or labels that are all equal so far, sd(Y) is unknown: 0.5 (the largest a label in [0, 1]
can have) is assumed and the answer says so. A target below what labelling every row would give is `reachable=False`;
one that would take more than MAX_LABELS labels (W near 0, where the count overflows a float) is an InputError.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from ..errors import InputError
from .ppi import lattice_step, z_value

WORST_SD = 0.5  # the largest standard deviation of values in [0, 1]
MAX_LABELS = 1e12  # a target needing more labels than this is refused (a tiny W would overflow the count)


class BudgetAnswer(BaseModel):
    """Labels one estimator needs for a half-width: `more` beyond the `n_labels` so far (None when unreachable)."""

    method: str
    target_half_width: float
    n_labels: int
    total_needed: int | None
    more: int | None
    reachable: bool
    assumed_worst_case: bool = False  # sd(Y) unknown so far: the largest possible was used


class LabelBudget(BaseModel):
    """The answer for PPI++ and for labels alone, and one sentence for people."""

    ppi: BudgetAnswer | None  # None without predictions on unlabelled rows
    labels_only: BudgetAnswer
    text: str


def _sd(x: np.ndarray) -> float | None:
    return float(np.std(x)) if x.size >= 2 and float(np.std(x)) > 0 else None


def _answer(method: str, w: float, n: int, needed: int | None, worst: bool) -> BudgetAnswer:
    return BudgetAnswer(
        method=method,
        target_half_width=w,
        n_labels=n,
        total_needed=needed,
        more=None if needed is None else max(0, needed - n),
        reachable=needed is not None,
        assumed_worst_case=worst,
    )


def label_budget(
    labels: Sequence[float],
    predictions: Sequence[float] = (),
    unlabelled: Sequence[float] = (),
    *,
    target_half_width: float,
    level: float = 0.95,
) -> LabelBudget:
    """Labels needed for ±`target_half_width` at `level`, by labels alone and (given the judge's `predictions` on the
    labelled rows and on the `unlabelled` ones) by PPI++ with the lam measured on the labels so far."""
    if target_half_width <= 0:
        raise InputError(f"the target half-width must be positive, not {target_half_width}")
    z, w = z_value(level), float(target_half_width)
    y = np.asarray(labels, dtype=float)
    n, n_rows = int(y.size), int(y.size + len(unlabelled))
    sd_y = _sd(y)
    worst = sd_y is None
    # the shown interval adds half a label step over n on each side (ppi.correction_for): the count reaches the
    # shown width, z sd / sqrt(n') + c / n' <= W, solved for x = 1 / sqrt(n') (c x^2 + z sd x - W = 0)
    c = 0.5 * lattice_step(y.tolist())
    zs = z * (WORST_SD if sd_y is None else sd_y)
    # sqrt(n') = 1 / x, written without (-zs + sqrt(...)), which cancels to 0 for a tiny W; a product overflows to inf
    root_n = (zs + math.sqrt(zs * zs + 4 * c * w)) / (2 * w)
    if not root_n * root_n <= MAX_LABELS:
        raise InputError(f"the target half-width {w:g} is too small: reaching it would take more than {MAX_LABELS:.0e} labels")
    need = math.ceil(root_n * root_n)
    reachable = len(unlabelled) == 0 or need <= n_rows  # without the other rows, their number is not known
    lab = _answer("labels-only", w, n, need if reachable else None, worst)
    ppi = None
    if len(unlabelled) >= 2 and len(predictions) == n:
        f, u = np.asarray(predictions, dtype=float), np.asarray(unlabelled, dtype=float)
        var_y = (WORST_SD if sd_y is None else sd_y) ** 2
        cov = float(np.mean((y - y.mean()) * (f - f.mean()))) if not worst else 0.0
        var_f = float(np.var(np.concatenate([f, u])))
        cand = np.arange(max(n, 2), n_rows).astype(float)  # at least one row stays unlabelled
        # lam retuned at each label count, as PPI++ will tune it then (it falls towards 0 as the labels cover the rows)
        lam = np.clip(cov / (var_f * (1 + cand / (n_rows - cand))), 0.0, 1.0) if var_f > 0 else np.zeros_like(cand)
        var = (var_y - 2 * lam * cov + lam * lam * var_f) / cand + lam * lam * var_f / (n_rows - cand)
        half = z * np.sqrt(np.minimum(var, var_y / cand)) + c / cand  # never worse than labels alone (lam = 0)
        ok = np.flatnonzero(half <= w)
        ppi = _answer("ppi++", w, n, int(cand[ok[0]]) if ok.size else None, worst)
    return LabelBudget(ppi=ppi, labels_only=lab, text=_text(ppi, lab, w))


def _phrase(a: BudgetAnswer) -> str:
    if a.more is None:
        return f"±{a.target_half_width:g} is out of reach even with every row labelled"
    if a.more == 0:
        return f"the labels so far reach ±{a.target_half_width:g}"
    return f"{a.more} more labels to reach ±{a.target_half_width:g}"


def _text(ppi: BudgetAnswer | None, lab: BudgetAnswer, w: float) -> str:
    """One sentence: the PPI++ answer first when there is one, the labels-only answer beside it."""
    worst = " (assuming the most spread labels can have: the labels so far are too few or all equal)"
    if ppi is None:
        return f"{_phrase(lab)} (labels only){worst if lab.assumed_worst_case else ''}"
    other = "labels alone: " + ("out of reach" if lab.more is None else f"{lab.more} more")
    return f"{_phrase(ppi)} (PPI++; {other}){worst if ppi.assumed_worst_case else ''}"
