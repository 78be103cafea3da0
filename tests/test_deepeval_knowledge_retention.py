"""`deepeval_knowledge_retention` (kind deepeval_conversation) sends, call for call, the prompts the installed
deepeval package's own KnowledgeRetentionMetric sends (the real metric run with a recording model answering canned
JSON), and gives DeepEval's score on the same answers: strict mode off and on, no knowledge at all, a forgetful
assistant. Its judge file is what the script writes from the installed package."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM, judge_turns  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
make = importlib.import_module("scripts.catalog.make_deepeval_conversation_judges")

TRIP = [
    ("user", "Hi, I'm Léa and I'm allergic to \"peanuts\" — {really}."),
    ("assistant", "Nice to meet you, Léa! Where do you live?"),
    ("user", "I live in Lyon."),
    ("assistant", "Would you like a peanut curry recipe?"),
    ("user", "No thanks."),
    ("assistant", "Where do you live again?"),
]
SMALL_TALK = [("user", "hello"), ("assistant", "Hi! How can I help?"), ("user", "just saying hi"), ("assistant", "Hi!")]


def answer(prompt: str) -> dict:
    """Canned answers, the same for DeepEval and for us: facts from a user message that names one, "yes" (forgot)
    for an assistant message that asks where the user lives or offers peanuts."""
    if "Latest User Message:" in prompt:
        msg = prompt.rsplit("Latest User Message:\n", 1)[1]
        if "Léa" in msg:
            return {"data": {"Name": "Léa", "Allergies": ["peanuts"]}}
        if "Lyon" in msg:
            return {"data": {"City": "Lyon"}}
        return {"data": None}
    if "Previous Knowledge:" in prompt:
        llm = prompt.rsplit("LLM message:\n", 1)[1]
        forgot = "live" in llm.split("Previous Knowledge")[0] and "City" in prompt.rsplit("Previous Knowledge:", 1)[1]
        forgot = forgot or "peanut curry" in llm
        return {"verdict": "yes", "reason": "forgot"} if forgot else {"verdict": "no", "reason": None}
    return {"reason": "because"}


def _theirs(turns, strict_mode=False):
    from deepeval.metrics import KnowledgeRetentionMetric
    from deepeval.test_case import ConversationalTestCase, Turn

    prompts: list[str] = []
    metric = KnowledgeRetentionMetric(model=RecordingLLM.by_schema(answer, prompts), async_mode=False, strict_mode=strict_mode)
    metric.measure(ConversationalTestCase(turns=[Turn(role=r, content=c) for r, c in turns]), _show_indicator=False)
    return metric, prompts


def _ours(turns, strict_mode=False):
    return judge_turns("deepeval_knowledge_retention", turns, answer, strict_mode)


@pytest.mark.parametrize("turns", [TRIP, SMALL_TALK], ids=["forgetful", "no_knowledge"])
@pytest.mark.parametrize("strict_mode", [False, True])
def test_prompts_and_score_are_deepevals_own(turns, strict_mode):
    metric, theirs = _theirs(turns, strict_mode)
    result, ours = _ours(turns, strict_mode)
    assert ours == theirs
    assert result.score == pytest.approx(metric.score)
    assert result.rationale == metric.reason == "because"


def test_a_forgetful_assistant_scores_the_fraction_of_turns_that_keep_the_facts():
    metric, prompts = _theirs(TRIP)
    assert len(prompts) == 3 + 3 + 1  # three user turns, three assistant turns after knowledge, the reason
    assert metric.score == pytest.approx(1 / 3)
    result, _ = _ours(TRIP[:4] + [("user", "ok"), ("assistant", "Enjoy Lyon!")])
    theirs, _ = _theirs(TRIP[:4] + [("user", "ok"), ("assistant", "Enjoy Lyon!")])
    assert result.score == pytest.approx(theirs.score) == pytest.approx(2 / 3)


def test_no_knowledge_scores_one_as_deepeval_does():
    result, prompts = _ours(SMALL_TALK)
    assert result.score == 1
    assert len(prompts) == 2 + 1  # two extractions, no verdict, the reason


def test_the_judge_file_is_what_the_script_writes_from_the_installed_package():
    for name in make.STAGED:
        path = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        assert path.read_text(encoding="utf-8") == make.staged_judge_file(name)


def test_turns_that_are_not_deepevals_turns_are_a_one_line_error():
    from localjudge.errors import InputError
    from localjudge.judges import get_judge

    with pytest.raises(InputError, match="deepeval_turns"):
        get_judge("deepeval_knowledge_retention").render(deepeval_turns="not turns")


def test_a_session_run_judges_each_conversation_with_the_three_ported_metrics(tmp_path):
    """A run over a messages column (session granularity, the default) gives each conversation DeepEval's score from
    the same canned answers, and role adherence reads `chatbot_role` from the row."""
    import localjudge
    from localjudge.engine.base import ScriptedEngine

    def reply(msgs, fmt):
        text = msgs[-1].content
        if "Chatbot Role:" in text and "Messages:" in text:
            return json.dumps({"verdicts": []})
        if "User Intention:" in text:
            return json.dumps({"verdict": "yes", "reason": None})
        if "Turns:" in text and "intentions" in text and "Incompletenesses" not in text:
            return json.dumps({"intentions": ["plan a trip"]})
        if "Latest User Message:" in text or "Previous Knowledge:" in text:
            return json.dumps(answer(text), ensure_ascii=False)
        return json.dumps({"reason": "because"})

    rows = [
        {"id": "trip", "messages": [{"role": r, "content": c} for r, c in TRIP], "chatbot_role": "a travel agent"},
        {"id": "hi", "messages": [{"role": r, "content": c} for r, c in SMALL_TALK], "chatbot_role": "a travel agent"},
    ]
    judges = ["deepeval_knowledge_retention", "deepeval_conversation_completeness", "deepeval_role_adherence"]
    run = localjudge.evaluate(rows, judges, engine=ScriptedEngine(reply), out=tmp_path / "r")
    got = {(r.conversation_id, r.judge): r.result.score for r in run.results}
    assert got == {
        ("trip", "deepeval_knowledge_retention"): pytest.approx(_theirs(TRIP)[0].score),
        ("hi", "deepeval_knowledge_retention"): 1.0,
        ("trip", "deepeval_conversation_completeness"): 1.0,
        ("hi", "deepeval_conversation_completeness"): 1.0,
        ("trip", "deepeval_role_adherence"): 1.0,
        ("hi", "deepeval_role_adherence"): 1.0,
    }
