"""`deepeval_goal_accuracy` (kind deepeval_conversation) sends, call for call, the prompts the installed deepeval
package's own GoalAccuracyMetric sends (the real metric, async_mode=False, run with a recording model answering
canned JSON and a canned reason), and gives DeepEval's score and reason on the same answers: strict mode off and on,
several goals, tool calls printed as DeepEval prints them, no complete exchange at all, both sides of the PASS/FAIL
branch of its reason template."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("deepeval")

from deepeval_support import RecordingLLM, conversation_judge  # noqa: E402

CALL = {"name": "get_weather", "input_parameters": {"city": "Lyon", "days": [1, 2]}, "output": '24 °C, "sunny"'}
BOOK = {"name": "book_table", "input_parameters": {"place": "Chez {Léa}"}, "output": "ok"}
TRIP = [
    ("user", "Hi, I'm Léa — what's the {weather} in Lyon?", []),
    ("assistant", "Let me check.", []),
    ("assistant", "It is 24 °C & sunny.", [CALL]),
    ("user", "And who won the match?", []),
    ("assistant", "Team A won 2-1.", []),
]
PLAN = [
    ("user", "Book me a table in Lyon.", []),
    ("user", "For two, tonight.", []),
    ("assistant", "Booked at Chez Léa.", [BOOK, CALL]),
]
MATCH = [("user", "Who won the match?", []), ("assistant", "No idea.", [])]
OPEN = [("user", "hello", []), ("user", "anyone?", [])]
CASES = {"two_goals_with_tools": TRIP, "two_user_messages_two_calls": PLAN, "failed_goal": MATCH, "no_goal": OPEN}


def answer(prompt: str) -> str:
    """The same canned answers for DeepEval and for us: goals about Lyon are achieved and planned, others not; the
    reason repeats the template's PASS/FAIL word."""
    task = prompt.rsplit("USER TASK:\n", 1)[-1]
    if "**goal accuracy**" in prompt:
        return json.dumps({"score": 1 if "Lyon" in task else 0.25, "reason": 'goal "met" & more'})
    if "**planning quality**" in prompt:
        return json.dumps({"score": 1.0 if "Lyon" in task else 0, "reason": "plan"})
    return f'Because & "so": {"PASS" if "Result: PASS" in prompt else "FAIL"}'


def _case(turns):
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

    return ConversationalTestCase(
        turns=[Turn(role=r, content=c, tools_called=[ToolCall(**t) for t in calls] or None) for r, c, calls in turns]
    )


def _theirs(turns, strict_mode=False):
    from deepeval.metrics import GoalAccuracyMetric

    prompts: list[str] = []
    model = RecordingLLM(lambda prompt, schema: answer(prompt), prompts)
    metric = GoalAccuracyMetric(model=model, async_mode=False, strict_mode=strict_mode)
    metric.measure(_case(turns), _show_indicator=False)
    return metric, prompts


def _ours(turns, strict_mode=False):
    """The ported judge on the conversation `readers.from_deepeval` reads from the same test case."""
    from integrations_support import scripted

    from localjudge.conversations.deepeval_tool_turns import deepeval_tool_turns_text
    from localjudge.conversations.readers import from_deepeval

    judge = conversation_judge("deepeval_goal_accuracy", strict_mode)
    prompts: list[str] = []

    def reply(msgs, fmt):
        (m,) = msgs
        prompts.append(m.content)
        return answer(m.content)

    turns_text = deepeval_tool_turns_text(from_deepeval(_case(turns)))
    return judge.evaluate(scripted(reply), deepeval_tool_turns=turns_text), prompts


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("strict_mode", [False, True])
def test_prompts_score_and_reason_are_deepevals_own(name, strict_mode):
    metric, theirs = _theirs(CASES[name], strict_mode)
    result, ours = _ours(CASES[name], strict_mode)
    assert ours == theirs
    assert result.score == pytest.approx(metric.score)
    assert result.rationale == metric.reason


def test_the_reason_prompt_says_pass_or_fail_as_deepevals_jinja_branch_does():
    results = {}
    for name, strict in (("two_goals_with_tools", False), ("two_goals_with_tools", True), ("failed_goal", False)):
        result, prompts = _ours(CASES[name], strict)
        results[(name, strict)] = (result.score, prompts[-1].split("Result: ")[1].split("\n")[0], result.rationale)
    assert results[("two_goals_with_tools", False)] == (pytest.approx(0.5625), "PASS", 'Because & "so": PASS')
    assert results[("two_goals_with_tools", True)] == (0.0, "FAIL", 'Because & "so": FAIL')
    assert results[("failed_goal", False)][:2] == (pytest.approx(0.125), "FAIL")


def test_each_exchange_is_a_goal_scored_then_planned_and_its_tool_calls_are_printed():
    result, prompts = _ours(TRIP)
    assert len(prompts) == 2 + 2 + 1  # a goal score per exchange, then a plan score per exchange, the reason
    assert '"name": "get_weather"' in prompts[0] and "Tools called: \n[\n  {" in prompts[0]
    assert "Who won" not in prompts[0] and "who won the match" in prompts[1]
    assert result.details["goal_scores"][0] == {"score": 1.0, "reason": 'goal "met" & more'}


def test_a_conversation_with_no_exchange_is_only_the_reason_call_and_scores_zero():
    result, prompts = _ours(OPEN)
    assert len(prompts) == 1 and "Final Score: 0.0\n" in prompts[0]
    assert result.score == 0.0


def test_turns_that_are_not_deepeval_turns_are_a_one_line_error_naming_the_variable():
    from integrations_support import scripted

    from localjudge.errors import InputError
    from localjudge.judges import get_judge

    with pytest.raises(InputError, match="variable 'deepeval_tool_turns' must be"):
        get_judge("deepeval_goal_accuracy").evaluate(scripted("{}"), deepeval_tool_turns="not turns")
