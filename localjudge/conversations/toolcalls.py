"""Tool-call metrics that need no model, computed exactly as the libraries people compare us with compute
them, so the numbers are the same on the same calls.

* `ragas_tool_call_accuracy` – RAGAS 0.4.3 `ToolCallAccuracy` (metrics/_tool_call_accuracy.py): the
  names must align (in order, or as sorted multisets with `strict_order=False`, where both lists are
  sorted by name and `str()` of each argument); each reference call paired by position with a call of
  the same name scores the share of its reference arguments whose `str()` equals the called one; the
  sum is divided by the number of reference calls. Both lists empty: 1; either empty: 0.
* `deepeval_tool_correctness` – DeepEval 4.3 `ToolCorrectnessMetric._calculate_score`, with no
  `available_tools` (so no LLM tool-selection check): exact match of the whole list, order-aware weighted
  LCS, or the default best-match per expected tool; arguments count only with `input_parameters=True`
  (key-by-key share over the union of keys, nested dicts recursively, values compared with `==`).
"""

from __future__ import annotations

from typing import Any

from ..judges.toolmatch import deepeval_arg_score, ragas_arg_score
from .model import ToolCall


def ragas_tool_call_accuracy(called: list[ToolCall], reference: list[ToolCall], *, strict_order: bool = True) -> float:
    """RAGAS `ToolCallAccuracy` of `called` against `reference` (see the module docstring)."""
    if not called and not reference:
        return 1.0
    if not called or not reference:
        return 0.0
    if not strict_order:
        called, reference = sorted(called, key=_ragas_key), sorted(reference, key=_ragas_key)
    pred_names, ref_names = [c.name for c in called], [c.name for c in reference]
    aligned = pred_names == ref_names if strict_order else sorted(pred_names) == sorted(ref_names)
    score = 0.0
    for ref, pred in zip(reference, called, strict=False):
        if ref.name == pred.name:
            score += ragas_arg_score(pred.arguments, ref.arguments)
    score /= len(reference)
    compared = min(len(called), len(reference))
    if compared < len(reference):
        score *= compared / len(reference)
    return score * int(aligned)


def _ragas_key(c: ToolCall) -> tuple[str, ...]:
    key = [c.name]
    for name in sorted(c.arguments):
        key += [name, str(c.arguments[name])]
    return tuple(key)


def deepeval_tool_correctness(
    called: list[ToolCall],
    expected: list[ToolCall],
    *,
    exact_match: bool = False,
    consider_ordering: bool = False,
    input_parameters: bool = False,
) -> float:
    """DeepEval `ToolCorrectnessMetric` score of `called` against `expected` (see the module docstring);
    `exact_match`, `consider_ordering` and `input_parameters` are its `should_exact_match`,
    `should_consider_ordering` and `ToolCallParams.INPUT_PARAMETERS` in `evaluation_params`."""
    if exact_match:
        if len(called) != len(expected):
            return 0.0
        for c, e in zip(called, expected, strict=True):
            if c.name != e.name or input_parameters and c.arguments != e.arguments:
                return 0.0
        return 1.0
    if consider_ordering:
        if not expected:
            return 1.0 if not called else 0.0
        return _weighted_lcs(called, expected, input_parameters, exact_match) / len(expected)
    if not expected:
        return 1.0 if not called else 0.0
    total = 0.0
    matched: list[ToolCall] = []  # DeepEval keeps a set of ToolCall: equal calls count as one
    for e in expected:
        best, best_call = 0.0, None
        for c in called:
            if any(_de_equal(c, m) for m in matched):
                continue
            if e.name == c.name:
                s = _compare_dicts(e.arguments, c.arguments, exact_match) if input_parameters else 1.0
                if s > best:
                    best, best_call = s, c
        if best > 0 and best_call is not None:
            total += best
            matched.append(best_call)
    return total / len(expected)


def _de_equal(a: ToolCall, b: ToolCall) -> bool:
    # deepeval ToolCall.__eq__ compares name, input_parameters and output (outputs are not compared here)
    return a.name == b.name and a.arguments == b.arguments


def _weighted_lcs(called: list[ToolCall], expected: list[ToolCall], input_parameters: bool, exact: bool) -> float:
    m, n = len(expected), len(called)
    dp = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            e, c = expected[i - 1], called[j - 1]
            if e.name != c.name:
                dp[i][j] = max(dp[i - 1][j], dp[i][j - 1])
                continue
            score = _compare_dicts(e.arguments, c.arguments, exact) if input_parameters else 1.0
            dp[i][j] = max(dp[i - 1][j], dp[i][j - 1], dp[i - 1][j - 1] + score if score > 0 else 0)
    i, j, total = m, n, 0.0
    while i > 0 and j > 0:
        if dp[i][j] == dp[i - 1][j]:
            i -= 1
        elif dp[i][j] == dp[i][j - 1]:
            j -= 1
        else:
            total += dp[i][j] - dp[i - 1][j - 1]
            i, j = i - 1, j - 1
    return total


def _compare_dicts(d1: dict[str, Any], d2: dict[str, Any], exact: bool) -> float:
    if exact:
        return float(d1 == d2)
    return deepeval_arg_score(d1, d2)
