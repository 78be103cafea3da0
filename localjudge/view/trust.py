"""The trust panel of the labelling page: one judge's pass rate by PPI++ with its 95 % interval, beside labels-only
and Rogan–Gladen (or the sentence saying why there is none), the estimate from the active queue's labels weighted
by their stored probabilities, and "N more labels to reach ±W". These are the figures and the lines `localjudge agree
--labels RUN_DIR --target-width W` prints for the same store: both call trust/judge_trust.py `stored_trust` on the
run's results and its stored labels (stale ones left out). The page re-reads them after each label."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..labels.store import label_rows
from ..store import queries
from .runs import RunHandle

DEFAULT_WIDTH = 0.05  # the half-width "N more labels" aims at, unless the page asks for another


def trust_panel(run: RunHandle, judge: str, width: float = DEFAULT_WIDTH) -> dict[str, Any]:
    """The judge's trust figures as JSON (`JudgeTrust`) with `lines`, the sentences `agree` prints."""
    from ..trust.judge_trust import stored_trust

    if judge not in run.judges():
        raise InputError(f"parameter judge={judge!r} is not a judge of this run ({', '.join(run.judges())})")
    with run.conn() as c:
        every = queries.judge_rows(c, run.run_id(), judge)
    rows = run.results_of_cells(judge, sorted(every))
    labels = label_rows(run.path, judge)
    trust = stored_trust(rows, labels, judge, target_half_width=width)
    return {**trust.model_dump(mode="json"), "width": width, "n_labels": len(labels), "lines": trust.lines()}
