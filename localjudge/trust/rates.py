"""Corrected pass rates of a run from the human labels stored in a run directory (made in `localjudge view` or
`localjudge labels import`), for `run` (summary.json and the printed summary) and `report`.

Which labels measure the judge's TPR/TNR. Every stored label records how its row was picked (`sample`, labels.py):
`random` rows are an unbiased sample of the run; `uncertain` rows were picked because the judge was unsure of them
(its errors are over-represented there, so TPR/TNR measured on them come out too low and the correction
overshoots); `browse` rows were picked by hand, for reasons nobody recorded. So:

  * a judge with at least `MIN_RANDOM` random-sample labels, both passing and failing ones, is corrected with its
    random-sample labels only (`labels` says so);
  * otherwise with all its labels, and `warning` says how many were not random and how many more random ones
    would be needed. The number is shown, not refused: it is still the best estimate the labels allow, but its
    interval does not cover the selection bias.

Agreement figures (accuracy, kappa) in the report stay on all labels, as `agree --labels RUN_DIR` gives them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..labels.agreement import AgreementReport
    from ..labels.calibration import CalibratedRate
    from ..store.results import ResultRow

MIN_RANDOM = 30  # random-sample labels of a judge needed to measure its TPR/TNR on them alone
LABEL_COLUMN = "label"  # the column a run directory's labels are read as (labels.label_rows)


def stored_labels(run_dir: str | Path) -> list[dict[str, Any]]:
    """The latest label rows of a run directory (empty when it has no store or no labels)."""
    from ..labels.store import is_run_dir, label_rows

    return label_rows(run_dir) if is_run_dir(run_dir) else []


def choose_labels(labels: Sequence[dict[str, Any]], judge: str) -> tuple[list[dict[str, Any]], str, str | None]:
    """The labels of `judge` that measure its TPR/TNR, a description of them and a warning (None when they are a
    random sample); see the module docstring."""
    mine = [lab for lab in labels if lab.get("judge") == judge]
    kinds = Counter(str(lab.get("sample") or "browse") for lab in mine)
    rand = [lab for lab in mine if lab.get("sample") == "random"]
    if len(rand) == len(mine):
        return mine, f"{len(mine)} random-sample labels", None
    if len(rand) >= MIN_RANDOM and len({str(lab.get(LABEL_COLUMN)) for lab in rand}) >= 2:
        return rand, f"{len(rand)} random-sample labels of {len(mine)} (the others were not picked at random)", None
    shown = ", ".join(f"{kinds[k]} {k}" for k in ("random", "uncertain", "browse", "active") if kinds[k])
    more = (
        f"label {MIN_RANDOM - len(rand)} more rows"
        if len(rand) < MIN_RANDOM
        else "the random-sample labels are all one value; label more rows"
    )
    warning = (
        f"{judge}: TPR/TNR measured on all {len(mine)} labels ({shown}), not a random sample: rows picked "
        "uncertainty-first or by hand over-represent the judge's errors, so the correction may overshoot; "
        f"{more} from the random queue of `localjudge view` for an unbiased estimate"
    )
    return mine, f"all {len(mine)} labels ({shown})", warning


def corrected(
    rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], judge: str, *, where: str = "the run"
) -> CalibratedRate | None:
    """The corrected pass rate of `judge` from the stored `labels` chosen by `choose_labels`, with `labels` and
    `warning` set; None when the judge has no labels or they do not fit it (numeric, pairwise, other values)."""
    from ..labels.agreement import agree

    chosen, described, warning = choose_labels(labels, judge)
    if not chosen:
        return None
    try:
        rep = agree(rows, chosen, LABEL_COLUMN, judge=judge, max_disagreements=0)
    except InputError:
        return None
    if rep.calibrated is None:
        return None
    return rep.calibrated.model_copy(update={"labels": f"{described} stored in {where}", "warning": warning})


def corrected_rates(
    rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], where: str = "the run"
) -> dict[str, CalibratedRate]:
    """`corrected` for every judge of `rows` that has stored labels, in the rows' judge order."""
    labelled = {lab.get("judge") for lab in labels}
    out: dict[str, CalibratedRate] = {}
    for name in dict.fromkeys(r.judge for r in rows):
        if name in labelled:
            cal = corrected(rows, labels, name, where=where)
            if cal is not None:
                out[name] = cal
    return out


def stored_agreements(
    rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], judges: Sequence[str] | None = None, where: str = "the run"
) -> tuple[list[AgreementReport], list[tuple[str, str]]]:
    """Agreement with the stored labels of each labelled judge (of `judges`, when given) on all its labels, its
    corrected pass rate from `corrected`; returns (reports, skipped as (judge, reason))."""
    from ..labels.agreement import agree

    labelled = list(dict.fromkeys(str(lab.get("judge")) for lab in labels))
    names = [j for j in (judges or dict.fromkeys(r.judge for r in rows)) if j in labelled]
    reports: list[AgreementReport] = []
    skipped: list[tuple[str, str]] = []
    for name in names:
        mine = [lab for lab in labels if lab.get("judge") == name]
        try:
            rep = agree(rows, mine, LABEL_COLUMN, judge=name)
        except InputError as e:
            skipped.append((name, str(e)))
            continue
        if rep.calibrated is not None:
            rep.calibrated = corrected(rows, labels, name, where=where) or rep.calibrated
        reports.append(rep)
    return reports, skipped


def rate_line(judge: str, cal: CalibratedRate) -> str:
    """One terminal line: the observed and the corrected pass rate with its interval (or the refusal, no number)."""
    from ..labels.calibration import calibrated_text

    obs = "n/a" if cal.observed is None else f"{cal.observed:.1%}"
    return f"{judge}: observed pass rate {obs}; corrected {calibrated_text(cal)}" + (
        f"; labels: {cal.labels}" if cal.labels else ""
    )


__all__ = ["MIN_RANDOM", "choose_labels", "corrected", "corrected_rates", "rate_line", "stored_agreements", "stored_labels"]
