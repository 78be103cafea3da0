"""Negative controls without labels: does a judge tell its run's rows from the same rows with another row's answer?

For a sample of a finished run's scored rows (seeded), each control row keeps the row's inputs and takes the
answer of another sampled row (a derangement: a seeded shuffle shifted by one; a pair whose answers are equal is
left out). The answer variable is the one the judge file declares (`[controls] answer = ...`, judges/spec.py); a
judge that declares none gets no control, and the report says so. The controls are judged by the same judge and
model into their own run directory (RUN_DIR/controls: resumable and cached like any run; never part of the run's
results, pass rates, exports, `agree` or `align`). `save_controls` writes the report to RUN_DIR/controls/controls.json
and gives each judge of RUN_DIR/summary.json a `controls` object, leaving the rest of the summary as it was (a later
run of the same directory rewrites summary.json from its results, without them, until controls are judged again).

The measure, per judge, on the sampled rows and their controls: mean score and pass rate of each side; the AUC of
real-vs-control scores (the probability that a real row scores above its control, ties counted half) with a 95 %
interval by Newcombe's score method; a one-sided permutation p-value over `PERMUTATIONS` seeded relabellings (bounded by work,
not time). In words: "discriminates" (interval above 0.5 and p < 0.05), "cannot tell its rows from mismatched
ones" (interval below `BLIND_BELOW`, or both sides scored alike throughout), else "inconclusive". Real rows are not
assumed good: the claim is only that a judge scoring another row's answer as high as the row's own is not reading
the answer.

Other kinds of control (`kinds`; each its own sample of pairs, directory and measure): `non_answer` gives each sampled
row one fixed sentence that answers nothing (`NON_ANSWER`) as its answer, the plainest control; `context` and
`reference` swap the context or the reference between rows (a derangement, as for the answer) for a judge that
declares that variable. A grounding judge that scores a row as high with another row's context is not reading the
context. `same_answer` gives a pairwise judge the row's first answer on both sides (`[controls] pair`): the right verdict
is neither, so what it measures is position, the picks of each side against even odds (`position`). `last_turn` gives a
conversation judge (`[controls] conversation`) its row's conversation with the last assistant answer replaced by another
sampled conversation's (a derangement; the rest of the conversation kept), every value the row derives from its
conversation made again from the changed, typed conversation (the run's stored conversations). A per-turn row (a
conversation judged at turn granularity) is given another conversation's reply in place of its turn's reply, the
window before it kept. A row judged per tool call, or without an assistant answer, is left out, and the report says how
many and why; a conversation judge whose verdict does not rest on the last answer says why in its file
(`[controls] no_last_turn`), and that sentence is its verdict. Mismatched answers
(`answer`) are the controls by default; each other kind costs `sample` more calls per judge.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..conversations.model import Conversation
from ..conversations.render import turn_windows, unit_interactions
from ..errors import InputError, LocalJudgeError, UnknownJudgeError
from ..run.record import RunRecord
from ..run.types import ControlCalls
from ..statistics.correlation import ranks
from ..store.results import ResultRow

PERMUTATIONS = 2000
MIN_PAIRS = 8  # fewer control pairs: "inconclusive (n too small)"
BLIND_BELOW = 0.75  # an AUC interval wholly below this cannot be called discrimination worth the name
DISCRIMINATES = "discriminates"
BLIND = "cannot tell its rows from mismatched ones: its pass rate says little about these outputs"
INCONCLUSIVE = "inconclusive"
TOO_FEW = "inconclusive (n too small)"
KINDS = ("answer", "non_answer", "context", "reference", "same_answer", "last_turn")  # the kinds of control, in judging order
DECLARED = {  # the [controls] key that names each kind's variable
    "answer": "answer",
    "non_answer": "answer",
    "context": "context",
    "reference": "reference",
    "same_answer": "pair",
    "last_turn": "conversation",
}
WHAT = {  # what a control row holds instead of the row's own value
    "answer": "another row's answer",
    "non_answer": "a fixed non-answer",
    "context": "another row's context",
    "reference": "another row's reference",
    "same_answer": "the same answer on both sides",
    "last_turn": "another conversation's last assistant turn",
}
# a pairwise judge given one answer on both sides (`same_answer`): which position it picks, decided pairs only
PREFERS_FIRST = "prefers the first position when both answers are the same: its choices say more about order than answers"
PREFERS_SECOND = "prefers the second position when both answers are the same: its choices say more about order than answers"
NO_PREFERENCE = "no position preference found when both answers are the same"
# unrelated to any question a judged app answers, plain, and the same for every row and run
NON_ANSWER = "The museum is closed on Mondays, and tickets are sold at the door."


class JudgeControls(BaseModel):
    """One judge's controls: what was swapped, both sides' means, the AUC, its interval, the p-value, the verdict."""

    judge: str
    variable: str | None  # the declared variable the control changes; None: the judge declares none (no control)
    kind: str = "answer"  # what the control row holds instead of the row's own value (KINDS, WHAT)
    n: int = 0  # pairs scored on both sides
    real_mean: float | None = None
    control_mean: float | None = None
    real_pass_rate: float | None = None
    control_pass_rate: float | None = None
    auc: float | None = None
    auc_ci: list[float] | None = None
    p_value: float | None = None
    first: int | None = None  # same_answer: the identical pairs the judge gave to the first position
    second: int | None = None  # ... to the second
    ties: int | None = None  # ... neither (a tie, or a value that is no position)
    verdict: str
    left_out: str | None = None  # last_turn: the rows no control could be made of, and why (None: none)


class ControlsReport(BaseModel):
    """The controls of one run: the seed and sample size asked for, and each judge's result: `judges` for
    mismatched answers (the default kind), `other_kinds` kind → judge → result for each other kind judged."""

    seed: int
    sample: int
    judges: dict[str, JudgeControls]
    other_kinds: dict[str, dict[str, JudgeControls]] = {}


def score_of(row: ResultRow) -> float | None:
    """What a row is ranked by: the expected score when the judge gave probabilities, else the score, else the
    pass/fail as 1/0 (None for an unscored row)."""
    r = row.result
    if not r.scored:
        return None
    for v in (r.expected_score, r.score):
        if v is not None:
            return float(v)
    return None if r.passed is None else float(bool(r.passed))


def kinds_asked(asked: Sequence[str]) -> tuple[str, ...]:
    """The kinds of control to judge from the command line's choices: mismatched answers first and always, `all`
    standing for every kind."""
    return tuple(k for k in KINDS if k == "answer" or k in asked or "all" in asked)


def _sample(rows: Sequence[ResultRow], variable: str, sample: int, seed: int) -> list[ResultRow]:
    """Up to `sample` of the scored rows that have `variable`, chosen by a generator seeded by the seed and the
    variable (so the answer's kinds share their rows)."""
    scored = sorted((r for r in rows if score_of(r) is not None and variable in r.inputs), key=lambda r: r.row_index)
    return random.Random(f"controls:{seed}:{variable}").sample(scored, min(sample, len(scored)))


def binomial_p(k: int, n: int) -> float:
    """Two-sided exact binomial p-value of `k` successes in `n` fair trials (the probability of an outcome at most as
    likely as `k`)."""
    if n == 0:
        return 1.0
    probs = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(q for q in probs if q <= probs[k] * (1 + 1e-9)))


def position(judge: str, second: str, control: Sequence[ResultRow]) -> JudgeControls:
    """A pairwise judge's same-answer controls: which position it picked on each pair whose two answers are one (the
    verdict's value 1 or 2; anything else a tie), and whether the decided picks lean to one position (an exact
    two-sided binomial test against even odds, p < 0.05)."""
    values = [r.result.value for r in control if r.result.scored]
    first, second_n = sum(v == 1 for v in values), sum(v == 2 for v in values)
    out = JudgeControls(
        judge=judge, variable=second, kind="same_answer", n=len(values), first=first, second=second_n, verdict=TOO_FEW
    )
    out.ties = len(values) - first - second_n
    decided = first + second_n
    if decided:
        out.p_value = round(binomial_p(first, decided), 4)
    if len(values) < MIN_PAIRS:
        return out
    if out.p_value is not None and out.p_value < 0.05:
        out.verdict = PREFERS_FIRST if first > second_n else PREFERS_SECOND
    else:
        out.verdict = NO_PREFERENCE
    return out


def pairs(
    rows: Sequence[ResultRow], variable: str, sample: int, seed: int, kind: str = "answer"
) -> list[tuple[ResultRow, dict[str, Any]]]:
    """Up to `sample` scored rows of one judge (seeded by `variable`: the answer's two kinds share their rows) and,
    for each, its inputs with `variable` replaced as `kind` says: another sampled row's value (a derangement), or for
    `non_answer` `NON_ANSWER` (a one-item list where the value is a list). A row whose replaced value would equal its
    own is left out, as is a `non_answer` row whose value is neither text nor a list."""
    chosen = _sample(rows, variable, sample, seed)
    if len(chosen) < 2:
        return []
    out = []
    for i, row in enumerate(chosen):
        own = row.inputs[variable]
        if kind == "non_answer":
            other: Any = NON_ANSWER if isinstance(own, str) else [NON_ANSWER] if isinstance(own, list) else own
        else:
            other = chosen[(i + 1) % len(chosen)].inputs[variable]
        if other != own:
            out.append((row, {**row.inputs, variable: other}))
    return out


def _last_answer(conv: Conversation) -> int | None:
    """Index of a conversation's last assistant turn with text (the answer a last-turn control replaces), or None."""
    return next(
        (i for i in range(len(conv.turns) - 1, -1, -1) if conv.turns[i].role == "assistant" and conv.turns[i].content), None
    )


def _judged(row: ResultRow, conv: Conversation, window: int) -> tuple[Conversation, int] | None:
    """The conversation as the judge saw it for `row` (its stored conversation `conv`, less the turns the run cut to
    fit; a per-turn row's: its window of `window` units, as conversations.dataset cut it) and the index in it where
    what the row judges begins (0 for a whole conversation; a per-turn row's: its unit interaction). None for a
    per-turn row whose unit the conversation does not have."""
    cut = row.truncated_turns or 0
    if row.turn_index is None:
        return conv.model_copy(update={"turns": conv.turns[cut:]}), 0
    wins, units = turn_windows(conv, window), unit_interactions(conv.turns)
    if not 0 <= row.turn_index < len(wins):
        return None
    w = wins[row.turn_index]
    start = w.start + min(cut, w.end - w.start - 1)  # the last turn is always kept (dataset._fitted)
    return conv.model_copy(update={"turns": conv.turns[start : w.end]}), max(0, units[row.turn_index][0] - start)


def _apart(chosen: list[tuple[ResultRow, Conversation, int]]) -> tuple[list[tuple[ResultRow, Conversation, int]], int]:
    """The sampled rows in the order a shift by the returned step gives each a row of another conversation: grouped by
    conversation (groups in the order the sample first met them, rows in sampled order), the step the largest
    group's size, the largest group's last rows left out while it holds more than half of them (no other
    conversation's reply for them). Rows of distinct conversations (whole conversations) keep their order, step 1."""
    groups: dict[str, list[tuple[ResultRow, Conversation, int]]] = {}
    for c in chosen:
        groups.setdefault(str(c[0].conversation_id), []).append(c)
    while groups:
        largest = max(groups.values(), key=len)
        if 2 * len(largest) <= sum(len(g) for g in groups.values()):
            break
        largest.pop()
        if not largest:
            groups = {k: g for k, g in groups.items() if g}
    ordered = [c for g in groups.values() for c in g]
    return ordered, max((len(g) for g in groups.values()), default=1)


def last_turn_pairs(
    rows: Sequence[ResultRow],
    variable: str,
    sample: int,
    seed: int,
    conversations: Mapping[str, Conversation],
    sources: dict[str, str] | None = None,
    window: int = 10,
) -> tuple[list[tuple[ResultRow, dict[str, Any]]] | None, str | None]:
    """Up to `sample` scored conversation rows (seeded, as `pairs`) and, for each, its inputs made again
    (`derived_values`; `sources`: variable -> the derived value it reads) from its conversation as the judge saw it
    (`_judged`: its stored conversation, `conversations` by id, less the turns the run cut to fit; a per-turn row's
    window of `window` units) with the last assistant answer of what it judges (a whole conversation's last; a
    per-turn row's, its turn's reply) replaced by another sampled row's, of another conversation (a derangement:
    `_apart`); a row whose replaced answer equals its own is left out. None instead of the pairs when fewer than 2
    conversations can be used. Also the rows no control could be made of, in words (None when there are none): a
    per-tool-call row, one whose conversation was not stored, one with no assistant answer, one whose conversation
    holds more than half the sample."""
    from ..conversations.dataset import derived_values

    call, stored, answered, crowded = (
        "judged per tool call",
        "without a stored conversation",
        "with no assistant answer to replace",
        "whose conversation holds more than half the sample (no other conversation's answer for them)",
    )
    why = dict.fromkeys((call, stored, answered, crowded), 0)
    usable: list[tuple[ResultRow, Conversation, int]] = []
    for r in sorted(rows, key=lambda r: r.row_index):
        if score_of(r) is None or variable not in r.inputs:
            continue
        conv = conversations.get(r.conversation_id) if r.conversation_id is not None else None
        if r.conversation_id is None or r.tool_call_index is not None:
            why[call] += 1
        elif conv is None:
            why[stored] += 1
        else:
            judged = _judged(r, conv, window)
            last = _last_answer(judged[0]) if judged is not None else None
            if judged is None or last is None or last < judged[1]:
                why[answered] += 1
            else:
                usable.append((r, judged[0], last))
    sampled = random.Random(f"controls:{seed}:{variable}").sample(usable, min(sample, len(usable)))
    chosen, step = _apart(sampled)
    why[crowded] = len(sampled) - len(chosen)
    counted = [f"{k} {reason}" for reason, k in why.items() if k]
    left_out = f"rows left out: {'; '.join(counted)}" if counted else None
    if len(chosen) < 2:
        return None, left_out
    out = []
    for i, (row, conv, last) in enumerate(chosen):
        other_conv, other_last = chosen[(i + step) % len(chosen)][1:]
        answer = other_conv.turns[other_last].content
        if answer == conv.turns[last].content:
            continue
        turns = list(conv.turns)
        turns[last] = turns[last].model_copy(update={"content": answer})
        out.append((row, derived_values(conv.model_copy(update={"turns": turns}), row.inputs, sources or {})))
    return out, left_out


def _midranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the mean of the ranks they span."""
    return [r + 1 for r in ranks(values)]


def _auc_of_ranks(rank_sum: float, n_real: int, n_control: int) -> float:
    return (rank_sum - n_real * (n_real + 1) / 2) / (n_real * n_control)


def auc(real: Sequence[float], control: Sequence[float]) -> float:
    """P(real > control) + ½ P(tie) over all pairs (the Mann–Whitney AUC, from midranks)."""
    ranks = _midranks([*real, *control])
    return _auc_of_ranks(sum(ranks[: len(real)]), len(real), len(control))


def _newcombe_variance(theta: float, n_real: int, n_control: int) -> float:
    half = (n_real + n_control) / 2 - 1
    return theta * (1 - theta) * (1 + (half - 1) * ((1 - theta) / (2 - theta) + theta / (1 + theta))) / (n_real * n_control)


def auc_interval(a: float, n_real: int, n_control: int, z: float = 1.959964) -> list[float]:
    """The 95 % interval of an AUC by Newcombe's score method (2006, method 5: the θ with |θ − a| = z·SE(θ), SE
    from Hanley–McNeil with N* = (m + n)/2 − 1), each bound found by 60 bisection steps. Hanley–McNeil's own Wald
    interval covered 89–93 % at 10–20 pairs in seeded simulation (binormal scores); this one 94–97 % at 20."""

    def inside(theta: float) -> bool:
        return abs(theta - a) <= z * math.sqrt(_newcombe_variance(theta, n_real, n_control))

    lo, hi = 0.0, a  # the lower bound: the smallest θ ≤ a still inside
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if inside(mid) else (mid, hi)
    lower = (lo + hi) / 2
    lo, hi = a, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if inside(mid) else (lo, mid)
    return [round(lower, 4), round((lo + hi) / 2, 4)]


def permutation_p(real: Sequence[float], control: Sequence[float], seed: int, n: int = PERMUTATIONS) -> float:
    """One-sided p-value of the AUC under random relabelling of the pooled scores (seeded, `n` relabellings;
    the pooled midranks are computed once, so each relabelling costs one pass)."""
    ranks = _midranks([*real, *control])
    observed = sum(ranks[: len(real)])
    rng = random.Random(f"permutation:{seed}")
    hits = sum(sum(rng.sample(ranks, len(real))) >= observed - 1e-9 for _ in range(n))
    return (hits + 1) / (n + 1)


def measure(
    judge: str,
    variable: str | None,
    real: Sequence[ResultRow],
    control: Mapping[str, ResultRow],
    seed: int,
    kind: str = "answer",
) -> JudgeControls:
    """The judge's controls of one `kind` from its real rows and the control results keyed by the real row's id."""
    if variable is None:
        return JudgeControls(
            judge=judge, variable=None, kind=kind, verdict=f"no control: the judge file declares no {DECLARED[kind]} variable"
        )
    both = [(score_of(r), score_of(control[r.row_id]), r, control[r.row_id]) for r in real if r.row_id in control]
    both = [b for b in both if b[0] is not None and b[1] is not None]
    xs = [float(b[0]) for b in both if b[0] is not None]
    ys = [float(b[1]) for b in both if b[1] is not None]

    def rate(rows: list[ResultRow]) -> float | None:
        known = [bool(r.result.passed) for r in rows if r.result.passed is not None]
        return round(sum(known) / len(known), 4) if known else None

    out = JudgeControls(judge=judge, variable=variable, kind=kind, n=len(both), verdict=TOO_FEW)
    if not both:
        return out
    out.real_mean, out.control_mean = round(sum(xs) / len(xs), 4), round(sum(ys) / len(ys), 4)
    out.real_pass_rate, out.control_pass_rate = rate([b[2] for b in both]), rate([b[3] for b in both])
    a = auc(xs, ys)
    out.auc, out.auc_ci, out.p_value = round(a, 4), auc_interval(a, len(xs), len(ys)), round(permutation_p(xs, ys, seed), 4)
    if len(both) < MIN_PAIRS:
        return out
    if out.auc_ci[0] > 0.5 and out.p_value < 0.05:
        out.verdict = DISCRIMINATES
    elif out.auc_ci[1] < BLIND_BELOW or len(set(xs) | set(ys)) == 1:
        out.verdict = BLIND
    else:
        out.verdict = INCONCLUSIVE
    return out


def _same_prompt(judge: Any, real: Mapping[str, Any], control: Mapping[str, Any]) -> bool:
    """Whether a one-call judge would send the control exactly what it sent the real row (the swapped variable is not
    in its prompt: e.g. a row that gives `guidelines` a whole `guidelines_context`): such a pair says nothing and is
    not judged. Several-call judges are always judged (a later call may show the variable)."""
    if not judge.traits.single_call:
        return False
    try:
        return bool(judge.prepare(real).requests == judge.prepare(control).requests)
    except LocalJudgeError:
        return False


def check_kinds(kinds: Sequence[str]) -> None:
    """Refuse a kind of control that is not one of `KINDS`, naming it."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise InputError(f"control kind {unknown[0]!r}: use one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class ControlOptions:
    """How a run's controls are judged: `sample` rows per judge and kind (at least 2), the `seed` of the sample, the
    swap and the permutation test, `model`/`engine` (what judges them; by default the run's own model), the
    `model_options` a `model` loads with (by default the run's), `judges_dir` (the user's judge files, as for the run)
    and `kinds` (`KINDS`; mismatched answers are always judged). Built once where the controls are asked for (the
    `controls` command, `run --controls`, a Python caller) and carried as it is; bad values raise `InputError` when
    it is built."""

    sample: int = 20
    seed: int = 0
    model: str | None = None
    engine: Any = None
    model_options: Mapping[str, Any] | None = None
    judges_dir: str | Path | None = None
    kinds: Sequence[str] = ("answer",)

    def __post_init__(self) -> None:
        if self.sample < 2:
            raise InputError(f"--sample {self.sample}: controls need at least 2 rows to swap answers between")
        check_kinds(self.kinds)

    @classmethod
    def given(cls, options: ControlOptions | None, keywords: Mapping[str, Any]) -> ControlOptions:
        """`options` (the defaults when None) with the fields named in `keywords` replaced (a name that is no field
        raises `TypeError`, naming it)."""
        if options is not None and not isinstance(options, cls):
            raise TypeError(f"options must be a ControlOptions, got {type(options).__name__}")
        return replace(options or cls(), **keywords) if keywords else options or cls()


def run_controls(run_dir: str | Path, options: ControlOptions | None = None, /, **keywords: Any) -> ControlsReport:
    """Judge the controls of a finished run (RUN_DIR/controls, resumable) and measure each judge: mismatched
    answers, and each other kind in `kinds` (`KINDS`; mismatched answers are always judged, they are the report's
    `judges`), each kind's pairs into RUN_DIR/controls/JUDGE.KIND.

    How: a `ControlOptions`, or its fields as keyword arguments (`run_controls(run_dir, sample=20, kinds=["context"])`,
    as before it existed), or both (the keywords then replace those fields of `options`).

    `model`/`engine`: what judges the controls; by default the run's own model (its registry name or file), and a
    control run by another model than the run's is refused (its scores would compare two models)."""
    return judge_controls(run_dir, options, **keywords)[0]


def judge_controls(
    run_dir: str | Path, options: ControlOptions | None = None, /, **keywords: Any
) -> tuple[ControlsReport, ControlCalls]:
    """`run_controls`, and what its control rows cost (`ControlCalls`: what `run --controls` prints beside the run's
    own calls)."""
    from ..conversations.stored import read_stored_conversations
    from ..judges import get_judge
    from .rundir import load_run

    opts = ControlOptions.given(options, keywords)
    run = load_run(run_dir)
    record = run.record
    if opts.engine is None and opts.model is None:
        if record.backend not in (None, "llama"):
            raise InputError(
                f"the run was judged by a {record.backend!r} model; pass --model with the same model to judge its controls"
            )
        opts = replace(opts, model=record.model_id)
    rows_by_judge: dict[str, list[ResultRow]] = {}
    for r in run.rows:
        rows_by_judge.setdefault(r.judge, []).append(r)
    ordered = kinds_asked(opts.kinds)
    report: dict[str, dict[str, JudgeControls]] = {k: {} for k in ordered}
    calls = ControlCalls()
    # the run's conversations, typed, for the last-turn controls (none read unless asked)
    convs = read_stored_conversations(Path(run_dir) / "results.sqlite", run.run_id) if "last_turn" in ordered else {}
    for name, rows in rows_by_judge.items():
        try:
            judge = get_judge(name, judges_dir=opts.judges_dir)
        except UnknownJudgeError:  # a panel member's renamed judge, or a user judge without --judges-dir
            for k in ordered:
                report[k][name] = JudgeControls(
                    judge=name, variable=None, kind=k, verdict=f"no control: no judge file named {name!r} (--judges-dir)"
                )
            continue
        for k in ordered:
            out = Path(run_dir) / "controls" / (name if k == "answer" else f"{name}.{k}")  # '.' is in no judge's name
            report[k][name], cost = _judge_kind(judge, rows, k, opts, record, out, convs)
            calls += cost
    others = {k: v for k, v in report.items() if k != "answer"}
    return ControlsReport(seed=opts.seed, sample=opts.sample, judges=report["answer"], other_kinds=others), calls


def _swapped(kind: str, variable: str) -> str:
    """What a control of `kind` put in `variable`, in words."""
    if kind == "same_answer":
        return f"the first answer as {variable}"
    if kind == "last_turn":
        return f"another conversation's last assistant answer in {variable}"
    return f"a fixed non-answer as {variable}" if kind == "non_answer" else f"another row's {variable}"


def _judge_kind(
    judge: Any,
    rows: list[ResultRow],
    kind: str,
    opts: ControlOptions,
    record: RunRecord,
    out: Path,
    conversations: Mapping[str, Conversation],
) -> tuple[JudgeControls, ControlCalls]:
    """One judge's controls of one kind: its pairs judged into `out` (a run directory) and measured, and what they
    cost."""
    from ..conversations.dataset import conversation_sources
    from ..run.plain import run_plain
    from ..run.spec import RunSpec

    name, sample, seed, engine = judge.name, opts.sample, opts.seed, opts.engine
    declared = (judge.spec.controls.model_dump() if judge.spec.controls else {}).get(DECLARED[kind])
    if declared is None:
        unsuited = judge.spec.controls.no_last_turn if judge.spec.controls and kind == "last_turn" else None
        if unsuited:  # the judge file says why its verdict does not rest on the last assistant answer
            return JudgeControls(judge=name, variable=None, kind=kind, verdict=f"no control: {unsuited}"), ControlCalls()
        return measure(name, None, rows, {}, seed, kind), ControlCalls()
    left_out = None
    if kind == "last_turn":
        variable = declared
        window = int((record.conversation or {}).get("window") or 10)  # a per-turn row's units, as the run cut them
        swapped, left_out = last_turn_pairs(
            rows, variable, sample, seed, conversations, conversation_sources(judge.spec.variables), window
        )
        if swapped is None:
            why = f" ({left_out})" if left_out else ""
            verdict = f"no control: fewer than 2 conversations to swap last assistant answers between{why}"
            return JudgeControls(judge=name, variable=variable, kind=kind, verdict=verdict, left_out=left_out), ControlCalls()
        chosen = swapped
    elif kind == "same_answer":
        first, second = declared
        chosen = [
            (r, {**r.inputs, second: r.inputs[first]})
            for r in _sample(rows, first, sample, seed)
            if second in r.inputs and r.inputs[second] != r.inputs[first]
        ]
        variable = second
    else:
        variable = declared
        chosen = pairs(rows, variable, sample, seed, kind)
    kept = [(r, inputs) for r, inputs in chosen if not _same_prompt(judge, r.inputs, inputs)]
    if chosen and not kept:
        return JudgeControls(
            judge=name,
            variable=variable,
            kind=kind,
            verdict=f"no control: {_swapped(kind, variable)} left all {len(chosen)} prompts unchanged (these rows give "
            f"the judge its {DECLARED[kind]} through another variable)",
        ), ControlCalls()
    data = [{"id": r.row_id, **inputs} for r, inputs in kept]
    got: dict[str, ResultRow] = {}
    cost = ControlCalls()
    if data:
        spec = RunSpec.build(
            data,
            [judge],
            model=opts.model,
            engine=engine,
            model_options=dict(opts.model_options or record.engine or {}) if engine is None else None,
            options={k: v for k, v in (record.options or {}).items() if v is not None},  # the run's decoding
            out=out,
            mapping={k: k for k in data[0] if k != "id"},
        )
        if engine is None and record.model_sha256:  # before any call: its identity, nothing loaded
            mine = spec.model.ref().identity()
            if mine.digest != record.model_sha256:
                raise InputError(
                    f"the run was judged by {record.model_id} and --model is {mine.model_id} (another digest); "
                    "pass --model with the run's model"
                )
        res = run_plain(spec, None)
        got = {r.row_id: r for r in res.results}
        cost = ControlCalls(judged=res.counts.evaluated, cached=res.counts.cached + res.counts.reused)
    if kind == "same_answer":
        return position(name, variable, [got[r.row_id] for r, _ in kept if r.row_id in got]), cost
    measured = measure(name, variable, [r for r, _ in kept], got, seed, kind)
    if left_out:
        measured.left_out = left_out
    return measured, cost


def summary_entry(j: JudgeControls, report: ControlsReport) -> dict[str, Any]:
    """One judge's controls as summary.json carries them (`judges.NAME.controls`): the answer variable, the pairs
    on each side, both means, the AUC with its interval, the p-value, the verdict, and the sample and seed asked for."""
    return {
        "variable": j.variable,
        "n_real": j.n,
        "n_control": j.n,
        "real_mean": j.real_mean,
        "control_mean": j.control_mean,
        "auc": j.auc,
        "auc_ci": j.auc_ci,
        "p_value": j.p_value,
        "verdict": j.verdict,
        "sample": report.sample,
        "seed": report.seed,
        **({"first": j.first, "second": j.second, "ties": j.ties} if j.kind == "same_answer" else {}),
        **({"left_out": j.left_out} if j.left_out else {}),
    }


class StoredControls(BaseModel):
    """One judge's controls as summary.json carries them (`summary_entry`), read back (the report's controls table,
    the view's run page): every figure may be missing, the verdict may not."""

    model_config = ConfigDict(extra="allow", frozen=True)

    variable: str | None = None
    n_real: int | None = None
    n_control: int | None = None
    real_mean: float | None = None
    control_mean: float | None = None
    auc: float | None = None
    auc_ci: list[float] | None = None
    p_value: float | None = None
    verdict: str
    sample: int | None = None
    seed: int | None = None
    left_out: str | None = None  # last_turn: the rows no control could be made of, and why
    other_kinds: dict[str, StoredControls] = {}  # kind -> the same figures (`run --control-kind`, `controls --kind`)

    @property
    def ci(self) -> list[float] | None:
        """The AUC's interval, None unless it is a pair."""
        return self.auc_ci if self.auc_ci is not None and len(self.auc_ci) == 2 else None

    def shown(self) -> list[tuple[str, StoredControls]]:
        """(kind, its figures) as the report and view show them: the answers' first, then each other kind judged
        whose variable the judge declares."""
        return [("answer", self), *((k, v) for k, v in self.other_kinds.items() if v.variable)]


def stored_controls(summary: Any) -> dict[str, StoredControls]:
    """Judge -> its controls, from a parsed summary.json, in the summary's order: a judge whose `controls` is not an
    object with a text verdict has none; a figure of the wrong type (a damaged or hand-edited file) reads as missing."""
    judges = summary.get("judges") if isinstance(summary, dict) else None
    if not isinstance(judges, dict):
        return {}
    out = {}
    for name, entry in judges.items():
        c = entry.get("controls") if isinstance(entry, dict) else None
        if not isinstance(c, dict) or not isinstance(c.get("verdict"), str):
            continue
        out[str(name)] = _stored(c)
    return out


def _stored(c: dict[str, Any]) -> StoredControls:
    """One judge's stored controls; a figure of the wrong type reads as missing, and so do other kinds that are not
    each an object with a text verdict."""
    others = c.get("other_kinds")
    kinds = {}
    if isinstance(others, dict):
        kinds = {str(k): _stored(v) for k, v in others.items() if isinstance(v, dict) and isinstance(v.get("verdict"), str)}
    c = {k: v for k, v in c.items() if k != "other_kinds"}
    try:
        got = StoredControls.model_validate(c)
    except ValidationError as e:
        bad = {str(err["loc"][0]) for err in e.errors() if err.get("loc")}
        got = StoredControls.model_validate({k: v for k, v in c.items() if k not in bad})
    return got.model_copy(update={"other_kinds": kinds}) if kinds else got


def save_controls(run_dir: str | Path, report: ControlsReport) -> Path:
    """Write the report to RUN_DIR/controls/controls.json and return its path; then set each judge's `controls`
    object in RUN_DIR/summary.json (a judge the report lacks loses a stale one). Both writes are atomic, and every
    other byte of summary.json stays as it was: results, pass rates and the other exports are not touched."""
    from .. import jsonio
    from ..run.exports import write_json_atomic
    from ..store.atomic import write_atomic

    saved = write_atomic(Path(run_dir) / "controls" / "controls.json", report.model_dump_json(indent=2), mkdir=True)
    path = Path(run_dir) / "summary.json"
    if path.is_file():
        try:
            summary = jsonio.loads(path.read_bytes())
        except ValueError as e:
            raise InputError(f"{path}: {e}; the summary is damaged: run the evaluation again") from None
        for name, entry in (summary.get("judges") or {}).items():
            if name in report.judges:
                entry["controls"] = summary_entry(report.judges[name], report)
                others = {k: summary_entry(v[name], report) for k, v in report.other_kinds.items() if name in v}
                if others:  # the other kinds judged, each as the answer's (absent when only answers were swapped)
                    entry["controls"]["other_kinds"] = others
            else:
                entry.pop("controls", None)
        write_json_atomic(path, summary)
    return saved


SHORT = {
    DISCRIMINATES: "discriminates",
    BLIND: "blind",
    INCONCLUSIVE: "inconclusive",
    TOO_FEW: "n too small",
    PREFERS_FIRST: "prefers 1st",
    PREFERS_SECOND: "prefers 2nd",
    NO_PREFERENCE: "no preference",
}


def verdict_word(verdict: str) -> str:
    """A verdict in a word or two, for a table column: discriminates, blind, inconclusive, n too small, no control."""
    return SHORT.get(verdict) or ("no control" if verdict.startswith("no control") else verdict)


def controls_column(report: ControlsReport | None) -> dict[str, str] | None:
    """Judge → its verdict in a word or two (`verdict_word`), the `controls` column of the run's table; None without
    controls (no column). The answers' verdict where the judge declares an answer; else that of the first other kind
    judged whose variable it declares, named (`blind (last_turn)`: a conversation judge declares no answer); else
    the answers' `no control`."""
    if report is None:
        return None
    out: dict[str, str] = {}
    for name, j in report.judges.items():
        out[name] = verdict_word(j.verdict)
        if j.variable is not None:
            continue
        for kind, judges in report.other_kinds.items():
            o = judges.get(name)
            if o is not None and o.variable is not None:
                out[name] = f"{verdict_word(o.verdict)} ({kind})"
                break
    return out


SENTENCES = {
    DISCRIMINATES: "discriminates: it scores its own rows above the same rows given another row's answer "
    "(interval above 0.5, p < 0.05)",
    BLIND: BLIND,
    INCONCLUSIVE: "inconclusive: the interval reaches both chance and a useful discrimination; more controls "
    "(--sample, --controls) narrow it",
    TOO_FEW: f"inconclusive (n too small): fewer than {MIN_PAIRS} pairs were judged; more controls (--sample, --controls) "
    "can decide",
}


def verdict_sentence(verdict: str) -> str:
    """The verdict as a sentence that says what it rests on (the report's controls table)."""
    return SENTENCES.get(verdict, verdict)


def controls_lines(report: ControlsReport) -> list[str]:
    """The report as text: one line per judge, under a heading per kind of control."""
    out: list[str] = []
    for kind, judges in (("answer", report.judges), *report.other_kinds.items()):
        out.append(f"negative controls ({WHAT[kind]}; {report.sample} rows sampled, seed {report.seed}):")
        for j in judges.values():
            if j.kind == "same_answer" and j.first is not None:
                p = "" if j.p_value is None else f", p = {j.p_value:.3f}"
                out.append(f"  {j.judge}: first {j.first}, second {j.second}, tie {j.ties} of {j.n}{p}: {j.verdict}")
                continue
            if j.auc is None or not j.auc_ci:
                out.append(f"  {j.judge}: {j.verdict}")
                continue
            out.append(
                f"  {j.judge}: real mean {j.real_mean:.3f} vs control {j.control_mean:.3f}, AUC {j.auc:.2f} "
                f"[{j.auc_ci[0]:.2f}, {j.auc_ci[1]:.2f}], p = {j.p_value:.3f}, n = {j.n}: {j.verdict}"
                + (f" ({j.left_out})" if j.left_out else "")
            )
    return out


__all__ = [
    "KINDS",
    "NON_ANSWER",
    "ControlsReport",
    "JudgeControls",
    "StoredControls",
    "auc",
    "auc_interval",
    "controls_lines",
    "judge_controls",
    "kinds_asked",
    "last_turn_pairs",
    "measure",
    "pairs",
    "run_controls",
    "save_controls",
    "stored_controls",
]
