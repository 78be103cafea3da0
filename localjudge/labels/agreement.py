"""Agreement of a judge with human labels.

Pure statistics first (accuracy, balanced accuracy, Cohen's kappa, confusion matrix, Spearman and
Kendall through scipy.stats, pairwise accuracy, Wilson intervals), then the label join and
`agree(rows, labels, ...)`, which picks the statistics that fit the judge's output:

    categorical  yes/no and choice judges   accuracy, balanced accuracy, kappa, confusion matrix
    numeric      score judges               Spearman rho, Kendall tau-b (rank-based: any label scale)
    pairwise     better-response judges     pairwise accuracy (a both-orders tie counts as a miss)

Labels are read and joined to results in join.py (names kept importable from here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..errors import InputError
from ..statistics import (
    Correlation,
    PairwiseAccuracy,
    balanced_accuracy,
    bootstrap_ci,
    cohen_kappa,
    confusion_matrix,
    kendall,
    pairwise_accuracy,
    ranks,
    roc_auc,
    spearman,
    wilson_interval,
)
from .calibration import CalibratedRate, binary_pairs, calibrate
from .join import Join, Kind, is_missing, join_labels, judge_kind, judge_value, normalise_label, read_labels, row_format

if TYPE_CHECKING:
    from ..store.results import ResultRow

# the label join moved to join.py; its names stay importable from here
__all__ = [
    "AgreementReport",
    "Disagreement",
    "Join",
    "Kind",
    "agree",
    "agreements_for_run",
    "calibrated_rates",
    "join_labels",
    "judge_kind",
    "judge_value",
    "label_auc",
    "normalise_label",
    "pick_judge",
    "read_labels",
    "row_format",
]

# -------------------------------------------------------------------------------------- agreement


class Disagreement(BaseModel):
    """A row where judge and label disagree (categorical: different values; numeric: ranks at least n/4 apart)."""

    row_id: str
    row_index: int
    label: Any
    judge_value: Any
    score: float | None
    rationale: str | None
    inputs: dict[str, Any]


class AgreementReport(BaseModel):
    """One judge against human labels: the join, the row counts, the statistics that fit the judge's kind, and
    the disagreeing rows (at most `max_disagreements`; `n_disagreements` counts them all)."""

    judge: str
    kind: Kind
    label_column: str
    join: Join
    n_used: int  # matched, labelled and scored
    n_unlabelled: int  # matched rows with an empty label
    n_unscored: int  # matched rows the judge could not score
    labels: list[Any] | None = None  # categorical / pairwise: the classes, in matrix order
    accuracy: float | None = None
    accuracy_ci: tuple[float, float] | None = None
    balanced_accuracy: float | None = None
    cohen_kappa: float | None = None
    cohen_kappa_ci: tuple[float, float] | None = None  # 95 % percentile bootstrap (1000 resamples, seed 0)
    confusion: list[list[int]] | None = None  # rows: human label, columns: judge
    spearman: Correlation | None = None
    kendall: Correlation | None = None
    pairwise: PairwiseAccuracy | None = None
    # ROC AUC of the judge's score against the (binary) labels: does it rank positives above negatives at all?
    auc: float | None = None
    auc_ci: tuple[float, float] | None = None  # 95 % percentile bootstrap (1000 resamples, seed 0)
    auc_score: str | None = None  # "expected_score" (run with --probs) or "score" (the verdict itself: coarse)
    n_auc: int = 0
    n_disagreements: int = 0
    disagreements: list[Disagreement] = []
    # the run's pass rate corrected for the judge's TPR/TNR on these labels (pass/fail judges; see calibration.py)
    calibrated: CalibratedRate | None = None
    # pass/fail judges: each labelled row's human verdict (1.0 pass, 0.0 fail) keyed by its row_index, for the
    # prediction-powered estimates (trust/judge_trust.py); not part of the agreement JSON
    pass_labels: dict[int, float] | None = Field(default=None, exclude=True)


def pick_judge(judges: Sequence[str], judge: str | None) -> str:
    """`judge` when the run has it, else the run's only judge; `InputError` when it is absent or ambiguous."""
    if judge is not None:
        if judge not in judges:
            raise InputError(f"judge {judge!r} is not in this run; it has: {', '.join(judges) or '(none)'}")
        return judge
    if len(judges) != 1:
        raise InputError(f"the run has {len(judges)} judges ({', '.join(judges)}); choose one with --judge NAME")
    return judges[0]


def agree(
    rows: Sequence[ResultRow],
    labels: Sequence[dict[str, Any]],
    label_column: str,
    judge: str | None = None,
    key: str | None = None,
    max_disagreements: int = 200,
) -> AgreementReport:
    """Agreement of one judge's results with the label column of `labels`."""
    name = pick_judge(list(dict.fromkeys(r.judge for r in rows)), judge)
    rows = [r for r in rows if r.judge == name]
    if not any(label_column in lab for lab in labels):
        cols = ", ".join(dict.fromkeys(k for lab in labels for k in lab))
        raise InputError(f"labels have no column {label_column!r}; columns: {cols}")
    kind, allowed = judge_kind(rows)
    pairs, join = join_labels(rows, labels, key)
    bad: Counter[str] = Counter()
    used: list[tuple[ResultRow, Any, Any]] = []
    n_unlabelled = n_unscored = 0
    for row, lab in pairs:
        raw = lab.get(label_column)
        if is_missing(raw):
            n_unlabelled += 1
            continue
        value = normalise_label(raw, kind, allowed)
        if value is None:
            bad[repr(raw)] += 1
            continue
        if not row.result.scored:
            n_unscored += 1
            continue
        jv = judge_value(row, kind)
        if jv is None:
            n_unscored += 1
            continue
        used.append((row, value, jv))
    if bad:
        can = {"numeric": "numbers", "pairwise": "1, 2 or tie"}.get(kind) or ", ".join(map(str, allowed or []))
        shown = ", ".join(f"{v} ({c} row{'s' if c > 1 else ''})" for v, c in bad.most_common(5))
        if len(bad) > 5:
            shown += f" and {len(bad) - 5} more value(s)"
        raise InputError(
            f"label column {label_column!r} has values judge {name!r} cannot produce: {shown}; it produces "
            f"{can}: map the labels to those values"
        )
    rep = AgreementReport(
        judge=name,
        kind=kind,
        label_column=label_column,
        join=join,
        n_used=len(used),
        n_unlabelled=n_unlabelled,
        n_unscored=n_unscored,
    )
    if not used:
        return rep
    y = [u[1] for u in used]
    p = [u[2] for u in used]
    if kind == "numeric":
        rep.spearman, rep.kendall = spearman(p, y), kendall(p, y)
        n = len(used)
        rank_j, rank_l = ranks(p), ranks(y)
        gap = sorted(range(n), key=lambda i: -abs(rank_j[i] - rank_l[i]))
        worst = [i for i in gap if abs(rank_j[i] - rank_l[i]) >= n / 4]  # ranks a quarter of the range apart
    else:
        classes = list(allowed or [])
        classes += [c for c in dict.fromkeys([*y, *p]) if c not in classes]
        if kind == "pairwise":
            rep.pairwise = pairwise_accuracy(y, p)
            rep.accuracy, rep.accuracy_ci = rep.pairwise.accuracy, rep.pairwise.accuracy_ci
        else:
            k = sum(a == b for a, b in zip(y, p, strict=True))
            rep.accuracy, rep.accuracy_ci = k / len(y), wilson_interval(k, len(y))
            rep.balanced_accuracy, rep.cohen_kappa = balanced_accuracy(y, p), cohen_kappa(y, p)
            rep.cohen_kappa_ci = bootstrap_ci(lambda idx: cohen_kappa([y[i] for i in idx], [p[i] for i in idx]), len(y))
        rep.labels, rep.confusion = classes, confusion_matrix(y, p, classes)
        worst = [i for i in range(len(used)) if y[i] != p[i]]
    if kind == "categorical":
        pairs_pf = binary_pairs([(u[1], u[2], u[0].result.passed) for u in used], allowed)
        if pairs_pf is not None:
            verdicts = [bool(r.result.passed) for r in rows if r.result.scored and r.result.passed is not None]
            rep.calibrated = calibrate(verdicts, pairs_pf)
            judged = [u[0].row_index for u in used if u[0].result.passed is not None]  # binary_pairs' rows, in order
            rep.pass_labels = {i: float(human) for i, (human, _) in zip(judged, pairs_pf, strict=True)}
    rep.auc, rep.auc_ci, rep.auc_score, rep.n_auc = label_auc(kind, [(u[0], u[1]) for u in used])
    rep.n_disagreements = len(worst)
    rep.disagreements = [
        Disagreement(
            row_id=used[i][0].row_id,
            row_index=used[i][0].row_index,
            label=y[i],
            judge_value=used[i][0].result.value,
            score=used[i][0].result.score,
            rationale=used[i][0].result.rationale,
            inputs=used[i][0].inputs,
        )
        for i in worst[:max_disagreements]
    ]
    return rep


def label_auc(
    kind: Kind, rows: Sequence[tuple[ResultRow, Any]], n_boot: int = 1000
) -> tuple[float | None, tuple[float, float] | None, str | None, int]:
    """(AUC, its bootstrap CI, which score was used, n) of judge scores against binary labels: yes for yes/no
    judges, the first answer for pairwise ones (ties left out), the higher of exactly two values for numeric ones.
    The expected score (`--probs`) when every row has one, else the score; (None, None, None, 0) when the labels are
    not binary or no score exists."""
    if kind == "pairwise":
        rows = [(r, y) for r, y in rows if y in (1, 2)]
        pos = [y == 1 for _, y in rows]
    elif kind == "numeric":
        values = sorted({y for _, y in rows})
        if len(values) != 2:
            return None, None, None, 0
        pos = [y == values[1] for _, y in rows]
    else:
        if not rows or not {y for _, y in rows} <= {"yes", "no"}:
            return None, None, None, 0
        pos = [y == "yes" for _, y in rows]
    use = "expected_score" if rows and all(r.result.expected_score is not None for r, _ in rows) else "score"
    scores = [getattr(r.result, use) for r, _ in rows]
    if not rows or any(x is None for x in scores):
        return None, None, None, 0
    auc = roc_auc(pos, scores)
    if auc is None:
        return None, None, None, len(rows)

    def stat(idx: Sequence[int]) -> float | None:
        return roc_auc([pos[i] for i in idx], [scores[i] for i in idx])

    return auc, bootstrap_ci(stat, len(rows), n_boot), use, len(rows)


def agreements_for_run(
    run: Any, labels_path: str | Path, label_column: str, judges: Sequence[str] | None = None, key: str | None = None
) -> tuple[list[AgreementReport], list[tuple[str, str]]]:
    """Agreement of several judges of a loaded run. Named judges must fit; unnamed ones that don't are skipped.

    Returns (reports, skipped as (judge, reason)); raises the first error when no judge fits.
    """
    labels = read_labels(labels_path)
    names = list(judges) if judges else run.judges()
    reports: list[AgreementReport] = []
    skipped: list[tuple[str, str]] = []
    first: InputError | None = None
    for name in names:
        try:
            reports.append(agree(run.rows, labels, label_column, judge=name, key=key))
        except InputError as e:
            if judges:
                raise
            first = first or e
            skipped.append((name, str(e)))
    if not reports and first is not None:
        raise first
    return reports, skipped


def calibrated_rates(
    rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], label_column: str, key: str | None = None
) -> dict[str, CalibratedRate]:
    """The corrected pass rate of every pass/fail judge in `rows` that the labels fit (see calibration.py); judges the
    labels do not fit (numeric, pairwise, other label values) are left out."""
    out: dict[str, CalibratedRate] = {}
    for name in dict.fromkeys(r.judge for r in rows):
        try:
            rep = agree(rows, labels, label_column, judge=name, key=key, max_disagreements=0)
        except InputError:
            continue
        if rep.calibrated is not None:
            out[name] = rep.calibrated
    return out
