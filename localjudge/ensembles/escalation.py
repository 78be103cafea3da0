"""Choosing a cascade's threshold so that agreement with humans is guaranteed (Trust or Escalate, Jung et al. 2024,
arXiv 2407.18370, fixed-sequence testing).

On labelled rows the first model's verdicts have confidences c_i and are right or wrong (z_i). For a threshold L the
cascade trusts the rows with c_i >= L and escalates the rest. We want the largest set of trusted rows whose
agreement with the humans is at least `target` with probability `confidence`:

  * thresholds are tested in a sequence fixed before the verdicts are compared with the labels: the confidences
    that trust the surest 10 %, 15 %, ..., 100 % of the rows (most cautious first; a sequence in steps of 0.01 of
    confidence starts with tests on a handful of rows, which have no power and end the sequence at once), skipping
    any that trusts too few rows for a test to reject at all (n < log(alpha) / log(target));
  * at each L, H0: "agreement on the trusted rows < target" is tested with the exact binomial test: p = P(Binom(n,
    1 - target) <= errors) over the n trusted rows;
  * the sequence stops at the first L where p > alpha = 1 - confidence; the last rejected L is chosen.

Fixed-sequence testing controls the family-wise error at alpha without a multiplicity correction, so with
probability >= `confidence` the chosen threshold's agreement on trusted rows is >= `target`. When no threshold is
rejected (too few rows, or a judge that is wrong too often even when sure) there is none: escalate every row.

`choose_escalation` works on any (confidence, correct) pairs; `align_escalation` runs the first model on a labels
file, splits the rows (stratified, seeded), chooses on one part and reports the held-out figures with intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ..statistics import wilson_interval

STEPS = [k / 20 for k in range(2, 21)]  # trust the surest 10 %, 15 %, ..., 100 % of the rows


def thresholds(conf: Sequence[float | None]) -> list[float]:
    """The fixed sequence of thresholds, most cautious first: the confidence of the surest 10 %, 15 %, ..., 100 % of
    the rows (they depend on the confidences only, never on which verdicts are right)."""
    cs = sorted((c for c in conf if c is not None), reverse=True)
    out: list[float] = []
    for f in STEPS:
        if cs:
            lam = cs[max(0, math.ceil(f * len(cs)) - 1)]
            if not out or lam < out[-1]:
                out.append(lam)
    return out


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(Binom(n, p) <= k), exact (log-space sums)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0:
        return 1.0
    if p >= 1:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq for i in range(k + 1)]
    m = max(terms)
    return min(1.0, math.exp(m) * sum(math.exp(t - m) for t in terms))


class EscalationChoice(BaseModel):
    """The chosen threshold (None: escalate every row) and, per tested threshold, (threshold, n trusted, errors, p)."""

    threshold: float | None
    target: float
    confidence: float
    n: int
    tested: list[tuple[float, int, int, float]]


def choose_escalation(
    conf: Sequence[float | None], correct: Sequence[bool], target: float, confidence: float
) -> EscalationChoice:
    """The lowest threshold of the fixed sequence whose trusted rows agree with the labels at >= `target` with
    probability `confidence` (see the module docstring). A confidence of None (no probabilities) is never trusted."""
    alpha = 1.0 - confidence
    pairs = [(c, z) for c, z in zip(conf, correct, strict=True)]
    chosen: float | None = None
    tested: list[tuple[float, int, int, float]] = []
    n_min = math.ceil(math.log(alpha) / math.log(target)) if 0 < alpha < 1 and 0 < target < 1 else 1
    for lam in thresholds([c for c, _ in pairs]):
        trusted = [z for c, z in pairs if c is not None and c >= lam]
        n, errors = len(trusted), sum(1 for z in trusted if not z)
        if n < n_min and not tested:
            continue
        p = binom_cdf(errors, n, 1.0 - target) if n else 1.0
        tested.append((lam, n, errors, p))
        if p > alpha:
            break
        chosen = lam
    return EscalationChoice(threshold=chosen, target=target, confidence=confidence, n=len(pairs), tested=tested)


class HeldOut(BaseModel):
    """A threshold's figures on rows it was not chosen on, with 95 % Wilson intervals."""

    n: int
    n_trusted: int
    fraction_escalated: float | None
    fraction_escalated_ci: tuple[float, float] | None
    agreement_trusted: float | None  # the first model's agreement with the labels on the trusted rows
    agreement_trusted_ci: tuple[float, float] | None
    agreement_first_alone: float | None  # on every held-out row, without escalation


def held_out(conf: Sequence[float | None], correct: Sequence[bool], threshold: float | None) -> HeldOut:
    """The figures of `threshold` on held-out (confidence, correct) pairs."""
    n = len(conf)
    trusted = [z for c, z in zip(conf, correct, strict=True) if threshold is not None and c is not None and c >= threshold]
    k = sum(trusted)
    esc = n - len(trusted)
    return HeldOut(
        n=n,
        n_trusted=len(trusted),
        fraction_escalated=esc / n if n else None,
        fraction_escalated_ci=wilson_interval(esc, n),
        agreement_trusted=k / len(trusted) if trusted else None,
        agreement_trusted_ci=wilson_interval(k, len(trusted)),
        agreement_first_alone=sum(correct) / n if n else None,
    )


class EscalationReport(BaseModel):
    """`align --target-agreement`: the choice on the calibration rows and its held-out figures."""

    judge: str
    model_id: str
    labels_file: str
    label_column: str
    n_rows: int
    n_used: int
    n_calibration: int
    n_test: int
    seed: int
    choice: EscalationChoice
    test: HeldOut


def align_escalation(
    judge: str,
    labels: str,
    *,
    label_column: str = "label",
    positive: str | None = None,
    target: float = 0.9,
    confidence: float = 0.9,
    test_fraction: float = 0.3,
    seed: int = 0,
    out: str = "aligned",
    **run: Any,
) -> EscalationReport:
    """Run `judge` with --probs on the labelled rows, choose the escalation threshold on a stratified split and
    report the held-out figures (see the module docstring). `run`: evaluate's keywords (model, model_options, ...)."""
    from pathlib import Path

    from ..align.aligner import binary_labels, stratified_split
    from ..engine.base import DecodeOptions
    from ..errors import InputError
    from ..labels.agreement import read_labels
    from ..run.plain import run_plain
    from ..run.spec import RunSpec
    from .cascade import confidence as conf_of

    rows = read_labels(labels)
    if not rows or not any(label_column in r for r in rows):
        raise InputError(f"labels file {labels}: no column {label_column!r}; name it with --label-column")
    y, _ = binary_labels([r.get(label_column) for r in rows], positive)
    opts = run.pop("options", None) or DecodeOptions()
    opts = opts if isinstance(opts, DecodeOptions) else DecodeOptions(**opts)
    spec = RunSpec.build(rows, [judge], options=opts.model_copy(update={"probs": True}), out=Path(out) / "escalation-run", **run)
    res = run_plain(spec)
    results = {r.row_index: r for r in res.results}
    used = [
        i
        for i, lab in enumerate(y)
        if lab is not None and i in results and results[i].result.scored and results[i].result.passed is not None
    ]
    if len(used) < 10:
        raise InputError(f"only {len(used)} labelled rows were scored; escalation needs more labelled rows")
    conf = [conf_of(results[i].result) for i in used]
    correct = [bool(results[i].result.passed) == bool(y[i]) for i in used]
    cal, test = stratified_split([bool(y[i]) for i in used], test_fraction, seed)
    choice = choose_escalation([conf[k] for k in cal], [correct[k] for k in cal], target, confidence)
    return EscalationReport(
        judge=judge,
        model_id=str(res.summary.record.model_id),
        labels_file=str(labels),
        label_column=label_column,
        n_rows=len(rows),
        n_used=len(used),
        n_calibration=len(cal),
        n_test=len(test),
        seed=seed,
        choice=choice,
        test=held_out([conf[k] for k in test], [correct[k] for k in test], choice.threshold),
    )


def escalation_lines(rep: EscalationReport) -> list[str]:
    """The report as text for the terminal."""

    def pct(x: float | None, ci: tuple[float, float] | None = None) -> str:
        if x is None:
            return "n/a"
        return f"{x:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "")

    c, t = rep.choice, rep.test
    lines = [
        f"judge {rep.judge} with model {rep.model_id} on {rep.labels_file} (column {rep.label_column!r}): "
        f"{rep.n_used} of {rep.n_rows} rows scored; split seed {rep.seed}: {rep.n_calibration} to choose, {rep.n_test} held out",
    ]
    if c.threshold is None:
        lines.append(
            f"no threshold reaches agreement >= {c.target:.0%} with confidence {c.confidence:.0%} on {c.n} rows: "
            "escalate every row (or label more rows)"
        )
    else:
        lines.append(
            f"escalate below confidence {c.threshold:.2f}: agreement >= {c.target:.0%} on trusted rows with "
            f"confidence {c.confidence:.0%} (fixed-sequence binomial tests, {len(c.tested)} thresholds tested)"
        )
    lines += [
        f"held out (n = {t.n}), 95 % Wilson intervals:",
        f"  escalated                  {pct(t.fraction_escalated, t.fraction_escalated_ci)}",
        f"  agreement on trusted rows  {pct(t.agreement_trusted, t.agreement_trusted_ci)} (n = {t.n_trusted})",
        f"  first model alone          {pct(t.agreement_first_alone)}",
        f"use: localjudge run DATA -j {rep.judge} --probs --escalate-to STRONG_MODEL"
        + (f" --escalate-below {c.threshold:.2f}" if c.threshold is not None else " (no threshold: judge every row with it)"),
    ]
    return lines
