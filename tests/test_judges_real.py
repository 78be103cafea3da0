"""The real-model judge cases (tests/judges_real_cases.py, run by tests/test_judges_real_{single,agentic,conversation}.py)
cover every built-in judge, each in one group, and the batched runs they are judged in send every judge exactly the
prompts a direct `judge.evaluate(**variables)` sends: checked without weights, on the default model's vocabulary under
random logits (tests/random_logits.py), so a run that merged two judges' columns wrongly fails here, not as a
weaker real-model case."""

from __future__ import annotations

import hashlib

import pytest
from judges_real_cases import EXAMPLES, GROUPS, OPTS, case_ids, judged
from random_logits import RandomLogitsEngine

from localjudge.engine.base import ScriptedEngine
from localjudge.judges import get_judge, list_judges


def test_real_cases_cover_every_builtin_judge_each_in_one_group():
    names = [j.name for j in list_judges(plugins=False)]
    assert sorted(EXAMPLES[0]) == sorted(EXAMPLES[1]) == sorted(names)
    grouped = [n for g in GROUPS for n, i in case_ids(g) if i == 0]
    assert sorted(grouped) == sorted(names)


@pytest.fixture(scope="module")
def rl():
    eng = RandomLogitsEngine()
    yield eng
    eng.close()


def test_each_batched_run_sends_every_judge_the_prompts_a_direct_call_sends(rl, tmp_path):
    def answer(messages, fmt):  # a valid answer under the format, seeded by the prompt: the programs go on as on a model
        seed = int(hashlib.sha256(repr([(m.role, m.content) for m in messages]).encode()).hexdigest()[:8], 16)
        return rl.decode(fmt, seed, OPTS).text

    def prompts(engine):
        return sorted(tuple((m.role, m.content) for m in p) for p in engine.prompts)

    direct = {}
    for name in EXAMPLES[0]:
        engine = ScriptedEngine(answer)
        for ex in EXAMPLES:
            get_judge(name).evaluate(engine, options=OPTS, **ex[name])
        direct[name] = prompts(engine)
    for group in GROUPS:
        cases = case_ids(group)
        names = list(dict.fromkeys(n for n, _ in cases))
        engine = ScriptedEngine(answer)
        got = judged(engine, cases, tmp_path / group)  # the group's cases as its test file judges them
        assert not [c for c, r in got.items() if r.unscored_reason is not None], group
        assert prompts(engine) == sorted(p for n in names for p in direct[n]), group
