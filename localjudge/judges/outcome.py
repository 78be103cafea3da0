"""A judge's outputs → its `JudgeResult`: parse each generation with the format, apply the judge's own rules
(four_line's caps, numeric values, per_item's items, an aligned judge's threshold on the expected score), and
an unscored result with its reason where that fails, never a "no".

`JudgeOutcomes` is a part of `Judge` (judges/judge.py), which compiles the spec into the plan it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine.base import Generation
from ..errors import ParseError, UnscoredReason
from ..formats import FourLine, OutputFormat
from ..store.results import JudgeResult, Timings, Usage
from .builders import Plan
from .kinds import KINDS
from .spec import JudgeSpec
from .values import empty_value


class JudgeOutcomes:
    """Generations → `JudgeResult` for single, per_item and aligned judges (and the pieces two_stage uses)."""

    spec: JudgeSpec
    version: str
    _plan: Plan

    def _aligned(self, res: JudgeResult, fmt: OutputFormat) -> JudgeResult:
        """An aligned judge's result: score = the expected score, passed = score >= pass_threshold (the threshold
        `align` chose), and a yes/no or pairwise value that follows the decision; what the model picked stays in
        `details["aligned"]`. Unscored (`no_probabilities`) when the backend gives no token probabilities."""
        if not res.scored:
            return res
        if res.expected_score is None:
            return res.model_copy(
                update={
                    "value": None,
                    "score": None,
                    "passed": None,
                    "unscored_reason": UnscoredReason.NO_PROBABILITIES.value,  # a plain str, as validation stores it
                    "error": f"judge {self.spec.name!r} is aligned on the expected score, but the model gave no token "
                    "probabilities at the verdict; use a llama.cpp model, or the judge it was aligned from",
                }
            )
        passed = res.expected_score >= self.spec.pass_threshold
        values = fmt.value_scores() or {}
        value = res.value
        if set(values) == {"yes", "no"}:
            value = "yes" if passed else "no"
        elif res.value in (1, 2) and set(values.values()) <= {0.0, 1.0}:  # pairwise: 1 = the first answer
            value = 1 if passed else 2
        details = {
            **res.details,
            "aligned": {"picked": res.value, "picked_score": res.score, "threshold": self.spec.pass_threshold},
        }
        return res.model_copy(update={"value": value, "score": res.expected_score, "passed": passed, "details": details})

    def _base(self, gens: Sequence[Generation], fmt: OutputFormat | None, model_id: str = "") -> dict[str, Any]:
        """What every result of this judge shares: who judged, with which format (its `describe()` and its typed
        spec), on which model, at what cost, and the raw text."""
        usage, timings = Usage.of(gens), Timings.of(gens)
        mid = next((g.model_id for g in gens if g.model_id), model_id)
        return {
            "judge": self.spec.name,
            "judge_version": self.version,
            "format": fmt.describe() if fmt is not None else "",
            "format_spec": fmt.format_spec() if fmt is not None else None,
            "model_id": mid,
            "usage": usage,
            "timings": timings,
            "raw_text": "\n\n".join(g.text for g in gens),
        }

    def _scored(
        self,
        base: dict[str, Any],
        value: Any,
        score: float | None,
        rationale: str | None,
        verdict: dict[str, Any] | None,
        details: dict[str, Any] | None = None,
    ) -> JudgeResult:
        passed = None if score is None else score >= self.spec.pass_threshold
        return JudgeResult(
            **base, value=value, score=score, passed=passed, rationale=rationale, verdict=verdict, details=details or {}
        )

    def _unscored(
        self, gens: Sequence[Generation], model_id: str, reason: str, error: str, details: dict[str, Any] | None = None
    ) -> JudgeResult:
        fmt = self._plan.formats[-1] or self._plan.formats[0]
        base = self._base(gens, fmt, model_id)
        return JudgeResult(**base, unscored_reason=reason, error=error, details=details or {})

    def _single(self, gens: list[Generation], fmt: OutputFormat, raw: dict[str, Any]) -> JudgeResult:
        try:
            verdict = fmt.parse(gens[0].text)
        except ParseError as e:
            return self._unscored(gens, "", UnscoredReason.PARSE_ERROR, str(e))
        details: dict[str, Any] = {}
        if KINDS[self.spec.kind].four_line_rules and isinstance(fmt, FourLine):
            has_context = not empty_value(raw.get(self.spec.context_variable or ""))
            rules = fmt.apply_rules(verdict, has_context=has_context)  # type: ignore[arg-type]
            details = {
                "has_context": has_context,
                "final_reported": rules.final_reported,
                "rules_applied": list(rules.rules_applied),
            }
            verdict = rules
        if self._plan.numeric_values:
            details["numeric_value"] = self._plan.numeric_values[fmt.value(verdict)]
        return self._scored(
            self._base(gens, fmt),
            fmt.value(verdict),
            fmt.normalise(verdict),
            fmt.rationale(verdict),
            verdict.model_dump(),
            details,
        )

    def _per_item(self, gens: list[Generation], fmt: OutputFormat, is_list: bool) -> JudgeResult:
        verdicts = []
        for i, g in enumerate(gens):
            try:
                verdicts.append(fmt.parse(g.text))
            except ParseError as e:
                return self._unscored(gens, "", UnscoredReason.PARSE_ERROR, f"item {i}: {e}")
        if not is_list:
            v = verdicts[0]
            return self._scored(self._base(gens, fmt), fmt.value(v), fmt.normalise(v), fmt.rationale(v), v.model_dump())
        scores = [fmt.normalise(v) or 0.0 for v in verdicts]
        items = [{"index": i, "value": fmt.value(v), "rationale": fmt.rationale(v)} for i, v in enumerate(verdicts)]
        rationale = "\n".join(f"[{i}] {fmt.value(v)}: {fmt.rationale(v)}" for i, v in enumerate(verdicts))
        details = {"items": items, "n_items": len(items), "n_relevant": int(sum(scores))}
        return self._scored(
            self._base(gens, fmt),
            [fmt.value(v) for v in verdicts],
            sum(scores) / len(scores),
            rationale,
            {"items": [v.model_dump() for v in verdicts]},
            details,
        )
