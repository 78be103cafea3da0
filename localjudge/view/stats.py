"""The live agreement panel: one judge's results against the labels so far, by localjudge.labels.agreement.

Stale labels (their row changed since they were given, localjudge/labels/store.py) are left out and counted (`n_stale`).
Two kinds of label are kept apart (see localjudge/labels/store.py):
  * agreement (accuracy, Cohen's kappa with its bootstrap interval, confusion matrix, AUC of the expected
    score, disagreements) is computed on all labels and, beside it, on the `random` labels alone; the counts
    per kind are shown, so a figure from uncertainty-ordered labels is never mistaken for the run's;
  * the human pass rate (share of "yes" / of label >= threshold) is estimated from the `random` labels only,
    with a Wilson interval, since an uncertainty-ordered sample over-represents borderline rows.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..errors import InputError
from ..labels.agreement import AgreementReport, agree, judge_kind
from ..statistics import wilson_interval
from .runs import RunHandle


def _report(rows: list[Any], labels: list[dict[str, Any]], judge: str) -> AgreementReport | None:
    if not labels:
        return None
    return agree(rows, labels, "label", judge=judge, key="row_index=row_index", max_disagreements=100)


def agreement(run: RunHandle, judge: str) -> dict[str, Any]:
    """Agreement of `judge` with the run's labels: all labels and the random sample apart, counts per sample kind,
    and the human pass rate from the random sample."""
    if judge not in run.judges():
        raise InputError(f"judge {judge!r} is not in this run; it has: {', '.join(run.judges())}")
    every = run.labels(judge)
    labels = {k: lab for k, lab in every.items() if not lab.stale}  # their rows changed since: never compared
    by_kind = Counter(lab.sample for lab in labels.values())
    rows = run.results_of_cells(judge, sorted(ri for ri, _ in labels))
    lab_rows = [{"row_index": str(ri), "label": lab.value, "sample": lab.sample} for (ri, _), lab in labels.items()]
    out: dict[str, Any] = {
        "judge": judge,
        "n_labels": len(labels),
        "n_stale": len(every) - len(labels),
        "by_sample": dict(by_kind),
    }
    try:
        out["all"] = _report(rows, lab_rows, judge)
        out["random"] = _report(rows, [r for r in lab_rows if r["sample"] == "random"], judge)
    except InputError as e:
        out["error"] = str(e)
        out["all"] = out["random"] = None
    rand = [lab.value for lab in labels.values() if lab.sample == "random"]
    kind, allowed = judge_kind(rows) if rows else ("categorical", None)
    if rand and kind == "categorical" and allowed == ["yes", "no"]:
        k = sum(1 for v in rand if str(v).lower() in ("yes", "true"))
        out["human_pass_rate"] = {"value": k / len(rand), "ci": wilson_interval(k, len(rand)), "n": len(rand)}
    else:
        out["human_pass_rate"] = None
    out["members"] = _members(run, judge, lab_rows, labels) if labels else {}
    for part in ("all", "random"):
        if isinstance(out.get(part), AgreementReport):
            out[part] = out[part].model_dump(mode="json", exclude={"join"})
            for d in out[part]["disagreements"]:
                d.pop("inputs", None)
    return out


def _members(run: RunHandle, judge: str, lab_rows: list[dict[str, Any]], labels: dict[Any, Any]) -> dict[str, Any]:
    """Each member of `judge`'s panel or cascade against the labels of `judge` (all labels)."""
    from .panels import member_label

    out: dict[str, Any] = {}
    for m in run.members().get(judge, []):
        rows = run.results_of_cells(m, sorted(ri for ri, _ in labels))
        got = {r.row_index for r in rows}
        mine = [r for r in lab_rows if int(r["row_index"]) in got]  # a cascade's strong model judged some rows only
        try:
            rep = _report(rows, mine, m) if rows else None
        except InputError as e:
            out[member_label(judge, m)] = {"error": str(e)}
            continue
        out[member_label(judge, m)] = (
            None
            if rep is None
            else {
                k: getattr(rep, k) for k in ("n_used", "n_unscored", "accuracy", "accuracy_ci", "cohen_kappa", "cohen_kappa_ci")
            }
        )
    return out
