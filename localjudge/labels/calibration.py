"""Pass rates corrected for the judge's measured error rates (the Rogan–Gladen estimator).

A judge that says "pass" with true-positive rate TPR and true-negative rate TNR reports an observed
pass rate p_obs = TPR * p + (1 - TNR) * (1 - p) when the true rate is p. Solving for p gives

    p = (p_obs + TNR - 1) / (TPR + TNR - 1)

clipped to [0, 1] (as the judgy package does). TPR and TNR come from the rows that have a human label;
p_obs from the judge's verdicts on every row. The bootstrap interval resamples both at once: the labelled
(label, verdict) pairs (the uncertainty of TPR and TNR) and the verdicts (the uncertainty of p_obs).

When TPR + TNR <= 1 the verdicts carry no information about the truth (or are anti-correlated with it) and
no corrected number exists: `calibrate` then returns a `CalibratedRate` with `refused` set and no estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel


class CalibratedRate(BaseModel):
    """The observed and the corrected pass rate with the judge's measured TPR/TNR; `refused` (one line) instead of
    a corrected number when TPR + TNR <= 1 or a class is missing from the labels."""

    observed: float | None = None
    corrected: float | None = None
    corrected_ci: tuple[float, float] | None = None  # percentile bootstrap, `level`
    tpr: float | None = None
    tnr: float | None = None
    n_verdicts: int = 0  # verdicts the observed rate is taken over
    n_labelled: int = 0
    n_label_pos: int = 0
    n_label_neg: int = 0
    level: float = 0.95
    refused: str | None = None
    labels: str | None = None  # which labels measured TPR/TNR, when they were chosen among stored ones (trust/rates.py)
    warning: str | None = None  # why those labels may be biased (not a random sample)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def calibrated_text(cal: CalibratedRate) -> str:
    """The corrected pass rate with its interval and the TPR/TNR it used, or the one-line refusal (never a number then)."""
    if cal.refused is not None or cal.corrected is None:
        return f"refused: {cal.refused}"
    ci = f" [{_pct(cal.corrected_ci[0])}, {_pct(cal.corrected_ci[1])}]" if cal.corrected_ci else ""
    return f"{_pct(cal.corrected)}{ci} (Rogan-Gladen; TPR {_pct(cal.tpr)}, TNR {_pct(cal.tnr)} on {cal.n_labelled} labelled rows)"


def rogan_gladen(observed: float, tpr: float, tnr: float) -> float | None:
    """The corrected rate (observed + TNR - 1) / (TPR + TNR - 1) clipped to [0, 1]; None when TPR + TNR <= 1."""
    denom = tpr + tnr - 1
    if denom <= 0:
        return None
    return min(1.0, max(0.0, (observed + tnr - 1) / denom))


def _rates(labels: Sequence[bool], preds: Sequence[bool]) -> tuple[float | None, float | None]:
    pos = [p for y, p in zip(labels, preds, strict=True) if y]
    neg = [p for y, p in zip(labels, preds, strict=True) if not y]
    tpr = sum(pos) / len(pos) if pos else None
    tnr = sum(1 for p in neg if not p) / len(neg) if neg else None
    return tpr, tnr


def calibrate(
    verdicts: Sequence[bool],
    labels: Sequence[tuple[bool, bool]],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> CalibratedRate:
    """The judge's pass rate over `verdicts` (its pass/fail on every row to estimate over), corrected with the
    TPR/TNR measured on `labels` ((human says pass, judge says pass) per labelled row).

    `labels` may come from a labels file joined to a run or from labels stored with the run; `verdicts` usually
    holds every scored row of the run, labelled ones included. Seeded: the same inputs give the same interval.
    """
    y = [bool(a) for a, _ in labels]
    p = [bool(b) for _, b in labels]
    out = CalibratedRate(
        n_verdicts=len(verdicts), n_labelled=len(labels), n_label_pos=sum(y), n_label_neg=len(y) - sum(y), level=level
    )
    if verdicts:
        out.observed = sum(map(bool, verdicts)) / len(verdicts)
    tpr, tnr = _rates(y, p)
    out.tpr, out.tnr = tpr, tnr
    if not verdicts:
        out.refused = "no verdicts with a pass/fail to estimate the pass rate from"
        return out
    if tpr is None or tnr is None:
        missing = "passing" if tpr is None else "failing"
        out.refused = f"the labels have no {missing} row, so the judge's {'TPR' if tpr is None else 'TNR'} is unknown; label some"
        return out
    corrected = rogan_gladen(out.observed or 0.0, tpr, tnr)
    if corrected is None:
        out.refused = (
            f"TPR + TNR = {tpr:.2f} + {tnr:.2f} <= 1: the judge's verdicts carry no information about the labels, "
            "so no corrected pass rate exists; improve the judge (see `localjudge align`)"
        )
        return out
    out.corrected = corrected
    out.corrected_ci = _bootstrap(list(map(bool, verdicts)), y, p, n_boot, seed, level)
    return out


def _bootstrap(
    verdicts: list[bool], y: list[bool], p: list[bool], n_boot: int, seed: int, level: float
) -> tuple[float, float] | None:
    """Percentile interval of the corrected rate, resampling the labelled positives, the labelled negatives and the
    verdicts independently (a binomial draw of each proportion is exactly the nonparametric bootstrap of its sample).
    A resample where TPR + TNR <= 1 counts as 0 or 1 by the sign of the observed excess, so a weak judge widens the
    interval instead of hiding it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_pos = sum(y)
    n_neg = len(y) - n_pos
    tp = sum(1 for yi, pi in zip(y, p, strict=True) if yi and pi)
    tn = sum(1 for yi, pi in zip(y, p, strict=True) if not yi and not pi)
    n_v = len(verdicts)
    obs = rng.binomial(n_v, sum(verdicts) / n_v, n_boot) / n_v
    tpr = rng.binomial(n_pos, tp / n_pos, n_boot) / n_pos
    tnr = rng.binomial(n_neg, tn / n_neg, n_boot) / n_neg
    denom = tpr + tnr - 1
    num = obs + tnr - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(denom > 0, num / np.where(denom > 0, denom, 1.0), np.where(num > 0, 1.0, 0.0))
    c = np.clip(c, 0.0, 1.0)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(c, [alpha, 1 - alpha])
    return float(lo), float(hi)


def binary_pairs(
    labelled: Sequence[tuple[object, object, bool | None]], values: Sequence[object] | None = None
) -> list[tuple[bool, bool]] | None:
    """(human passes, judge passes) from (human label, judge value, judge passed) triples, or None when the labels
    cannot be read as pass/fail: a label value passes when the judge's results with that value pass. With the judge's
    two possible `values`, a value it never gave is the opposite of the one it gave (a judge that always says yes).
    Values the judge gave both ways (or a label it cannot map) make the mapping ambiguous: None."""
    passing: dict[str, set[bool]] = {}
    for _, value, passed in labelled:
        if passed is not None:
            passing.setdefault(str(value), set()).add(bool(passed))
    if any(len(v) != 1 for v in passing.values()):
        return None
    if values is not None and len(values) == 2 and len(passing) == 1:
        seen, flag = next(iter(passing.items()))
        other = [str(v) for v in values if str(v) != seen]
        if len(other) == 1:
            passing[other[0]] = {not next(iter(flag))}
    out: list[tuple[bool, bool]] = []
    for label, _, passed in labelled:
        if passed is None:
            continue
        human = passing.get(str(label))
        if human is None:
            return None
        out.append((next(iter(human)), bool(passed)))
    return out
