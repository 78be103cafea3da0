"""Each judge kind's keys are a typed section (judges/sections.py): checked once at load, handed to its program and
its prompt builder typed; the judge file format and every built-in judge's version stay as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localjudge.engine import ScriptedEngine
from localjudge.errors import InputError, JudgeSpecError
from localjudge.judges import get_judge, list_judges
from localjudge.judges import programs as programs_module
from localjudge.judges.kinds import KINDS
from localjudge.judges.programs import PROGRAMS, Program, register_program
from localjudge.judges.registry import judge_from_dict
from localjudge.judges.sections import RagasAgentSection, needs, section_types
from localjudge.judges.spec import spec_from_dict

VERSIONS = Path(__file__).parent / "data" / "builtin_judge_versions.json"
MESSAGES = [{"role": "user", "template": "{{output}}"}]


def test_every_built_in_judge_keeps_its_version():
    # every built-in's version as it was before the kinds' keys became sections (the sections change no hash)
    before = json.loads(VERSIONS.read_text("utf-8"))
    assert {j.name: j.version for j in list_judges(plugins=False)} == before


def test_every_kind_has_one_section_whose_required_keys_are_what_the_kind_needs():
    assert set(section_types()) == set(KINDS)
    assert needs(section_types()["per_item"]) == ("messages", "output", "item_variable")
    assert needs(section_types()["ragas_agent"]) == ("stages", "ragas_agent")
    assert needs(section_types()["two_stage"]) == ("stages",)


def test_every_built_in_judge_holds_its_kinds_section():
    for j in list_judges(plugins=False):
        assert isinstance(j.section, section_types()[j.kind]), j.name


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"kind": "per_item", "messages": MESSAGES, "output": {"kind": "yes_no_json"}},
            "kind 'per_item' needs key 'item_variable'",
        ),
        ({"kind": "ragas_agent"}, "kind 'ragas_agent' needs key 'stages'"),
        ({"kind": "deepeval_geval"}, "kind 'deepeval_geval' needs key 'deepeval_geval'"),
        (
            {"kind": "two_stage", "stages": [{"name": "s", "messages": MESSAGES}]},
            "kind 'two_stage' needs exactly 2 stages",
        ),
    ],
)
def test_a_kind_without_its_keys_is_refused_at_load_naming_the_key_not_the_sections_tag(data, message):
    with pytest.raises(JudgeSpecError) as e:
        spec_from_dict({"name": "x", "variables": [{"name": "output"}], **data}, "my.toml")
    assert str(e.value) == f"judge file my.toml: key '(top level)': {message}; fix the file and retry"


def test_another_kinds_keys_left_at_their_defaults_still_load():
    # the file format did not narrow: a single judge may carry two_stage's unsure_value, as before
    data = {"name": "x", "variables": [{"name": "output"}], "messages": MESSAGES, "output": {"kind": "yes_no_json"}}
    judge = judge_from_dict({**data, "unsure_value": 0.3, "stages": [], "match_ordered": True})
    assert judge.section.kind == "single" and judge.version != judge_from_dict(data).version


def test_a_several_call_program_receives_its_kinds_section_typed():
    judge = get_judge("agent_goal_accuracy")
    before = PROGRAMS["ragas_agent"]
    seen: list[object] = []

    def calls(ctx):
        seen.append(ctx.section)
        return ctx.judge._unscored(ctx.gens, ctx.model_id, "parse_error", "scripted")
        yield

    register_program("ragas_agent", Program(programs_module._stages(RagasAgentSection, calls), before.first))
    try:
        judge.evaluate(ScriptedEngine([]), ragas_conversation="human: hi", reference="a greeting")
    finally:
        register_program("ragas_agent", before)
    assert len(seen) == 1 and isinstance(seen[0], RagasAgentSection)
    assert seen[0].ragas_agent.metric == "goal_accuracy_with_reference" and len(seen[0].stages) == 2


def test_a_program_given_another_kinds_judge_names_both_sections():
    with pytest.raises(TypeError, match="kind 'single' has a SingleSection; its program reads a RagasAgentSection"):
        programs_module._typed(get_judge("correctness"), RagasAgentSection)


def test_judging_a_model_judge_without_a_model_is_refused_naming_it():
    with pytest.raises(InputError, match="judge 'correctness' calls the model"):
        get_judge("correctness").judge_without_model(input="q", output="a", ground_truth="a")
