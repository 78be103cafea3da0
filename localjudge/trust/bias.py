"""A judge's biases measured on its own verdicts: position (pairwise), answer length, and its own model's answers.

* Position: a pairwise judge asked in both orders should pick the first-shown answer half the time, whatever the
  answers' quality. `position_bias` gives the first-position win rate over all decisions with a Wilson interval whose
  sample size is shrunk by the design effect of the pairs (the two orders of one pair fail together: a coin per pair
  gives twice the binomial variance); flagged when the interval excludes 0.5.
* Length (AlpacaEval's length-controlled win rate, arXiv 2404.04475): `length_bias` fits a logistic regression of the
  verdict (or score in [0, 1]) on the standardized answer length (or length difference for a pairwise judge), reports
  its coefficient with a sandwich interval, Spearman's correlation, and the pass rate at zero length difference
  (at the mean length for single answers): the length-controlled rate. Flagged when the coefficient's interval
  excludes 0. A small ridge on the coefficient keeps the fit finite when length decides every verdict (separation).
* Self-preference: `self_preference` compares the pass rate on rows whose generator column names the judge's model
  with the others; flagged when the difference's interval excludes 0 (quality may differ too: the sentence says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel

from ..errors import InputError
from ..statistics import ranks
from .ppi import z_value

if TYPE_CHECKING:
    from ..store.results import JudgeResult

RIDGE = 1.0  # L2 penalty on the length coefficient (a N(0, 1) prior): negligible beside n/4, keeps a separated fit finite


class PositionBias(BaseModel):
    """First-position win rate of a pairwise judge over the decisions of pairs judged in both orders."""

    n_pairs: int
    n_decisions: int  # orders with a pick (ties and unscored orders left out)
    first_wins: int
    rate: float
    interval: tuple[float, float]
    design_effect: float  # variance over the binomial one (>= 1 used); 2 when each pair's two orders agree by position
    flagged: bool
    sentence: str


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def position_picks(results: Iterable[JudgeResult]) -> list[tuple[int | None, int | None]]:
    """(forward order's picked position, swapped order's) per result of a pairwise judge run in both orders
    (`BothOrders`, `--both-orders`); results judged in one order only are left out."""
    from ..judges.pairwise import is_both_orders

    out: list[tuple[int | None, int | None]] = []
    for r in results:
        if not is_both_orders(r):
            continue
        orders = list(r.details.get("orders") or [])
        pos = [o.get("picked_position") if o.get("picked_position") in (1, 2) else None for o in orders]
        if len(pos) == 2:
            out.append((pos[0], pos[1]))
    return out


def position_bias(picks: Sequence[tuple[int | None, int | None]], *, level: float = 0.95) -> PositionBias:
    """`picks` holds, per pair, the position the judge picked with A shown first and with B shown first: 1 (the
    first-shown answer), 2 (the second) or None (a tie or no verdict). Raises InputError without any decision."""
    c = np.asarray([sum(1 for x in pair if x == 1) for pair in picks], dtype=float)
    d = np.asarray([sum(1 for x in pair if x in (1, 2)) for pair in picks], dtype=float)
    if bad := [x for pair in picks for x in pair if x not in (1, 2, None)]:
        raise InputError(f"a pick is 1 (first shown), 2 (second shown) or None (tie), not {bad[0]!r}")
    keep = d > 0
    c, d = c[keep], d[keep]
    total = float(d.sum())
    if total == 0:
        raise InputError("no pair has a decided order; position bias needs pairs judged in both orders")
    r = float(c.sum()) / total
    n = c.size
    v_cluster = float(np.sum((c - r * d) ** 2)) / total**2 * (n / (n - 1) if n > 1 else 1.0)
    v_binom = r * (1 - r) / total
    deff = max(1.0, v_cluster / v_binom) if v_binom > 0 else 1.0
    lo, hi = _wilson(r, total / deff, z_value(level))
    flagged = not lo <= 0.5 <= hi
    side = "first" if r > 0.5 else "second"
    sentence = (
        f"Position bias: the judge picks the answer shown first in {r:.0%} of {int(total)} decisions "
        f"({level:.0%} interval {lo:.0%}–{hi:.0%}; 50% means none), favouring the {side} position; "
        "judge each pair in both orders and count disagreements as ties."
        if flagged
        else f"No position bias shown: first position wins {r:.0%} of {int(total)} decisions ({lo:.0%}–{hi:.0%})."
    )
    return PositionBias(
        n_pairs=int(n),
        n_decisions=int(total),
        first_wins=int(c.sum()),
        rate=r,
        interval=(lo, hi),
        design_effect=deff,
        flagged=flagged,
        sentence=sentence,
    )


class LengthBias(BaseModel):
    """How verdicts move with answer length, and the pass rate with length held at zero difference."""

    n: int
    spearman: float | None  # None when length or verdicts are constant
    spearman_interval: tuple[float, float] | None
    coefficient: float  # log-odds of passing per standard deviation of length (difference)
    coefficient_interval: tuple[float, float]
    pass_rate: float
    length_controlled_rate: float
    length_controlled_interval: tuple[float, float]
    flagged: bool
    sentence: str


def _logistic(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients (intercept, slope) of a ridge-penalised logistic fit by Newton's method, and their sandwich
    covariance (valid for scores in [0, 1] as well as 0/1 verdicts)."""
    a = np.column_stack([np.ones_like(x), x])
    beta = np.zeros(2)
    pen = np.diag([0.0, RIDGE])  # the intercept is not penalised: it is the length-controlled rate
    for _ in range(100):
        mu = 1 / (1 + np.exp(-(a @ beta)))
        h = a.T @ (a * (mu * (1 - mu))[:, None]) + pen
        step = np.linalg.solve(h, a.T @ (y - mu) - pen @ beta)
        beta = beta + step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    mu = 1 / (1 + np.exp(-(a @ beta)))
    h_inv = np.linalg.inv(a.T @ (a * (mu * (1 - mu))[:, None]) + pen)
    g = a * (y - mu)[:, None]
    return beta, h_inv @ (g.T @ g) @ h_inv


def _fold(coef: float) -> str:
    """The odds ratio per standard deviation in words (length deciding every verdict gives an unbounded one)."""
    fold = math.exp(abs(coef))
    return "more than 100-fold (length decides the verdicts)" if fold > 100 else f"{fold:.2f}-fold"


def _spearman(v: np.ndarray, x: np.ndarray, z: float) -> tuple[float | None, tuple[float, float] | None]:
    """Spearman's rho with a Fisher-z interval (Bonett–Wright standard error); None for a constant input."""
    if np.ptp(v) == 0 or np.ptp(x) == 0 or v.size < 4:
        return None, None
    rho = float(np.corrcoef(ranks(v.tolist()), ranks(x.tolist()))[0, 1])
    rho_c = min(max(rho, -0.999999), 0.999999)
    se = math.sqrt((1 + rho_c * rho_c / 2) / (v.size - 3))
    return rho, (math.tanh(math.atanh(rho_c) - z * se), math.tanh(math.atanh(rho_c) + z * se))


def length_bias(
    values: Sequence[float], lengths: Sequence[float], *, other_lengths: Sequence[float] | None = None, level: float = 0.95
) -> LengthBias:
    """Length bias of verdicts or scores `values` in [0, 1] (for a pairwise judge: 1 when the answer whose length is
    in `lengths` won against the one in `other_lengths`). Raises InputError for fewer than 10 rows or values out of
    [0, 1]."""
    v = np.asarray(values, dtype=float)
    x = np.asarray(lengths, dtype=float)
    if other_lengths is not None:
        x = x - np.asarray(other_lengths, dtype=float)  # zero difference is meaningful: not centred
    else:
        x = x - x.mean()
    if v.shape != x.shape or v.size < 10:
        raise InputError(f"length bias needs at least 10 rows with a value and a length each, got {v.size}")
    if ((v < 0) | (v > 1)).any():
        raise InputError("values must be verdicts or normalised scores in [0, 1]")
    if float(v.min()) == float(v.max()):
        raise InputError(f"length bias cannot be measured: all {v.size} verdicts are the same ({float(v[0]):g})")
    z = z_value(level)
    sd = float(np.std(x))
    xs = x / sd if sd > 0 else x
    try:
        beta, cov = _logistic(xs, v)
    except np.linalg.LinAlgError:  # the verdicts are (nearly) separated: no finite fit
        raise InputError("length bias cannot be measured: the verdicts leave the logistic fit singular") from None
    se = np.sqrt(np.diag(cov))
    b_int = (float(beta[1] - z * se[1]), float(beta[1] + z * se[1]))
    lc = 1 / (1 + math.exp(-beta[0]))
    lc_int = (1 / (1 + math.exp(-(beta[0] - z * se[0]))), 1 / (1 + math.exp(-(beta[0] + z * se[0]))))
    rho, rho_int = _spearman(v, x, z)
    flagged = sd > 0 and not b_int[0] <= 0 <= b_int[1]
    where = "at equal length" if other_lengths is not None else "at the mean length"
    sentence = (
        f"Length bias: each standard deviation of {'length difference' if other_lengths is not None else 'answer length'} "
        f"{'raises' if beta[1] > 0 else 'lowers'} the odds of passing {_fold(float(beta[1]))} "
        f"(coefficient {beta[1]:.2f}, {level:.0%} interval {b_int[0]:.2f} to {b_int[1]:.2f}); the length-controlled pass "
        f"rate {where} is {lc:.0%} against {float(v.mean()):.0%} raw."
        if flagged
        else f"No length bias shown (coefficient {beta[1]:.2f}, interval {b_int[0]:.2f} to {b_int[1]:.2f})."
    )
    return LengthBias(
        n=int(v.size),
        spearman=rho,
        spearman_interval=rho_int,
        coefficient=float(beta[1]),
        coefficient_interval=b_int,
        pass_rate=float(v.mean()),
        length_controlled_rate=lc,
        length_controlled_interval=lc_int,
        flagged=flagged,
        sentence=sentence,
    )


class SelfPreference(BaseModel):
    """Pass rate on the judge's own model's answers against the others'."""

    judge_model: str
    n_own: int
    n_other: int
    own_rate: float
    other_rate: float
    difference: float
    interval: tuple[float, float]
    flagged: bool
    sentence: str


def _model_key(name: str) -> str:
    """A model name compared loosely: lower case, the last path or scheme part, no .gguf."""
    key = name.strip().lower().replace("\\", "/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return key.removesuffix(".gguf")


def same_model(generator: str, judge_model: str) -> bool:
    """Whether a generator column's value names the judge's model (one name starts the other, loosely compared)."""
    g, j = _model_key(generator), _model_key(judge_model)
    return bool(g) and bool(j) and (g.startswith(j) or j.startswith(g))


def self_preference(
    values: Sequence[float], generators: Sequence[str | None], judge_model: str, *, level: float = 0.95
) -> SelfPreference | None:
    """The judge's pass rate on answers its own model generated against the rest; None when no row (or every row)
    names the judge's model, so there is nothing to compare."""
    if len(values) != len(generators):
        raise InputError(f"values and generators differ in length: {len(values)} and {len(generators)}")
    own = np.asarray([g is not None and same_model(g, judge_model) for g in generators])
    v = np.asarray(values, dtype=float)
    a, b = v[own], v[~own]
    if a.size < 2 or b.size < 2:
        return None
    d = float(a.mean() - b.mean())
    se = math.sqrt(float(np.var(a, ddof=1)) / a.size + float(np.var(b, ddof=1)) / b.size)
    z = z_value(level)
    lo, hi = d - z * se, d + z * se
    flagged = not lo <= 0 <= hi
    sentence = (
        f"Self-preference: answers by the judge's own model ({judge_model}) pass {a.mean():.0%} against {b.mean():.0%} "
        f"for the others (difference {d:+.0%}, {level:.0%} interval {lo:+.0%} to {hi:+.0%}); part may be real quality, "
        "so check with human labels or another judge."
        if flagged
        else f"No self-preference shown: own model {a.mean():.0%}, others {b.mean():.0%} ({lo:+.0%} to {hi:+.0%})."
    )
    return SelfPreference(
        judge_model=judge_model,
        n_own=int(a.size),
        n_other=int(b.size),
        own_rate=float(a.mean()),
        other_rate=float(b.mean()),
        difference=d,
        interval=(lo, hi),
        flagged=flagged,
        sentence=sentence,
    )
