"""Pairwise judging in both orders, and the statistics of pairwise results.

A pairwise judge reads two answers and says which is better. Small judges prefer a position; to
cancel that, judge each pair twice, the second time with the answers swapped, and map the second
verdict back. Both orders agree → that answer wins; they disagree → a tie.

For a runner, one pair in both orders is three calls:

    fwd = judge(inputs)
    swp = judge(swap_inputs(inputs))              # answer_1 <-> answer_2
    result = combine_orders(fwd, swp)             # value 1, 2 or "tie"; details keep both orders

`BothOrders(judge)` wraps a pairwise judge so that a batch run does exactly that per row with no
other change: `evaluate(data, judges=[BothOrders(get_judge("pairwise"))])`.

`pairwise_stats(results)` gives win/tie/loss counts and, for both-order results, the
position-consistency rate and the first-position preference rate (with 95 % Wilson intervals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from ..engine.base import DecodeOptions, Engine, Message, canonical_hash
from ..errors import InputError, MissingVariableError, UnscoredReason
from ..formats import OutputFormat
from ..statistics import wilson_interval
from ..store.results import JudgeResult, Timings, Usage
from .protocol import JudgeProtocol, OnResult, Prepared
from .spec import Variable

PAIR = ("answer_1", "answer_2")
BOTH_ORDERS_SUFFIX = "+both_orders"
Winner = Literal[1, 2, "tie"]


def swap_inputs(inputs: Mapping[str, Any], pair: tuple[str, str] = PAIR) -> dict[str, Any]:
    """The same inputs with the two answers swapped (other variables unchanged)."""
    a, b = pair
    missing = [k for k in pair if k not in inputs]
    if missing:
        raise MissingVariableError(
            f"cannot swap the pair: variable(s) {', '.join(missing)} missing; a pairwise judge needs both {a} and {b}"
        )
    out = dict(inputs)
    out[a], out[b] = inputs[b], inputs[a]
    return out


def picked_position(result: JudgeResult) -> int | None:
    """The position (1 or 2) a single-order result prefers; None when unscored or not pairwise."""
    if not result.scored:
        return None
    for v in (result.value, (result.verdict or {}).get("better_response")):
        if isinstance(v, bool):
            continue
        if v in (1, 2) or v in ("1", "2"):
            return int(v)
    return None


def winner_of(result: JudgeResult) -> Winner | None:
    """Which original answer wins: 1, 2, "tie" (both orders disagreed), or None when unscored."""
    if not result.scored:
        return None
    if result.value == "tie":
        return "tie"
    pos = picked_position(result)
    return pos  # type: ignore[return-value]


def is_both_orders(result: JudgeResult) -> bool:
    """Whether a result combines both orders of a pair."""
    return bool(result.details.get("both_orders"))


def _order_detail(name: str, r: JudgeResult, pos: int | None, winner: int | None) -> dict[str, Any]:
    raw = (r.verdict or {}).get("raw_value")
    return {
        "order": name,
        "picked_position": pos,
        "winner": winner,
        "raw_value": raw,
        "value": r.value,
        "rationale": r.rationale,
        "raw_text": r.raw_text,
        "unscored_reason": r.unscored_reason,
        "error": r.error,
    }


def combine_orders(forward: JudgeResult, swapped: JudgeResult) -> JudgeResult:
    """One result from the two orders of a pair: agreement → that answer, disagreement → "tie".

    `forward` judged (answer_1, answer_2), `swapped` judged (answer_2, answer_1). Score: 1.0 when
    answer 1 wins, 0.0 when answer 2 wins, 0.5 for a tie; `passed` is True only when answer 1 wins. With `--probs`,
    `expected_score` is P(answer 1 is better) averaged over both orders (`both_orders_expected`).
    If either order is unscored, the combination is unscored with that order's reason.
    """
    if forward.judge != swapped.judge:
        raise ValueError(f"cannot combine results of different judges: {forward.judge!r} and {swapped.judge!r}")
    p1, p2 = picked_position(forward), picked_position(swapped)
    w1 = p1
    w2 = None if p2 is None else 3 - p2
    details = {
        "both_orders": True,
        "consistent": None,
        "orders": [_order_detail("forward", forward, p1, w1), _order_detail("swapped", swapped, p2, w2)],
    }
    usage = Usage(**{k: getattr(forward.usage, k) + getattr(swapped.usage, k) for k in Usage.model_fields})
    timings = Timings(**{k: getattr(forward.timings, k) + getattr(swapped.timings, k) for k in Timings.model_fields})
    common = {
        "judge": forward.judge,
        "judge_version": forward.judge_version + BOTH_ORDERS_SUFFIX,
        "format": forward.format,
        "model_id": forward.model_id,
        "usage": usage,
        "timings": timings,
        "details": details,
        "raw_text": f"[forward]\n{forward.raw_text}\n[swapped]\n{swapped.raw_text}",
    }
    for name, r, p in (("forward", forward, p1), ("swapped", swapped, p2)):
        if p is None:
            reason = r.unscored_reason or UnscoredReason.NOT_PAIRWISE
            err = r.error or f"value {r.value!r} is not a pairwise verdict (1 or 2)"
            return JudgeResult(**common, unscored_reason=reason, error=f"{name} order: {err}")
    assert w1 is not None and w2 is not None
    consistent = w1 == w2
    details["consistent"] = consistent
    value: Winner = w1 if consistent else "tie"  # type: ignore[assignment]
    score = {1: 1.0, 2: 0.0, "tie": 0.5}[value]
    rationale = f"forward (picked {p1}): {forward.rationale or ''} | swapped (picked {p2}): {swapped.rationale or ''}"
    return JudgeResult(
        **common,
        value=value,
        score=score,
        passed=value == 1,
        rationale=rationale,
        verdict={"winner": value, "forward": forward.verdict, "swapped": swapped.verdict},
        expected_score=both_orders_expected(forward.expected_score, swapped.expected_score),
    )


def both_orders_expected(forward: float | None, swapped: float | None) -> float | None:
    """P(answer 1 is better) from both orders' expected scores: the forward order's P(first position) and one minus
    the swapped order's (there answer 1 sits second), averaged; None unless both orders have one (`--probs`).
    A judge that always prefers the first position gets about 0.5; one with a preference, away from 0.5."""
    if forward is None or swapped is None:
        return None
    return (forward + (1.0 - swapped)) / 2


class BothOrders:
    """A pairwise judge that judges every pair in both orders: same name, same variables, one result.

    It implements the judge contract (`judges.protocol.JudgeProtocol`), so a run needs no other change:
    `evaluate(data, [BothOrders(judge)])`. Its version is the judge's plus "+both_orders", so cached
    one-order results are never mixed in.
    """

    def __init__(self, judge: JudgeProtocol, pair: tuple[str, str] = PAIR):
        fmts = judge.output_formats
        spec = fmts[0].spec() if len(fmts) == 1 else [f.spec() for f in fmts]
        if not is_pairwise_format(spec):
            raise InputError(
                f"judge {judge.name!r} is not a pairwise judge (format {spec!r}); both orders apply only to pairwise judges "
                "(pairwise_json, or a relative prometheus / selene format)"
            )
        names = [*judge.required_variables, *judge.optional_variables]
        missing = [v for v in pair if v not in names]
        if missing:
            raise InputError(
                f"judge {judge.name!r} has no variable(s) {', '.join(missing)} to swap; its variables: {', '.join(names)}"
            )
        self.judge, self.pair = judge, pair
        self.name = judge.name
        self.version = judge.version + BOTH_ORDERS_SUFFIX
        self.pass_threshold = judge.pass_threshold

    @property
    def variables(self) -> Sequence[Variable]:
        """The pairwise judge's variables."""
        return self.judge.variables

    @property
    def required_variables(self) -> list[str]:
        """The pairwise judge's required variables."""
        return list(self.judge.required_variables)

    @property
    def optional_variables(self) -> list[str]:
        """The pairwise judge's optional variables."""
        return list(self.judge.optional_variables)

    @property
    def output_formats(self) -> list[OutputFormat]:
        """The pairwise judge's format (one call per order)."""
        return self.judge.output_formats

    def render(self, **variables: Any) -> list[Message]:
        """The forward-order prompt (the swapped one differs only in the two answers)."""
        return self.judge.render(**variables)

    def fingerprint(self, **variables: Any) -> str:
        """The hash of the forward-order prompt (the swapped prompt follows from it)."""
        return self.prepare(variables).fingerprint

    def prepare(self, variables: Mapping[str, Any]) -> Prepared:
        """The forward order prepared by the pairwise judge (its work reused for that order's calls), under the hash
        of the forward-order prompt."""
        forward = self.judge.prepare(variables)
        fingerprint = canonical_hash([m.model_dump() for m in forward.requests[0]])
        return Prepared(variables, fingerprint, forward.requests, owner=forward.owner, state=forward.state)

    def evaluate(self, engine: Engine, options: DecodeOptions | None = None, **variables: Any) -> JudgeResult:
        """Judge the pair in both orders and combine the two verdicts."""
        forward = self.judge.evaluate(engine, options=options, **variables)
        swapped = self.judge.evaluate(engine, options=options, **swap_inputs(variables, self.pair))
        result = combine_orders(forward, swapped)
        return result.model_copy(update={"judge_version": self.version})

    def submit_many(
        self,
        engine: Engine,
        rows: Sequence[Mapping[str, Any]],
        options: DecodeOptions | None,
        on_result: OnResult,
        model_id: str = "",
    ) -> None:
        """Both orders of every row on `engine` (side by side with an engine that batches)."""
        halves: dict[int, list[Any]] = {}

        def got(k: int, r: JudgeResult | Exception) -> None:
            i, order = divmod(k, 2)
            h = halves.setdefault(i, [None, None])
            h[order] = r
            if h[0] is not None and h[1] is not None:
                del halves[i]
                err = next((x for x in h if isinstance(x, Exception)), None)
                on_result(
                    i, err if err is not None else combine_orders(h[0], h[1]).model_copy(update={"judge_version": self.version})
                )

        pairs = [v for row in rows for v in (row, swap_inputs(row, self.pair))]
        self.judge.submit_many(engine, pairs, options, got, model_id)

    def __repr__(self) -> str:
        return f"BothOrders({self.judge!r})"


class PairwiseStats(BaseModel):
    """Outcome counts of one pairwise judge, and position-bias figures when run in both orders."""

    judge: str
    n: int
    n_scored: int
    n_unscored: int
    wins_1: int  # answer 1 better
    ties: int
    wins_2: int  # answer 2 better
    both_orders: bool
    n_pairs_both: int = 0  # pairs with both orders scored
    n_consistent: int = 0
    consistency_rate: float | None = None
    consistency_ci: tuple[float, float] | None = None
    n_single: int = 0  # single-order judgements counted for the position preference
    n_first: int = 0
    first_position_rate: float | None = None  # share of single-order verdicts that picked position 1
    first_position_ci: tuple[float, float] | None = None
    inconsistent_first: int = 0  # disagreeing pairs where both orders picked position 1
    inconsistent_second: int = 0  # ... where both picked position 2


def pairwise_stats(judge: str, results: Iterable[JudgeResult]) -> PairwiseStats:
    """Win/tie/loss counts; for both-order results also position consistency and first-position preference."""
    rs = list(results)
    winners = [winner_of(r) for r in rs]
    both = [r for r in rs if is_both_orders(r)]
    st = PairwiseStats(
        judge=judge,
        n=len(rs),
        n_scored=sum(w is not None for w in winners),
        n_unscored=sum(w is None for w in winners),
        wins_1=winners.count(1),
        ties=winners.count("tie"),
        wins_2=winners.count(2),
        both_orders=bool(rs) and len(both) == len(rs),
    )
    if not both:
        return st
    for r in both:
        orders = r.details.get("orders") or []
        picks = [o.get("picked_position") for o in orders if o.get("picked_position") in (1, 2)]
        st.n_single += len(picks)
        st.n_first += picks.count(1)
        if len(orders) == 2 and len(picks) == 2:
            st.n_pairs_both += 1
            if picks[0] != picks[1]:
                st.n_consistent += 1  # different positions = the same answer both times
            elif picks[0] == 1:
                st.inconsistent_first += 1
            else:
                st.inconsistent_second += 1
    if st.n_pairs_both:
        st.consistency_rate = st.n_consistent / st.n_pairs_both
        st.consistency_ci = wilson_interval(st.n_consistent, st.n_pairs_both)
    if st.n_single:
        st.first_position_rate = st.n_first / st.n_single
        st.first_position_ci = wilson_interval(st.n_first, st.n_single)
    return st


def is_pairwise_format(fmt: Any) -> bool:
    """True for a pairwise format (`pairwise_json`, or a dedicated judge format in relative mode), given a format,
    its typed spec (a result's `format_spec`), a record's flat spec dict, or a result's `format` string (read by
    the store's legacy reader); the format says (`OutputFormat.is_pairwise`)."""
    from ..formats.facts import is_pairwise
    from ..store.format_spec import legacy_format_spec

    return is_pairwise(legacy_format_spec(fmt) if isinstance(fmt, str) else fmt)
