"""Simulation study of the trust estimators (localjudge/trust/ppi.py, active.py): coverage and width, seeded.

    python scripts/benchmarks/bench_trust_estimators.py                 # 500 trials per cell, the table of docs/trust-estimators.md
    python scripts/benchmarks/bench_trust_estimators.py --trials 50     # a quick look

Judges of known quality judge N rows whose true pass rate is known; a random n of them carry a human label.
Per judge and label count, over the trials: the coverage of each estimator's 95 % interval (the share of trials whose
interval holds the true rate) and its mean half-width. Then active labelling (uncertainty sampling) against random
labelling with the same inverse-probability-weighted estimator: the labels each needs for the same mean half-width,
and active's bias at 100 and 200 labels: the mean error over the trials divided by the estimator's own standard error
(averaged over the trials: the bias in the units a user's interval has) and by the Monte-Carlo standard error of the
mean error (SD / sqrt(trials): whether the bias is distinguishable from simulation noise). Output depends on the seed only.
Stand-alone (scripts/benchmarks/bench_trust.py is the panel-reuse bench); the lead wires it into scripts/bench.py as `trust`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from localjudge.trust import active, ppi

N_ROWS = 2000
LABELS = (50, 100, 200)
BUDGETS = (30, 40, 50, 60, 70, 80, 100, 120, 140, 170, 200, 240)


@dataclass(frozen=True)
class Judge:
    """A simulated judge: `make(rng)` gives (true labels, predictions, uncertainty) on N_ROWS rows; `truth` the
    population pass rate the intervals should hold."""

    name: str
    truth: float
    make: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _calibrated(a: float, b: float) -> Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A judge whose expected score p is the true probability of a pass: error variance p(1 - p), known exactly."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p = rng.beta(a, b, N_ROWS)
        y = (rng.random(N_ROWS) < p).astype(float)
        return y, p, np.sqrt(p * (1 - p))

    return make


def _binary(rate: float, tpr: float, tnr: float) -> Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A judge that only says pass/fail with the given TPR/TNR: no uncertainty to sample by (all rows alike)."""

    def make(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        y = (rng.random(N_ROWS) < rate).astype(float)
        u = rng.random(N_ROWS)
        f = np.where(y == 1, u < tpr, u >= tnr).astype(float)
        return y, f, np.ones(N_ROWS)

    return make


JUDGES = [
    Judge("calibrated, sharp (p ~ Beta(0.4, 0.6))", 0.4, _calibrated(0.4, 0.6)),
    Judge("calibrated, vague (p ~ Beta(2, 2))", 0.5, _calibrated(2.0, 2.0)),
    Judge("pass/fail, TPR 0.90 TNR 0.80", 0.35, _binary(0.35, 0.90, 0.80)),
    Judge("chance (TPR 0.50 TNR 0.50)", 0.35, _binary(0.35, 0.50, 0.50)),
]


def _tpr_tnr(judge: Judge) -> tuple[float, float]:
    """The judge's TPR/TNR at the 0.5 threshold, measured on 200,000 simulated rows."""
    rng = np.random.default_rng(12345)
    ys, fs = [], []
    for _ in range(100):
        y, f, _ = judge.make(rng)
        ys.append(y)
        fs.append(f >= 0.5)
    y, v = np.concatenate(ys) == 1, np.concatenate(fs)
    return float(v[y].mean()), float((~v[~y]).mean())


def _intervals(out: ppi.Estimates) -> list[tuple[str, tuple[float, float]]]:
    """Each interval of one trial by its column: the shown (continuity-corrected) ones and ppi-python's beneath."""
    got = [("ppi++", out.ppi.interval), ("ppi-python", out.ppi.ppi_python_interval or out.ppi.interval)]
    got += [("labels-only", out.labels_only.interval), ("wald", out.labels_only.ppi_python_interval or out.labels_only.interval)]
    return got + ([("rogan-gladen", out.rogan_gladen.interval)] if out.rogan_gladen is not None else [])


def random_labels(judge: Judge, trials: int, seed: int) -> list[list[str]]:
    """Rows of the coverage / width table: per label count, each estimator's coverage and mean half-width."""
    rows = []
    for n in LABELS:
        rng = np.random.default_rng([seed, n])
        hits: dict[str, list[bool]] = {k: [] for k in ("ppi++", "ppi-python", "labels-only", "wald", "rogan-gladen")}
        widths: dict[str, list[float]] = {k: [] for k in hits}
        narrower, lam, refused = 0, [], 0
        for t in range(trials):
            y, f, _ = judge.make(rng)
            rows_l = rng.choice(N_ROWS, n, replace=False)
            out = ppi.estimates(f.tolist(), {int(i): float(y[i]) for i in rows_l}, seed=t)
            if out.rogan_gladen is None:
                refused += 1
            for name, interval in _intervals(out):
                hits[name].append(interval[0] <= judge.truth <= interval[1])
                widths[name].append((interval[1] - interval[0]) / 2)
            narrower += out.ppi.half_width <= out.labels_only.half_width
            lam.append(out.ppi.lam or 0.0)
        cells = []
        for name in hits:
            cov = f"{np.mean(hits[name]):.1%}" if hits[name] else "refused"
            wid = f"±{np.mean(widths[name]):.3f}" if widths[name] else "–"
            cells += [cov, wid]
        rg_note = f"{refused} of {trials} refused" if refused else ""
        rows.append([str(n), *cells, f"{np.mean(lam):.2f}", f"{narrower}/{trials}", rg_note])
    return rows


@dataclass(frozen=True)
class IpwCell:
    """The IPW estimator over the trials of one budget: mean half-width, coverage, mean labels, and its error
    against the truth as the mean error and the two standard errors it can be judged by."""

    width: float
    coverage: float
    labels: float
    mean_error: float
    mean_se: float  # the estimator's own standard error, averaged over the trials
    mc_se: float  # the Monte-Carlo standard error of the mean error: SD(error) / sqrt(trials)

    @property
    def error_over_se(self) -> float:
        """Mean error in units of the estimator's own (per-trial) standard error: the bias a user would see."""
        return self.mean_error / self.mean_se if self.mean_se > 0 else float("nan")

    @property
    def error_over_mc_se(self) -> float:
        """Mean error in units of its Monte-Carlo standard error: |value| <= 2 is 'unbiased within noise'."""
        return self.mean_error / self.mc_se if self.mc_se > 0 else float("nan")


def ipw_cell(widths: list[float], covered: list[bool], labels: list[int], errors: list[float], ses: list[float]) -> IpwCell:
    """Summarise per-trial IPW results (see IpwCell)."""
    err = np.asarray(errors, dtype=float)
    mc = float(np.std(err, ddof=1) / np.sqrt(err.size)) if err.size > 1 else float("nan")
    return IpwCell(
        float(np.mean(widths)), float(np.mean(covered)), float(np.mean(labels)), float(err.mean()), float(np.mean(ses)), mc
    )


def _ipw(judge: Judge, budget: int, trials: int, seed: int, uncertainty: bool) -> IpwCell:
    """The IPW estimator with active (uncertainty) or uniform sampling at `budget` expected labels, over the trials."""
    rng = np.random.default_rng([seed, budget, int(uncertainty)])
    w, cov, n, err, ses = [], [], [], [], []
    for _ in range(trials):
        y, f, u = judge.make(rng)
        probs = active.sampling_probabilities(u, budget) if uncertainty else active.uniform_probabilities(N_ROWS, budget)
        rows = active.draw(probs, seed=int(rng.integers(2**31)))
        labels = [active.WeightedLabel(row=r, label=float(y[r]), probability=probs[r]) for r in rows]
        est = active.active_mean(f.tolist(), labels)
        w.append(est.half_width)
        cov.append(est.interval[0] <= judge.truth <= est.interval[1])
        n.append(len(rows))
        err.append(est.estimate - judge.truth)
        ses.append(est.std_error)
    return ipw_cell(w, cov, n, err, ses)


def _labels_for(width: float, budgets: list[float], widths: list[float]) -> float:
    """Labels needed for `width`, interpolating log(width) against log(labels) over the budgets."""
    lw, lb = np.log(widths[::-1]), np.log(budgets[::-1])  # widths fall as budgets rise: reverse to increasing
    return float(np.exp(np.interp(np.log(width), lw, lb)))


def active_vs_random(judge: Judge, trials: int, seed: int) -> list[str]:
    """One row: random's half-width at 100 and 200 labels, the labels active needs for each, and active's bias."""
    act = [_ipw(judge, b, trials, seed, True) for b in BUDGETS]
    rnd = {b: _ipw(judge, b, trials, seed, False) for b in (100, 200)}
    cells = []
    for b in (100, 200):
        need = _labels_for(rnd[b].width, [a.labels for a in act], [a.width for a in act])
        cells += [f"±{rnd[b].width:.3f}", f"{need:.0f}"]
    a100, a200 = act[BUDGETS.index(100)], act[BUDGETS.index(200)]
    coverage = f"{a100.coverage:.1%} / {a200.coverage:.1%} ; {rnd[100].coverage:.1%} / {rnd[200].coverage:.1%}"
    bias = []
    for a in (a100, a200):
        bias += [f"{a.mean_error:+.4f}", f"{a.error_over_se:+.3f}", f"{a.error_over_mc_se:+.2f}"]
    return [*cells, coverage, *bias]


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def main(argv: list[str] | None = None) -> int:
    """Print the two tables (markdown) for every simulated judge."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    out = [f"N = {N_ROWS} rows per trial, {args.trials} trials per cell, seed {args.seed}, 95 % intervals.", ""]
    head = ["labels", "PPI++ cover", "PPI++ ±", "ppi-python cover", "ppi-python ±", "labels-only cover", "labels-only ±"]
    head += ["Wald cover", "Wald ±", "Rogan–Gladen cover", "RG ±"]
    head += ["mean λ", "PPI++ ≤ labels-only", "RG"]
    for judge in JUDGES:
        tpr, tnr = _tpr_tnr(judge)
        out += [f"**{judge.name}**, true pass rate {judge.truth:.2f}, TPR {tpr:.2f}, TNR {tnr:.2f} at 0.5", ""]
        out += [_table(head, random_labels(judge, args.trials, args.seed)), ""]
    out += ["**Active vs random labelling** (same inverse-probability-weighted PPI estimator; labels = expected budget)", ""]
    head2 = ["judge", "random ± at 100", "active labels for it", "random ± at 200", "active labels for it"]
    head2 += ["coverage at 100 / 200: active ; random"]
    for b in (100, 200):
        head2 += [f"active mean error at {b}", f"÷ mean per-trial SE at {b}", f"÷ MC SE (SD/√trials) at {b}"]
    rows2 = [[j.name, *active_vs_random(j, args.trials, args.seed)] for j in JUDGES[:3]]
    out += [_table(head2, rows2)]
    print("\n".join(out))
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
