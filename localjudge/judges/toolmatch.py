"""Model-free judges of one tool call (kind `tool_call_match`): the call an assistant made, compared with the
row's expected calls, scored as RAGAS 0.4.3 `ToolCallAccuracy` and DeepEval 4.3 `ToolCorrectness` score a call
(localjudge/conversations/toolcalls.py computes their whole-list scores; tests/test_tool_call_granularity.py
checks that each rule below is that code on a one-call list). The rules, by the judge file's `match`:

* `exact` – DeepEval `should_exact_match` with input parameters: 1 when the expected call at the same index has
  the same name and equal arguments, else 0 (an extra call, past the expected ones, is 0);
* `ordered` – RAGAS `ToolCallAccuracy` (strict order) of this call against the expected call at the same index:
  0 on another name, else the share of the expected arguments whose `str()` equals the called one;
* `subset` – DeepEval's default best match with input parameters, order ignored: the best key-by-key argument
  share of this call against any expected call of the same name (0 when no expected call has its name).

Values: `tool_call` (`{"name", "arguments"}`, a dict or its JSON text), `tool_call_index` (0-based, in the
conversation's order), `expected_tool_calls` (a list of such calls, or its JSON text). No model is loaded.

`match = 'mlflow_exact'` judges a session row's whole call list instead (`tool_calls`, `expected_tool_calls`):
MLflow's exact-mode verdict, `mlflow_exact_match` below, ordered when the file says `match_ordered = true`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from .. import jsonio
from ..errors import InputError

Match = Literal["exact", "ordered", "subset"]


def _call(value: Any, where: str) -> tuple[str, dict[str, Any]]:
    if isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except ValueError:
            raise InputError(f"{where}: not JSON; give {{'name': ..., 'arguments': {{...}}}}") from None
    if isinstance(value, dict) and isinstance(value.get("function"), dict):  # an OpenAI tool_calls item
        value = value["function"]
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        raise InputError(f"{where}: a call needs a 'name'; give {{'name': ..., 'arguments': {{...}}}}")
    args = value.get("arguments") or {}
    if isinstance(args, str):
        try:
            args = jsonio.loads(args)
        except ValueError:
            raise InputError(f"{where}: arguments are not a JSON object") from None
    if not isinstance(args, dict):
        raise InputError(f"{where}: arguments must be an object, not {type(args).__name__}")
    return value["name"], args


def expected_calls(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """The row's expected calls, each `(name, arguments)`; bad input is one InputError naming the field."""
    if isinstance(value, str):
        try:
            value = jsonio.loads(value)
        except ValueError:
            raise InputError("expected_tool_calls: not JSON; give a list of {'name': ..., 'arguments': {...}}") from None
    if not isinstance(value, list):
        raise InputError("expected_tool_calls: give a list of {'name': ..., 'arguments': {...}}")
    return [_call(v, f"expected_tool_calls[{i}]") for i, v in enumerate(value)]


def match_score(match: Match, tool_call: Any, index: int, expected: Any) -> float:
    """The score of one call under `match` (see the module docstring)."""
    name, args = _call(tool_call, "tool_call")
    exp = expected_calls(expected)
    if match == "subset":
        return max((deepeval_arg_score(e_args, args) for e_name, e_args in exp if e_name == name), default=0.0)
    if index >= len(exp):
        return 0.0
    e_name, e_args = exp[index]
    if e_name != name:
        return 0.0
    if match == "exact":
        return float(args == e_args)
    return ragas_arg_score(args, e_args)


def ragas_arg_score(preds: dict[str, Any], refs: dict[str, Any]) -> float:
    """RAGAS ToolCallAccuracy._get_arg_score: the share of the reference arguments the call gives equal (as text);
    conversations/toolcalls.py scores whole call lists with it."""
    if not refs and not preds:
        return 1.0
    if not refs:
        return 0.0
    return sum(float(str(preds[k]) == str(refs[k])) for k in refs if k in preds) / len(refs)


def deepeval_arg_score(d1: dict[str, Any], d2: dict[str, Any]) -> float:
    """DeepEval ToolCorrectnessMetric._compare_dicts (not exact): the share of keys with equal values, nested dicts
    scored alike; 0 is no match, as DeepEval counts it. conversations/toolcalls.py scores whole call lists with it."""
    if d1 == d2:
        return 1.0
    total = set(d1) | set(d2)
    score = 0.0
    for k in set(d1) & set(d2):
        if d1[k] == d2[k]:
            score += 1 / len(total)
        elif isinstance(d1[k], dict) and isinstance(d2[k], dict):
            score += deepeval_arg_score(d1[k], d2[k]) / len(total)
    return score


def mlflow_exact_match(actual: Any, expected: Any, *, ordered: bool) -> bool:
    """MLflow 3.17 `ToolCallCorrectness(should_exact_match=True)`'s verdict on a whole call list (none of the
    per-call rules above gives it: they cannot see a missing call, compare with Python `==` so `1` equals `1.0`
    and `True`, and count duplicates). A call's signature is its name and `json.dumps(arguments, sort_keys=True)`,
    or its name alone when any expected call has no `arguments` (MLflow's partial expectations); a different
    count is "no"; `ordered` (`should_consider_ordering`) compares position by position, else the two SETS of
    signatures (so `[a, a, b]` matches `[a, b, b]`, as in MLflow). Bad input is one InputError naming the field."""
    if isinstance(expected, str):
        try:
            expected = jsonio.loads(expected)
        except ValueError:
            raise InputError("expected_tool_calls: not JSON; give a list of {'name': ..., 'arguments': {...}}") from None
    if not isinstance(expected, list) or not expected:
        raise InputError("expected_tool_calls: give a non-empty list of {'name': ..., 'arguments': {...}}")
    inner = [e["function"] if isinstance(e, dict) and isinstance(e.get("function"), dict) else e for e in expected]
    with_args = not any(isinstance(e, dict) and e.get("arguments") is None for e in inner)
    exp = [_call(e, f"expected_tool_calls[{i}]") for i, e in enumerate(expected)]
    if isinstance(actual, str):
        try:
            actual = jsonio.loads(actual)
        except ValueError:
            raise InputError("tool_calls: not JSON; give a list of {'name': ..., 'arguments': {...}}") from None
    if not isinstance(actual, list):
        raise InputError("tool_calls: give a list of {'name': ..., 'arguments': {...}}")
    act = [_call(a, f"tool_calls[{i}]") for i, a in enumerate(actual)]
    if len(act) != len(exp):
        return False

    def sig(call: tuple[str, dict[str, Any]]) -> str:
        return f"{call[0]}({json.dumps(call[1], sort_keys=True)})" if with_args else call[0]

    if ordered:
        return all(sig(a) == sig(e) for a, e in zip(act, exp, strict=True))
    return {sig(a) for a in act} == {sig(e) for e in exp}
