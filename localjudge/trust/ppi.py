"""Prediction-powered estimates of a pass rate or mean score: PPI++ (Angelopoulos, Duchi, Zrnic, arXiv 2311.01453).

The judge's predictions f (a verdict 0/1, an expected score from `--probs`, a normalised score in [0, 1]) exist on
all N rows; human labels Y on n of them, a random sample. PPI++ estimates the mean of Y as

    theta = lam * mean(f over the N - n unlabelled rows) + mean(Y - lam * f over the n labelled rows)

with the variance lam^2 var(f_unlabelled) / (N - n) + var(Y - lam f) / n and a normal interval. The weight lam is
tuned from the data (`tuned_lambda`, the authors' `_calc_lam_glm` for a mean) and clipped to [0, 1] as they do:
lam = 1 is plain PPI, lam = 0 the labels-only mean. The numbers equal `ppi_py.ppi_mean_pointestimate` and
`ppi_mean_ci` (lam=None) on the same inputs (tests/test_ppi.py). One documented difference: if the tuned lam would
give a *wider* interval than lam = 0 (possible only when the labelled predictions vary more than twice as much as all
of them, a tiny-sample accident), lam = 0 is used, so PPI++ here is never wider than the labels-only interval.
And the judge is used at all only when the labelled rows give evidence that it carries information: its predictions'
correlation with the labels is positive and significant at the interval's level (`evidence.carries_information`);
otherwise lam = 0 and the note says the judge carries no information (issue 33: a judge at chance whose predictions
line up with a small draw's labels by luck no longer reads "weighted").

The labelled rows are split off the predictions (`split_rows`): PPI treats the two samples as independent, so a
labelled row is not counted again among the unlabelled ones. Beside PPI++, `estimates` gives the labels-only mean and
the Rogan–Gladen correction (`labels.calibration.calibrate`, verdicts at the 0.5 threshold) from the same labels.

The interval shown (`estimates`, `shown_difference`: what `agree`, `run`, `report` and `view` print) is ppi-python's
widened by a continuity correction, half the labels' lattice step over n (`continuity_corrected`: 0.5 / n for 0/1
labels): the normal interval on 0/1 labels covers 93.0–93.8 % at 50–200 labels and rates 0.35–0.40 in the seeded
simulation (scripts/benchmarks/bench_trust_estimators.py), the corrected one >= 94 % in every cell. ppi-python's own interval
stays on each figure as `ppi_python_interval`; `ppi_mean`, `labels_only` and `ppi_difference` still return it as
`interval`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Literal

import numpy as np
from pydantic import BaseModel

from ..errors import InputError
from .evidence import carries_information

Method = Literal["ppi++", "labels-only", "rogan-gladen", "active", "ppi++ difference"]
NO_INFORMATION = 0.05  # a tuned lam below this: the judge adds (almost) nothing, say so


class Estimate(BaseModel):
    """One estimate of a mean (a pass rate when the labels are 0/1) with its interval at `level`.

    `lam` is the weight on the judge's predictions (None for methods without one); `note` says in plain words
    what the figure is when it is not what its method name suggests (the labels-only fallback, a paired difference)."""

    method: Method
    estimate: float
    interval: tuple[float, float]
    std_error: float
    n_labels: int
    n_predictions: int  # rows with a judge prediction the estimate used (labelled ones included); 0 for labels-only
    lam: float | None = None
    level: float = 0.95
    note: str = ""
    ppi_python_interval: tuple[float, float] | None = None  # the uncorrected normal interval, when `interval` is wider

    @property
    def half_width(self) -> float:
        """Half the interval's width: the figure reads estimate ± half_width."""
        return (self.interval[1] - self.interval[0]) / 2


class Estimates(BaseModel):
    """The three figures of one pass rate side by side: PPI++, labels-only and Rogan–Gladen (None with its refusal
    in `rogan_gladen_refused` when the judge's TPR + TNR <= 1 or a class is missing from the labels)."""

    ppi: Estimate
    labels_only: Estimate
    rogan_gladen: Estimate | None
    rogan_gladen_refused: str | None = None


def z_value(level: float) -> float:
    """The two-sided normal quantile for a `level` interval (1.96 for 0.95)."""
    if not 0 < level < 1:
        raise InputError(f"level must be between 0 and 1, not {level}")
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def _arrays(labels: Sequence[float], preds: Sequence[float], unlabelled: Sequence[float]) -> tuple[np.ndarray, ...]:
    y = np.asarray(labels, dtype=float)
    f = np.asarray(preds, dtype=float)
    u = np.asarray(unlabelled, dtype=float)
    if y.shape != f.shape or y.ndim != 1 or u.ndim != 1:
        raise InputError(f"labels and their predictions differ in length: {y.size} and {f.size}; pass one of each per row")
    if y.size < 2:
        raise InputError(f"an interval needs at least 2 labelled rows, got {y.size}; label more rows")
    if u.size < 2:
        raise InputError(f"PPI needs at least 2 rows without a label, got {u.size}; use the labels-only estimate")
    if not (np.isfinite(y).all() and np.isfinite(f).all() and np.isfinite(u).all()):
        raise InputError("labels and predictions must be finite numbers (drop unscored rows first)")
    return y, f, u


def tuned_lambda(y: np.ndarray, f: np.ndarray, u: np.ndarray) -> float:
    """cov(Y, f) / ((1 + n/N) var(f)) on the labelled rows and all predictions, clipped to [0, 1] (ppi_py's
    `_calc_lam_glm` for a mean: covariance over n, pooled variance over n + N - 1)."""
    n, big_n = y.size, u.size
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    var = float(np.var(np.concatenate([f, u]), ddof=1))
    if var <= 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def _ppi_parts(y: np.ndarray, f: np.ndarray, u: np.ndarray, lam: float) -> tuple[float, float]:
    """The PPI estimate at weight `lam` and its standard error (ppi_py: population standard deviations)."""
    est = float(lam * u.mean() + (y - lam * f).mean())
    var = lam * lam * float(np.var(u)) / u.size + float(np.var(y - lam * f)) / y.size
    return est, math.sqrt(var)


def normal_interval(est: float, se: float, level: float) -> tuple[float, float]:
    """estimate ± z * standard error (not clipped: ppi_py's interval, which may leave [0, 1] for a rate)."""
    z = z_value(level)
    return est - z * se, est + z * se


def ppi_mean(
    labels: Sequence[float], predictions: Sequence[float], unlabelled: Sequence[float], *, level: float = 0.95
) -> Estimate:
    """The PPI++ mean of the labels from the judge's `predictions` on the labelled rows (same order as `labels`) and
    on the `unlabelled` rows, with the tuned lam; lam = 0 (the labels-only estimate, said in `note`) when the labelled
    rows show no significant positive correlation with the predictions. Raises InputError with fewer than 2 rows on
    either side."""
    y, f, u = _arrays(labels, predictions, unlabelled)
    lam = tuned_lambda(y, f, u) if carries_information(y, f, level) else 0.0
    est, se = _ppi_parts(y, f, u, lam)
    _, se0 = _ppi_parts(y, f, u, 0.0)
    fell_back = se > se0
    if fell_back:
        lam, (est, se) = 0.0, _ppi_parts(y, f, u, 0.0)
    return Estimate(
        method="ppi++",
        estimate=est,
        interval=normal_interval(est, se, level),
        std_error=se,
        n_labels=int(y.size),
        n_predictions=int(y.size + u.size),
        lam=lam,
        level=level,
        note=lambda_note(lam, fell_back),
    )


def lambda_note(lam: float, fell_back: bool = False) -> str:
    """The plain-language note for a weight lam on the judge's predictions."""
    if fell_back:
        return "the judge's predictions would widen the interval on these labels; this is the labels-only estimate"
    if lam < NO_INFORMATION:
        return "the judge carries no information here; this is the labels-only estimate"
    if lam >= 1 - 1e-12:
        return "the judge's predictions are used in full (lambda = 1, plain PPI)"
    return f"the judge's predictions are weighted {lam:.2f} (PPI++ power tuning)"


def labels_only(labels: Sequence[float], *, level: float = 0.95) -> Estimate:
    """The mean of the labels with its normal (Wald) interval: PPI++ at lam = 0, ppi_py's classical interval."""
    y = np.asarray(labels, dtype=float)
    if y.ndim != 1 or y.size < 2:
        raise InputError(f"an interval needs at least 2 labelled rows, got {y.size}; label more rows")
    est, se = float(y.mean()), math.sqrt(float(np.var(y)) / y.size)  # _ppi_parts at lam = 0, to the last bit
    return Estimate(
        method="labels-only",
        estimate=est,
        interval=normal_interval(est, se, level),
        std_error=se,
        n_labels=int(y.size),
        n_predictions=0,
        level=level,
        note="from the human labels alone",
    )


def lattice_step(labels: Sequence[float]) -> float:
    """The smallest gap between two distinct label values (1 for pass/fail labels, 0.25 for a 1–5 score scaled to
    [0, 1]); 1 when the labels hold fewer than two distinct values, as if they were pass/fail."""
    vals = np.unique(np.asarray(labels, dtype=float))
    return float(np.diff(vals).min()) if vals.size >= 2 else 1.0


def continuity_corrected(est: Estimate, correction: float) -> Estimate:
    """`est` with its interval widened by `correction` on each side; the interval before it kept as
    `ppi_python_interval`. The estimate and standard error do not change."""
    lo, hi = est.interval
    return est.model_copy(update={"interval": (lo - correction, hi + correction), "ppi_python_interval": est.interval})


def correction_for(labels: Sequence[float]) -> float:
    """Half the labels' lattice step over their count: 0.5 / n for 0/1 labels (the classic continuity correction of
    a binomial mean's normal interval; PPI++'s labelled term is a mean on the same lattice)."""
    return 0.5 * lattice_step(labels) / len(labels)


def split_rows(predictions: Sequence[float], labels: Mapping[int, float]) -> tuple[list[float], list[float], list[float]]:
    """(labels, their rows' predictions, the predictions of the rows without a label) from the judge's predictions
    on every row and the labels keyed by row index. Raises InputError for a label on a row that does not exist."""
    bad = [i for i in labels if not 0 <= i < len(predictions)]
    if bad:
        raise InputError(f"labels on rows {sorted(bad)[:5]} that have no prediction ({len(predictions)} rows)")
    rows = sorted(labels)
    taken = set(rows)
    return (
        [float(labels[i]) for i in rows],
        [float(predictions[i]) for i in rows],
        [float(p) for i, p in enumerate(predictions) if i not in taken],
    )


def ppi_rows(predictions: Sequence[float], labels: Mapping[int, float], *, level: float = 0.95) -> Estimate:
    """`ppi_mean` from the judge's predictions on every row and the labels keyed by row index."""
    y, f, u = split_rows(predictions, labels)
    return ppi_mean(y, f, u, level=level)


def estimates(
    predictions: Sequence[float], labels: Mapping[int, float], *, level: float = 0.95, threshold: float = 0.5, seed: int = 0
) -> Estimates:
    """PPI++, labels-only and Rogan–Gladen from the same rows. Rogan–Gladen needs pass/fail on both sides: a row
    passes when its prediction (or label) is >= `threshold`; its interval is `calibrate`'s seeded bootstrap."""
    from ..labels.calibration import calibrate

    label_list = [labels[i] for i in sorted(labels)]
    cc = correction_for(label_list)
    ppi = continuity_corrected(ppi_rows(predictions, labels, level=level), cc)
    lab = continuity_corrected(labels_only(label_list, level=level), cc)
    verdicts = [p >= threshold for p in predictions]
    pairs = [(labels[i] >= threshold, verdicts[i]) for i in sorted(labels)]
    cal = calibrate(verdicts, pairs, seed=seed, level=level)
    if cal.corrected is None or cal.corrected_ci is None:
        return Estimates(ppi=ppi, labels_only=lab, rogan_gladen=None, rogan_gladen_refused=cal.refused)
    lo, hi = cal.corrected_ci
    rg = Estimate(
        method="rogan-gladen",
        estimate=cal.corrected,
        interval=(lo, hi),
        std_error=(hi - lo) / (2 * z_value(level)),  # the bootstrap interval's width read as a normal one
        n_labels=cal.n_labelled,
        n_predictions=cal.n_verdicts,
        level=level,
        note=f"corrected with the judge's TPR {cal.tpr:.2f} and TNR {cal.tnr:.2f} (percentile bootstrap)",
    )
    return Estimates(ppi=ppi, labels_only=lab, rogan_gladen=rg)


def ppi_difference(
    a: tuple[Sequence[float], Mapping[int, float]],
    b: tuple[Sequence[float], Mapping[int, float]],
    *,
    paired: bool | None = None,
    level: float = 0.95,
) -> Estimate:
    """PPI++ estimate of mean(A) - mean(B), each given as (predictions on every row, labels keyed by row).

    Paired (the default when both have the same rows and the same labelled rows): PPI++ of the per-row difference,
    so what the two systems share cancels. Otherwise two independent PPI++ estimates, their variances added."""
    (pa, la), (pb, lb) = a, b
    same = len(pa) == len(pb) and set(la) == set(lb)
    if paired is None:
        paired = same
    if paired and not same:
        raise InputError("a paired difference needs the same rows and the same labelled rows in both; pass paired=False")
    if paired:
        preds = [x - y for x, y in zip(pa, pb, strict=True)]
        labs = {i: la[i] - lb[i] for i in la}
        est = ppi_rows(preds, labs, level=level)
        note = "paired: PPI++ of the per-row difference on the same labelled rows; " + est.note
        return est.model_copy(update={"method": "ppi++ difference", "note": note})
    ea, eb = ppi_rows(pa, la, level=level), ppi_rows(pb, lb, level=level)
    d, se = ea.estimate - eb.estimate, math.hypot(ea.std_error, eb.std_error)
    return Estimate(
        method="ppi++ difference",
        estimate=d,
        interval=normal_interval(d, se, level),
        std_error=se,
        n_labels=ea.n_labels + eb.n_labels,
        n_predictions=ea.n_predictions + eb.n_predictions,
        lam=None,
        level=level,
        note=f"independent: A's lambda {ea.lam:.2f}, B's lambda {eb.lam:.2f}; the variances add",
    )


def shown_difference(
    a: tuple[Sequence[float], Mapping[int, float]],
    b: tuple[Sequence[float], Mapping[int, float]],
    *,
    paired: bool | None = None,
    level: float = 0.95,
) -> Estimate:
    """`ppi_difference` (ppi-python's interval) with the continuity correction of the labels it used: that of the
    per-row label differences when paired, the sum of both sides' otherwise. What `report --compare` shows."""
    est = ppi_difference(a, b, paired=paired, level=level)
    (_, la), (_, lb) = a, b
    if est.note.startswith("paired"):
        cc = correction_for([la[i] - lb[i] for i in la])
    else:
        cc = correction_for(list(la.values())) + correction_for(list(lb.values()))
    note = f"{est.note}; continuity-corrected, ppi-python's interval ±{est.half_width * 100:.1f} points"
    return continuity_corrected(est, cc).model_copy(update={"note": note})
