"""Trust figures of one judge of a run, wired from its stored results: the pass rate by PPI++ beside labels-only and
Rogan–Gladen (ppi.py), how many more labels reach a target width (budget.py), and the bias report (bias.py), for
`agree`, `run`'s summary and `report`.

What is estimated is the human pass rate of a pass/fail judge. The judge's prediction on each row is its expected
score (`--probs`) when every scored row has one, oriented so that a higher score means a pass, else its verdict
(1 pass, 0 fail). Labels are the human verdicts of `AgreementReport.pass_labels`; PPI++ assumes they are a random
sample of the rows (the stored labels of `localjudge view`'s random queue are: trust/rates.py `choose_labels`).

The bias report needs no labels: the first-position win rate of a pairwise judge run in both orders, the length
coefficient and length-controlled pass rate on the answer column (`ANSWER_COLUMNS`, or the two answers of a pairwise
judge), and self-preference when a generator column (`GENERATOR_COLUMNS`) names the judge's model: a stored result keeps
only the judge's own inputs, so the column must be one of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..errors import InputError
from .bias import LengthBias, PositionBias, SelfPreference, length_bias, position_bias, position_picks, self_preference
from .budget import LabelBudget, label_budget
from .ppi import Estimate, Estimates, estimates, shown_difference, split_rows
from .section import TrustSection

if TYPE_CHECKING:
    from ..store.results import ResultRow

ANSWER_COLUMNS = ("output", "answer", "response", "completion", "actual_output")  # the judged answer, first found
PAIR_COLUMNS = ("answer_1", "answer_2")  # the pairwise judges' two answers
GENERATOR_COLUMNS = ("generator", "generator_model", "model")  # which model wrote the answer
Prediction = Literal["expected score", "verdict"]


class JudgeTrust(BaseModel):
    """One judge's estimates (None with the reason in `refused` when they cannot be made), label budget and biases."""

    judge: str
    prediction: Prediction | None = None  # what PPI++ used of the judge on each row
    estimates: Estimates | None = None
    refused: str | None = None
    active: Estimate | None = None  # from the `active` queue's labels, each weighted by 1 / its stored probability
    budget: LabelBudget | None = None
    position: PositionBias | None = None
    length: LengthBias | None = None
    self_preference: SelfPreference | None = None

    def lines(self) -> list[str]:
        """The figures as plain lines for a terminal or a report, estimates first, then budget and biases."""
        out: list[str] = []
        if self.estimates is not None:
            e = self.estimates
            out.append(f"pass rate by PPI++: {estimate_text(e.ppi)} (from the judge's {self.prediction}; {e.ppi.note})")
            out.append(f"pass rate by labels only: {estimate_text(e.labels_only)}")
            if e.rogan_gladen is not None:
                out.append(f"pass rate by Rogan–Gladen: {estimate_text(e.rogan_gladen)}")
            else:
                out.append(f"pass rate by Rogan–Gladen: refused ({e.rogan_gladen_refused})")
        elif self.refused:
            out.append(f"no PPI++ estimate: {self.refused}")
        if self.active is not None:
            out.append(f"pass rate by active labels (Horvitz–Thompson): {estimate_text(self.active)} ({self.active.note})")
        if self.budget is not None:
            out.append(f"label budget (random-sample labels): {self.budget.text}")
        out += [b.sentence for b in (self.position, self.length, self.self_preference) if b is not None]
        return out

    def flagged(self) -> list[str]:
        """The sentences of the biases found significant."""
        return [b.sentence for b in (self.position, self.length, self.self_preference) if b is not None and b.flagged]

    def section(self) -> TrustSection:
        """The figures as the report's section of this judge."""
        return TrustSection(judge=self.judge, lines=self.lines(), flagged=self.flagged())


def estimate_text(e: Estimate) -> str:
    """`41.2% [33.0%, 49.4%] (±8.2 points, n=80 labels)`: the estimate with its interval at its level; a
    continuity-corrected interval names ppi-python's uncorrected half-width beside it (`; ppi-python ±7.6`)."""
    lo, hi = e.interval
    raw = (
        "" if e.ppi_python_interval is None else f"; ppi-python ±{(e.ppi_python_interval[1] - e.ppi_python_interval[0]) * 50:.1f}"
    )
    return f"{e.estimate:.1%} [{lo:.1%}, {hi:.1%}] (±{e.half_width * 100:.1f} points, n={e.n_labels} labels{raw})"


def predictions(rows: Sequence[ResultRow]) -> tuple[dict[int, float], Prediction] | None:
    """The judge's prediction of a pass on each scored row, keyed by row_index, and which kind it is; None when the
    judge gives no pass/fail (a score or pairwise judge without a pass threshold)."""
    scored = [r for r in rows if r.result.scored and r.result.passed is not None]
    if not scored:
        return None
    exp = [r.result.expected_score for r in scored]
    if all(x is not None and 0.0 <= x <= 1.0 for x in exp):
        pairs = [(float(x), bool(r.result.passed)) for x, r in zip(exp, scored, strict=True) if x is not None]
        up = [x for x, p in pairs if p]
        down = [x for x, p in pairs if not p]
        flip = bool(up) and bool(down) and sum(up) / len(up) < sum(down) / len(down)  # a judge whose "no" passes
        return {r.row_index: (1 - x if flip else x) for (x, _), r in zip(pairs, scored, strict=True)}, "expected score"
    return {r.row_index: float(bool(r.result.passed)) for r in scored}, "verdict"


def _aligned(preds: Mapping[int, float], labels: Mapping[int, float]) -> tuple[list[float], dict[int, float]]:
    """Predictions as a list and the labels keyed by position in it (labelled rows the judge could not score are
    left out: their prediction does not exist)."""
    order = sorted(preds)
    pos = {row: i for i, row in enumerate(order)}
    return [preds[r] for r in order], {pos[r]: v for r, v in labels.items() if r in pos}


def judge_estimates(
    rows: Sequence[ResultRow], labels: Mapping[int, float] | None, *, target_half_width: float | None = None
) -> tuple[Estimates | None, LabelBudget | None, Prediction | None, str | None]:
    """(estimates, label budget, prediction kind, refusal) for one judge's `rows` and its human pass labels keyed by
    row_index. The budget is made only for a `target_half_width`."""
    got = predictions(rows)
    if got is None:
        return None, None, None, "the judge gives no pass/fail verdict to estimate a pass rate from"
    if not labels:
        return None, None, got[1], "no human pass/fail labels for this judge"
    preds, kind = got
    pred_list, lab = _aligned(preds, labels)
    budget = None
    if target_half_width is not None:
        y, f, u = split_rows(pred_list, lab)
        budget = label_budget(y, f, u, target_half_width=target_half_width)
    try:
        return estimates(pred_list, lab), budget, kind, None
    except InputError as e:
        return None, budget, kind, str(e)


def _lengths(rows: Sequence[ResultRow]) -> LengthBias | None:
    """Length bias on the answer column, or on the two answers' length difference for a pairwise judge."""
    scored = [r for r in rows if r.result.scored]
    if not scored:
        return None
    inputs = scored[0].inputs
    try:
        if all(c in inputs for c in PAIR_COLUMNS):
            from ..judges.pairwise import winner_of

            decided = [(r, winner_of(r.result)) for r in scored]
            decided = [(r, w) for r, w in decided if w in (1, 2)]
            return length_bias(
                [1.0 if w == 1 else 0.0 for _, w in decided],
                [len(str(r.inputs.get(PAIR_COLUMNS[0], ""))) for r, _ in decided],
                other_lengths=[len(str(r.inputs.get(PAIR_COLUMNS[1], ""))) for r, _ in decided],
            )
        col = next((c for c in ANSWER_COLUMNS if c in inputs), None)
        scored = [r for r in scored if r.result.passed is not None]
        if col is None or not scored:
            return None
        return length_bias([float(bool(r.result.passed)) for r in scored], [len(str(r.inputs.get(col, ""))) for r in scored])
    except InputError:
        return None  # too few rows to fit: no length figure rather than a guess


def _self_preference(rows: Sequence[ResultRow]) -> SelfPreference | None:
    """Pass rate on answers whose generator column names the judge's own model against the rest."""
    scored = [r for r in rows if r.result.scored and r.result.passed is not None and r.record is not None]
    if not scored:
        return None
    col = next((c for c in GENERATOR_COLUMNS if c in scored[0].inputs), None)
    model = scored[0].record.model_id if scored[0].record is not None else ""
    if col is None or not model:
        return None
    gens = [None if r.inputs.get(col) is None else str(r.inputs.get(col)) for r in scored]
    return self_preference([float(bool(r.result.passed)) for r in scored], gens, model)


def judge_trust(
    rows: Sequence[ResultRow], judge: str, labels: Mapping[int, float] | None = None, *, target_half_width: float | None = None
) -> JudgeTrust:
    """Every trust figure of `judge` in `rows` (the run's rows; other judges' are ignored) with its human pass labels
    keyed by row_index (None or empty: the bias report only)."""
    mine = [r for r in rows if r.judge == judge]
    est, budget, kind, refused = judge_estimates(mine, labels, target_half_width=target_half_width)
    picks = position_picks(r.result for r in mine)
    try:
        position = position_bias(picks) if picks else None
    except InputError:
        position = None  # every pair tied: no decision to count
    return JudgeTrust(
        judge=judge,
        prediction=kind,
        estimates=est,
        refused=refused,
        budget=budget,
        position=position,
        length=_lengths(mine),
        self_preference=_self_preference(mine),
    )


def difference_text(d: Estimate) -> str:
    """`+5.0 points [-2.1, +12.1] (95% interval; paired: ...)`: a difference of two pass rates in percentage points."""
    lo, hi = d.interval
    sure = "excludes 0: a real difference" if lo > 0 or hi < 0 else "includes 0: no difference shown"
    return f"{d.estimate * 100:+.1f} points [{lo * 100:+.1f}, {hi * 100:+.1f}] ({d.level:.0%} interval {sure}; {d.note})"


def content_keys(rows: Sequence[ResultRow]) -> dict[int, str]:
    """Each row_index's content: the hash of the inputs the judge was given (`engine.base.canonical_hash`, as cache
    keys hash them), numbered in row order where the same inputs repeat, so two copies of a row stay two rows."""
    from ..engine.base import canonical_hash

    seen: dict[str, int] = {}
    out: dict[int, str] = {}
    for r in sorted(rows, key=lambda r: r.row_index):
        h = canonical_hash(r.inputs)
        out[r.row_index] = f"{h}#{seen.get(h, 0)}"
        seen[h] = seen.get(h, 0) + 1
    return out


def paired_rows(
    rows_a: Sequence[ResultRow], labels_a: Mapping[int, float], rows_b: Sequence[ResultRow], labels_b: Mapping[int, float]
) -> dict[int, int] | None:
    """B's row_index -> A's row_index of the row holding the same inputs, when the two runs scored the same rows and
    labelled the same ones, whatever their order (`content_keys`); None when they differ: then there is nothing to
    pair, even where the row numbers match."""
    ga, gb = predictions(rows_a), predictions(rows_b)
    if ga is None or gb is None:
        return None
    ka, kb = content_keys(rows_a), content_keys(rows_b)
    if any(i not in ka for i in [*ga[0], *labels_a]) or any(i not in kb for i in [*gb[0], *labels_b]):
        return None
    if {ka[i] for i in ga[0]} != {kb[i] for i in gb[0]} or {ka[i] for i in labels_a} != {kb[i] for i in labels_b}:
        return None
    of_a = {ka[i]: i for i in ga[0]}
    return {i: of_a[kb[i]] for i in gb[0]}


def run_difference(
    rows_a: Sequence[ResultRow], labels_a: Mapping[int, float], rows_b: Sequence[ResultRow], labels_b: Mapping[int, float]
) -> Estimate | None:
    """The PPI++ difference of one judge's human pass rate between two runs (A minus B): paired row by row when both
    runs scored and labelled rows of the same inputs (`paired_rows`: by content, not row number), else independent,
    the note saying why. None when either side has no estimate."""
    ga, gb = predictions(rows_a), predictions(rows_b)
    if ga is None or gb is None or not labels_a or not labels_b:
        return None
    pairs = paired_rows(rows_a, labels_a, rows_b, labels_b)
    try:
        if pairs is not None:
            pb = {pairs[i]: v for i, v in gb[0].items()}
            lb = {pairs[i]: v for i, v in labels_b.items() if i in pairs}  # an unscored row has no prediction
            return shown_difference(_aligned(ga[0], labels_a), _aligned(pb, lb), paired=True)
        est = shown_difference(_aligned(ga[0], labels_a), _aligned(gb[0], labels_b), paired=False)
    except InputError:
        return None
    ka, kb = content_keys(rows_a), content_keys(rows_b)
    same_rows = {ka.get(i) for i in ga[0]} == {kb.get(i) for i in gb[0]}
    why = "the runs labelled different rows" if same_rows else "the runs judged rows of different inputs"
    return est.model_copy(update={"note": f"{est.note}; not paired: {why}"})


def stored_pass_labels(
    rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], judge: str
) -> tuple[dict[int, float] | None, str | None]:
    """The human pass labels of `judge` keyed by row_index from a run directory's stored labels (the random-sample
    ones when there are enough: `rates.choose_labels`), and the warning when they are not a random sample."""
    from ..labels.agreement import agree
    from .rates import LABEL_COLUMN, choose_labels

    chosen, _, warning = choose_labels(labels, judge)
    if not chosen:
        return None, None
    try:
        return agree(rows, chosen, LABEL_COLUMN, judge=judge, max_disagreements=0).pass_labels, warning
    except InputError:
        return None, None


def stored_trust(
    rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], judge: str, *, target_half_width: float | None = None
) -> JudgeTrust:
    """`judge_trust` from the labels stored in a run directory: the random-sample ones when there are enough
    (`rates.choose_labels`: PPI++ needs a random sample); otherwise all of them, and the PPI++ note says the
    estimate may be biased."""

    pass_labels, warning = stored_pass_labels(rows, labels, judge)
    out = judge_trust(rows, judge, pass_labels, target_half_width=target_half_width)
    out.active = active_estimate(rows, labels, judge)
    if warning and out.estimates is not None:
        note = out.estimates.ppi.note + "; the labels are not a random sample, so the interval does not cover selection bias"
        out.estimates.ppi = out.estimates.ppi.model_copy(update={"note": note})
    return out


def active_estimate(rows: Sequence[ResultRow], labels: Sequence[dict[str, Any]], judge: str) -> Estimate | None:
    """The pass rate of `judge` from its `active` labels (the view's active queue), each weighted by 1 / the sampling
    probability stored with it (`trust.active.active_mean`: unbiased whatever the probabilities); None with fewer than
    2 such labels that fit the judge's pass/fail verdicts. Random and other labels are not used here."""
    from ..labels.agreement import agree
    from .active import WeightedLabel, active_mean
    from .rates import LABEL_COLUMN

    mine = [r for r in rows if r.judge == judge]
    act = [lab for lab in labels if lab.get("judge") == judge and lab.get("sample") == "active" and lab.get("probability")]
    got = predictions(mine)
    if len(act) < 2 or got is None:
        return None
    try:
        passes = agree(mine, act, LABEL_COLUMN, judge=judge, max_disagreements=0).pass_labels
    except InputError:
        return None
    prob = {int(lab["row_index"]): float(lab["probability"]) for lab in act}
    pred_list, lab = _aligned(got[0], passes or {})
    pos = {row: i for i, row in enumerate(sorted(got[0]))}
    weighted = [WeightedLabel(row=i, label=y, probability=prob[r]) for r, i in pos.items() if i in lab for y in [lab[i]]]
    try:
        return active_mean(pred_list, weighted)
    except InputError:
        return None


def run_trust(
    rows: Sequence[ResultRow],
    *,
    stored: Sequence[dict[str, Any]] = (),
    labels: Sequence[dict[str, Any]] = (),
    label_column: str = "label",
) -> dict[str, JudgeTrust]:
    """`JudgeTrust` of every judge of `rows` that has a PPI++ estimate, from a run directory's `stored` labels or
    from a labels file's rows (`labels`, read in `label_column`), in the rows' judge order."""
    from ..labels.agreement import agree

    out: dict[str, JudgeTrust] = {}
    for name in dict.fromkeys(r.judge for r in rows):
        if stored:
            got = stored_trust(rows, stored, name)
        else:
            try:
                got = judge_trust(rows, name, agree(rows, labels, label_column, judge=name, max_disagreements=0).pass_labels)
            except InputError:
                continue  # labels that do not fit this judge: no estimate
        if got.estimates is not None:
            out[name] = got
    return out
