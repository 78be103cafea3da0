"""`UnscoredReason` is the one vocabulary of why a judgement has no score (issue 44): its values are what stores,
exports and summaries already hold (they never change), a result keeps them as plain strings, and no module spells a
reason in place."""

from __future__ import annotations

import ast
from pathlib import Path

from localjudge.errors import UnscoredReason
from localjudge.store.results import JudgeResult

PACKAGE = Path(__file__).resolve().parent.parent / "localjudge"

# the values stored by every release so far: renaming one would orphan old stores' rows
STORED = {
    "parse_error", "prompt_too_long", "input_error", "missing_value", "empty_value", "error", "foreign_row",
    "panel_tie", "panel_unscored", "not_pairwise", "max_iterations", "tool_time_limit", "invalid_trace",
    "no_probabilities",
}  # fmt: skip


def test_the_reasons_are_the_stored_strings_and_a_result_keeps_them_as_plain_strings():
    assert {r.value for r in UnscoredReason} == STORED
    r = JudgeResult(judge="j", judge_version="1", format="f", unscored_reason=UnscoredReason.PANEL_TIE)
    assert type(r.unscored_reason) is str and r.unscored_reason == "panel_tie"
    assert r.model_dump_json().count('"unscored_reason":"panel_tie"') == 1
    old = JudgeResult.model_validate_json('{"judge": "j", "judge_version": "1", "format": "f", "unscored_reason": "x"}')
    assert old.unscored_reason == "x"  # a plugin's own reason, or one from an older store, reads back as it was


def _reason_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants that are a stored reason where a reason goes: the keyword `unscored_reason=`, the value of a
    dict's `"unscored_reason"` key (a `model_copy` update), an argument of `_unscored(...)` / `_failed(...)`, a
    comparison with something named `...reason`, a tuple element (a row problem is `(reason, message)`) or an `or`
    default."""

    def named_reason(e: ast.expr) -> bool:
        return "reason" in ast.unparse(e)

    found = []
    for node in ast.walk(tree):
        candidates: list[ast.expr] = []
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func).rpartition(".")[2]
            candidates += [k.value for k in node.keywords if k.arg == "unscored_reason"]
            if name in {"_unscored", "_failed"}:
                candidates += node.args
        elif isinstance(node, ast.Dict):
            candidates += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "unscored_reason"
            ]
        elif isinstance(node, ast.Compare) and any(named_reason(e) for e in [node.left, *node.comparators]):
            candidates += [node.left, *node.comparators]
        elif isinstance(node, ast.Tuple | ast.BoolOp):  # here "error" is too common a word to tell
            loose = node.elts if isinstance(node, ast.Tuple) else node.values
            found += [(c.lineno, c.value) for c in loose if isinstance(c, ast.Constant) and c.value in STORED - {"error"}]
        for c in candidates:
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in STORED:
                found.append((c.lineno, c.value))
    return found


def test_no_module_spells_a_reason_in_place():
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for line, value in _reason_literals(ast.parse(path.read_text(encoding="utf-8"))):
            spelled.append(f"{path.relative_to(PACKAGE)}:{line}: {value!r}")
    assert spelled == [], "use UnscoredReason:\n" + "\n".join(spelled)
