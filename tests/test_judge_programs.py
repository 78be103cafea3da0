"""Judge kinds run as programs looked up by call shape (judges/programs.py): judge.py never compares a kind."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import localjudge.judges.judge as judge_module
from localjudge.engine import ScriptedEngine
from localjudge.judges import get_judge
from localjudge.judges.kinds import KINDS, CallShape
from localjudge.judges.programs import PROGRAMS, Program, program_of, register_program

YES = '{"rationale": "It says 4.", "result": "yes"}'


def test_every_call_shape_and_every_kind_has_a_program():
    assert set(get_args(CallShape)) == set(PROGRAMS)
    assert all(isinstance(program_of(t.calls), Program) for t in KINDS.values())


def _comparisons(module, attrs: tuple[str, ...]) -> list[str]:
    """Every comparison in `module`'s source with an attribute named in `attrs` on either side."""
    tree = ast.parse(Path(module.__file__).read_text("utf-8"))
    return [
        ast.unparse(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Compare) and any(isinstance(x, ast.Attribute) and x.attr in attrs for x in [n.left, *n.comparators])
    ]


def test_judge_py_compares_no_kind_or_call_shape():
    assert _comparisons(judge_module, ("calls", "kind")) == []


def test_a_registered_program_is_what_a_judge_of_its_shape_runs():
    shape = get_judge("correctness").traits.calls
    before = PROGRAMS[shape]
    seen: list[str] = []

    def counting_calls(ctx):
        seen.append(ctx.judge.name)
        return (yield from before.calls(ctx))

    register_program(shape, Program(counting_calls, before.first, before.one_format))
    try:
        r = get_judge("correctness").evaluate(ScriptedEngine([YES]), input="What is 2+2?", output="4", ground_truth="4")
    finally:
        register_program(shape, before)
    assert seen == ["correctness"] and r.scored


def test_an_unknown_call_shape_is_named_with_the_known_ones():
    try:
        program_of("no_such_shape")
    except KeyError as e:
        assert "no_such_shape" in str(e) and "per_item" in str(e)
    else:
        raise AssertionError("program_of accepted an unknown shape")


def test_every_deepeval_metric_a_judge_file_may_name_has_its_calls_in_a_table():
    from localjudge.judges import deepeval_agentic, deepeval_conversation
    from localjudge.judges.spec import DeepEvalConversation, JudgeSpec

    assert set(get_args(DeepEvalConversation.model_fields["metric"].annotation)) == set(deepeval_conversation.METRICS)
    agentic = {a for a in get_args(JudgeSpec.model_fields["deepeval_agentic"].annotation) for a in get_args(a) or [a]}
    assert agentic - {type(None)} == set(deepeval_agentic.METRICS)


def test_the_deepeval_modules_choose_a_metric_by_table_not_by_comparison():
    from localjudge.judges import deepeval_agentic, deepeval_conversation

    for module in (deepeval_agentic, deepeval_conversation):
        assert _comparisons(module, ("metric", "deepeval_agentic")) == [], module.__name__


def test_a_judge_version_hashes_the_fields_added_since_the_first_format_only_when_set():
    from localjudge.judges.spec import FIRST_SPEC_FIELDS, FIRST_VARIABLE_FIELDS, JudgeSpec, Variable, version_dump

    assert FIRST_SPEC_FIELDS < set(JudgeSpec.model_fields) and FIRST_VARIABLE_FIELDS < set(Variable.model_fields)
    judge = get_judge("correctness")
    dump = version_dump(judge.spec)
    assert set(dump) == FIRST_SPEC_FIELDS  # correctness sets none of the later fields
    assert all(set(v) == FIRST_VARIABLE_FIELDS for v in dump["variables"])
    thinking = judge.configure(think_tokens=64)
    assert version_dump(thinking.spec)["think_tokens"] == 64 and thinking.version != judge.version
    # the hash of a dump with a later field present but empty is not the version: it is left out
    from localjudge.engine.base import canonical_hash

    def version_of(d: dict) -> str:  # as Judge computes it (a version kept across attribution edits: _versions.toml)
        return judge_module._kept_versions().get(canonical_hash(d)) or canonical_hash(d)

    assert version_of(dump) == judge.version and version_of({**dump, "think_tokens": 0}) != judge.version
