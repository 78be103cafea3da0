"""The compare page's human pass-rate difference (new − base) per judge: the PPI++ difference with its 95 % interval
beside the labels-only difference, or the sentence saying why none can be given.

The PPI++ figure is `trust.judge_trust.run_difference` on the same inputs `localjudge report --compare` gives it: each
run's results of the judge and its stored pass labels (`stored_pass_labels`: labels bind to the row's content, stale
ones left out; the random-sample ones when there are enough), so the page and `report --compare` print the same
numbers for the same two stores (tests/test_view_compare_trust.py). The labels-only figure is the same difference at
lambda = 0: paired on the labelled rows of the same inputs when the PPI++ one is paired (`paired_rows`: rows pair by
their content, not their row number), else the two label means' variances added, with the same continuity correction."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..labels.store import label_rows
from ..store import queries
from ..store.results import ResultRow
from ..trust.judge_trust import difference_text, paired_rows, predictions, run_difference, stored_pass_labels
from ..trust.ppi import Estimate, continuity_corrected, correction_for, labels_only, normal_interval
from .pages import esc
from .runs import RunHandle

MIN_LABELS = 2  # an interval needs at least 2 labelled rows on each side (trust.ppi)


class JudgeDifference(BaseModel):
    """One judge's difference of the human pass rate between the runs (new − base), or `reason` why there is none."""

    judge: str
    n_labels_base: int
    n_labels_new: int
    ppi: Estimate | None = None
    labels_only: Estimate | None = None
    text: str | None = None  # the figure as `report --compare` prints it (`difference_text`)
    reason: str | None = None


def _rows(run: RunHandle, judge: str) -> list[ResultRow]:
    with run.conn() as c:
        every = queries.judge_rows(c, run.run_id(), judge)
    return run.results_of_cells(judge, sorted(every))


def labels_only_difference(
    rows_new: Sequence[ResultRow],
    labels_new: Mapping[int, float],
    rows_base: Sequence[ResultRow],
    labels_base: Mapping[int, float],
    *,
    paired: bool,
) -> Estimate:
    """new − base from the labels alone, on the labelled rows the PPI++ difference used (those with a prediction);
    `paired` (the PPI++ difference was): per-row differences of the rows `paired_rows` matches."""
    gn, gb = predictions(rows_new), predictions(rows_base)
    la = {r: v for r, v in labels_new.items() if gn is None or r in gn[0]}
    lb = {r: v for r, v in labels_base.items() if gb is None or r in gb[0]}
    pairs = paired_rows(rows_new, labels_new, rows_base, labels_base) if paired else None
    if pairs is not None:
        of_new = {pairs[i]: v for i, v in lb.items()}  # base's labels under the new run's row of the same inputs
        diffs = [la[i] - of_new[i] for i in sorted(la)]
        est = labels_only(diffs)
        note = "paired: the mean of the per-row label differences on the same labelled rows"
        return continuity_corrected(est, correction_for(diffs)).model_copy(update={"note": note})
    a, b = labels_only(list(la.values())), labels_only(list(lb.values()))
    d, se = a.estimate - b.estimate, math.hypot(a.std_error, b.std_error)
    est = Estimate(
        method="labels-only",
        estimate=d,
        interval=normal_interval(d, se, 0.95),
        std_error=se,
        n_labels=a.n_labels + b.n_labels,
        n_predictions=0,
        note="independent: the two label means, their variances added",
    )
    return continuity_corrected(est, correction_for(list(la.values())) + correction_for(list(lb.values())))


def judge_difference(base: RunHandle, new: RunHandle, judge: str) -> JudgeDifference:
    """The difference for one judge, computed as `report --compare` computes it."""
    if judge not in base.judges() or judge not in new.judges():
        side = "base" if judge not in base.judges() else "new"
        return JudgeDifference(judge=judge, n_labels_base=0, n_labels_new=0, reason=f"the judge is not in the {side} run")
    rows_b, rows_n = _rows(base, judge), _rows(new, judge)
    lab_b = stored_pass_labels(rows_b, label_rows(base.path, judge), judge)[0] or {}
    lab_n = stored_pass_labels(rows_n, label_rows(new.path, judge), judge)[0] or {}
    out = JudgeDifference(judge=judge, n_labels_base=len(lab_b), n_labels_new=len(lab_n))
    if predictions(rows_b) is None or predictions(rows_n) is None:
        return out.model_copy(update={"reason": "the judge gives no pass/fail verdict, so there is no pass rate to compare"})
    if not lab_b or not lab_n:
        where = " and ".join(s for s, lab in (("base", lab_b), ("new", lab_n)) if not lab)
        return out.model_copy(
            update={"reason": f"no human labels in the {where} run; label rows of both runs on their labelling pages"}
        )
    if len(lab_b) < MIN_LABELS or len(lab_n) < MIN_LABELS:
        return out.model_copy(
            update={
                "reason": f"too few labels ({len(lab_b)} in base, {len(lab_n)} in new); an interval needs at least {MIN_LABELS} in each run"
            }
        )
    diff = run_difference(rows_n, lab_n, rows_b, lab_b)
    if diff is None:
        return out.model_copy(update={"reason": "these labels give no interval (too few labelled rows the judge scored)"})
    lo = labels_only_difference(rows_n, lab_n, rows_b, lab_b, paired=diff.note.startswith("paired"))
    return out.model_copy(update={"ppi": diff, "labels_only": lo, "text": difference_text(diff)})


def compare_trust(base: RunHandle, new: RunHandle) -> list[JudgeDifference]:
    """Every judge of either run (new's order first), each with its difference or the reason there is none."""
    return [judge_difference(base, new, j) for j in dict.fromkeys([*new.judges(), *base.judges()])]


def compare_trust_json(base: RunHandle, new: RunHandle) -> dict[str, Any]:
    """GET /api/compare?a=BASE&b=NEW as JSON."""
    return {"base": base.rid, "new": new.rid, "judges": [d.model_dump(mode="json") for d in compare_trust(base, new)]}


def _points(e: Estimate) -> str:
    lo, hi = e.interval
    return f"{e.estimate * 100:+.1f} pt [{lo * 100:+.1f}, {hi * 100:+.1f}]"


def difference_html(diffs: Sequence[JudgeDifference]) -> str:
    """The compare page's section: one table row per judge (ids `d-<n>-ppi`, `d-<n>-labels` for the figures)."""
    rows = []
    for n, d in enumerate(diffs):
        if d.ppi is None or d.labels_only is None:
            cells = f"<td colspan='2' class='sub' id='d-{n}-reason'>{esc(d.reason)}</td>"
        else:
            cells = f"<td id='d-{n}-ppi' title='{esc(d.text)}'>{esc(_points(d.ppi))}</td><td id='d-{n}-labels'>{esc(_points(d.labels_only))}</td>"
        rows.append(f"<tr><td>{esc(d.judge)}</td>{cells}<td>{d.n_labels_base}</td><td>{d.n_labels_new}</td></tr>")
    return (
        "<h2>Human pass rate difference (new − base, 95% interval)</h2><table id='difference'><thead><tr><th>judge</th>"
        "<th>PPI++</th><th>labels only</th><th>labels base</th><th>labels new</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
