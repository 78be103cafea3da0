"""Which 95 % interval for PPI++ and labels-only covers >= 94 % in every cell of the seeded simulation, narrowest?

    python -m scripts.benchmarks.bench_trust_intervals --trials 2000      # the table of docs/trust-estimators.md (about 60 s)

Same judges, label counts, seeds and draws as scripts/benchmarks/bench_trust_estimators.py (its `random_labels`), no model,
numpy and scipy (for the t quantile) only. Per cell, each candidate's coverage and mean half-width; the estimate is
PPI++ with ppi-python's tuned lambda except for the cross-fitted candidates. Candidates:

- `normal`: ppi-python's interval (estimate ± z se, population variances), what trust/ppi.py's `ppi_mean` returns;
- `t`: sample variances (ddof 1) and the t quantile with n - 1 degrees of freedom;
- `cross-fit`, `cross-fit t`: lambda tuned on one half of the labels, used on the other, and swapped (the estimate
  is the mean of the two rectified halves), with the normal or t quantile;
- `normal + cc`: ppi-python's interval widened by the continuity correction 0.5 / n (the interval shown);
- `t + cc/2`: the t interval widened by 0.25 / n;
- `Wilson` (labels-only only): the Wilson score interval for a binomial proportion.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

import numpy as np

from localjudge.trust import ppi
from scripts.benchmarks.bench_trust_estimators import JUDGES, LABELS, N_ROWS, Judge, _table

Interval = tuple[float, float]  # (estimate, half-width)
PPI_CANDIDATES = ("normal", "t", "cross-fit", "cross-fit t", "normal + cc", "t + cc/2")
LABEL_CANDIDATES = ("normal", "t", "normal + cc", "t + cc/2", "Wilson")


def _parts(y: np.ndarray, f: np.ndarray, u: np.ndarray, lam: float, ddof: int) -> tuple[float, float]:
    est = float(lam * u.mean() + (y - lam * f).mean())
    return est, math.sqrt(lam * lam * float(np.var(u, ddof=ddof)) / u.size + float(np.var(y - lam * f, ddof=ddof)) / y.size)


def _cross_fit(y: np.ndarray, f: np.ndarray, u: np.ndarray) -> tuple[float, float]:
    """Two folds: each half's rectifier uses the lambda tuned on the other half; sample variances."""
    h = y.size // 2
    a, b = slice(0, h), slice(h, None)
    lam_a, lam_b = ppi.tuned_lambda(y[a], f[a], u), ppi.tuned_lambda(y[b], f[b], u)
    ra, rb = y[a] - lam_b * f[a], y[b] - lam_a * f[b]
    lam = (lam_a + lam_b) / 2
    est = float(lam * u.mean() + np.concatenate([ra, rb]).mean())
    var_r = (ra.size * float(np.var(ra, ddof=1)) + rb.size * float(np.var(rb, ddof=1))) / y.size**2
    return est, math.sqrt(lam * lam * float(np.var(u, ddof=1)) / u.size + var_r)


def candidates(y: np.ndarray, f: np.ndarray, u: np.ndarray, z: float, t: float) -> dict[str, Interval]:
    """Every PPI++ candidate on one trial (labels y, their predictions f, the unlabelled predictions u)."""
    cc = 0.5 / y.size
    lam = ppi.tuned_lambda(y, f, u)
    if _parts(y, f, u, lam, 0)[1] > _parts(y, f, u, 0.0, 0)[1]:
        lam = 0.0  # ppi_mean's fallback: never wider than labels-only
    est, se = _parts(y, f, u, lam, 0)
    est1, se1 = _parts(y, f, u, lam, 1)
    cf, cf_se = _cross_fit(y, f, u)
    lab_se1 = _parts(y, f, u, 0.0, 1)[1]
    if cf_se > lab_se1:
        cf, cf_se = float(y.mean()), lab_se1
    return {
        "normal": (est, z * se),
        "t": (est1, t * se1),
        "cross-fit": (cf, z * cf_se),
        "cross-fit t": (cf, t * cf_se),
        "normal + cc": (est, z * se + cc),
        "t + cc/2": (est1, t * se1 + cc / 2),
    }


def label_candidates(y: np.ndarray, z: float, t: float) -> dict[str, Interval]:
    """Every labels-only candidate on one trial."""
    n, p = y.size, float(y.mean())
    se, se1 = math.sqrt(p * (1 - p) / n), float(np.std(y, ddof=1)) / math.sqrt(n)
    d = 1 + z * z / n
    wilson = ((p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d)
    return {
        "normal": (p, z * se),
        "t": (p, t * se1),
        "normal + cc": (p, z * se + 0.5 / n),
        "t + cc/2": (p, t * se1 + 0.25 / n),
        "Wilson": wilson,
    }


def cell(judge: Judge, n: int, trials: int, seed: int, t_of: Callable[[int], float]) -> dict[str, tuple[float, float]]:
    """{'PPI++ <candidate>' or 'labels <candidate>': (coverage, mean half-width)} over the trials of one cell, drawn
    exactly as bench_trust_estimators.random_labels draws them."""
    rng = np.random.default_rng([seed, n])
    z, t = ppi.z_value(0.95), t_of(n - 1)
    hits: dict[str, list[bool]] = {}
    widths: dict[str, list[float]] = {}
    for _ in range(trials):
        y, f, _ = judge.make(rng)
        rows = rng.choice(N_ROWS, n, replace=False)
        lab, preds, unl = ppi.split_rows(f.tolist(), {int(i): float(y[i]) for i in rows})
        yy, ff, uu = np.asarray(lab), np.asarray(preds), np.asarray(unl)
        got = {f"PPI++ {k}": v for k, v in candidates(yy, ff, uu, z, t).items()}
        got |= {f"labels {k}": v for k, v in label_candidates(yy, z, t).items()}
        for k, (est, half) in got.items():
            hits.setdefault(k, []).append(abs(est - judge.truth) <= half)
            widths.setdefault(k, []).append(half)
    return {k: (float(np.mean(hits[k])), float(np.mean(widths[k]))) for k in hits}


def main(argv: list[str] | None = None) -> int:
    """Print, per candidate, every cell's coverage / half-width, its worst cell and its mean half-width."""
    from scipy import stats  # the t quantile; scipy is the `stats` extra

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    cells = {
        (j.name, n): cell(j, n, args.trials, args.seed, lambda df: float(stats.t.ppf(0.975, df))) for j in JUDGES for n in LABELS
    }
    names = [f"PPI++ {k}" for k in PPI_CANDIDATES] + [f"labels {k}" for k in LABEL_CANDIDATES]
    head = ["interval", *(f"{j.name.split(' (')[0]} {n}" for j in JUDGES for n in LABELS), "worst", "cells < 94 %", "mean ±"]
    rows = []
    for k in names:
        vals = [c[k] for c in cells.values()]
        covs = [v[0] for v in vals]
        rows.append([k, *(f"{c:.1%} ±{w:.3f}" for c, w in vals), f"{min(covs):.1%}", str(sum(c < 0.94 for c in covs))])
        rows[-1].append(f"±{np.mean([v[1] for v in vals]):.4f}")
    print(f"N = {N_ROWS} rows per trial, {args.trials} trials per cell, seed {args.seed}, 95 % intervals.\n")
    print(_table(head, rows))
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
