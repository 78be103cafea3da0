"""DeepEval's LLM-judged conversational metric prompts, ported as judge files (scripts/catalog/make_deepeval_conversation_judges.py),
render byte for byte the prompts the installed deepeval package's own metrics send: the real metric is run with a
recording model on a conversation with tool calls, and each of its prompts is compared with ours for the same window;
the adapter with the ported judge gives DeepEval's own score for the same verdicts."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from integrations_support import prompt_text, scripted, yes_no

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
make = importlib.import_module("scripts.catalog.make_deepeval_conversation_judges")


def _case():
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

    return ConversationalTestCase(
        name="trip",
        turns=[
            Turn(role="user", content="Hi! I'm planning a trip to Lyon — it's {my} \"first\" time."),
            Turn(role="assistant", content="Lovely! When are you going?"),
            Turn(role="user", content="Next week. What's the weather?"),
            Turn(
                role="assistant",
                content="Sunny, 24 °C.",
                tools_called=[ToolCall(name="weather", input_parameters={"city": "Lyon"}, output="24C sunny")],
            ),
            Turn(role="user", content="And a good restaurant?"),
            Turn(role="assistant", content="Isn't blue a nice colour?"),
        ],
    )


def _recording_llm(prompts, verdict_of):
    """DeepEval's own schema answered: a verdict by `verdict_of(prompt)`, or a summary reason."""

    def answer(prompt, schema):
        if "verdict" in schema.model_fields:
            return schema(verdict=verdict_of(prompt), reason="r")
        return schema(reason="summary")

    return RecordingLLM(answer, prompts)


def _no_on_blue(prompt: str) -> str:
    return "no" if "blue" in prompt.rsplit("Messages:", 1)[-1] else "yes"


@pytest.mark.parametrize("window", [1, 2, 10])
def test_turn_relevancy_prompts_match_deepevals_own_for_every_window(window):
    from deepeval.metrics import TurnRelevancyMetric

    from localjudge.conversations import from_deepeval, turn_windows
    from localjudge.conversations.render import deepeval_turns_text
    from localjudge.judges import get_judge

    theirs: list[str] = []
    TurnRelevancyMetric(model=_recording_llm(theirs, _no_on_blue), async_mode=False, window_size=window).measure(
        _case(), _show_indicator=False
    )
    verdict_prompts = [p for p in theirs if "generate a JSON object to indicate whether the LAST" in p]
    conv = from_deepeval(_case())
    judge = get_judge("deepeval_turn_relevancy")
    ours = []
    for w in turn_windows(conv, window):
        (msg,) = judge.render(deepeval_turns=deepeval_turns_text(conv.model_copy(update={"turns": conv.turns[w.start : w.end]})))
        ours.append(msg.content)
    assert len(ours) == len(verdict_prompts) == 3
    assert ours == verdict_prompts


def test_the_judge_files_and_golden_prompts_are_what_the_script_writes_from_the_installed_package():
    from localjudge.conversations import from_messages
    from localjudge.conversations.render import deepeval_turns_text
    from localjudge.judges import get_judge

    for name in make.PORTS:
        assert (ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml").read_text(encoding="utf-8") == make.judge_file(name)
        expected = (ROOT / "tests" / "golden" / f"{name}.txt").read_text(encoding="utf-8")
        assert expected == make.golden(name)
        (msg,) = get_judge(name).render(deepeval_turns=deepeval_turns_text(from_messages(make.GOLDEN_TURNS)))
        assert f"===== {msg.role} =====\n{msg.content}\n" == expected


def test_the_adapter_with_the_ported_judge_gives_deepevals_turn_relevancy_score():
    from deepeval.metrics import TurnRelevancyMetric

    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric

    theirs = TurnRelevancyMetric(model=_recording_llm([], _no_on_blue), async_mode=False)
    theirs.measure(_case(), _show_indicator=False)

    def answer(msgs, fmt):
        return yes_no(_no_on_blue(prompt_text(msgs)), "r")

    ours = LocalJudgeConversationalMetric(
        "deepeval_turn_relevancy", engine=scripted(answer), window_size=10, aggregate="pass_fraction"
    )
    assert ours.measure(_case()) == pytest.approx(theirs.score) == pytest.approx(2 / 3)
    assert ours.success == theirs.success is True
