"""A localjudge conversation judge as a DeepEval conversational metric (`LocalJudgeConversationalMetric`): the real
DeepEval `ConversationalTestCase`, `deepeval.evaluate` and `assert_test`, a scripted engine pinning what the judge
sees and how its verdict becomes DeepEval's score / reason / success, and the real default model on two
conversations."""

from __future__ import annotations

import json

import pytest
from integrations_support import prompt_text, scripted, yes_no

pytest.importorskip("deepeval")


@pytest.fixture
def deepeval_dir(tmp_path, monkeypatch):
    """DeepEval writes .deepeval/ in the working directory: keep it in a temporary one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEPEVAL_RESULTS_FOLDER", str(tmp_path / "results"))
    return tmp_path


def _booking(name="booking"):
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

    return ConversationalTestCase(
        name=name,
        chatbot_role="a travel agent",
        expected_outcome="a room booked in Paris for Ana",
        turns=[
            Turn(role="user", content="I'm Ana. Book me a room in Paris for two nights."),
            Turn(
                role="assistant",
                content="Booked the Hotel Lutetia for you, Ana.",
                tools_called=[
                    ToolCall(name="search_hotels", input_parameters={"city": "Paris", "nights": 2}, output=["Lutetia", "Ritz"]),
                    ToolCall(name="book", input_parameters={"hotel": "Lutetia"}, output="confirmation 42"),
                ],
            ),
            Turn(role="user", content="What name is the booking under?"),
            Turn(role="assistant", content="It is under the name Ana."),
        ],
    )


def _weather():
    from deepeval.test_case import ConversationalTestCase, Turn

    return ConversationalTestCase(
        name="weather",
        turns=[
            Turn(role="user", content="My favourite colour is green."),
            Turn(role="assistant", content="Noted: green."),
            Turn(role="user", content="What is my favourite colour?"),
            Turn(role="assistant", content="Your favourite colour is blue."),
        ],
    )


def _quiet(**kw):
    from deepeval.evaluate.configs import CacheConfig, DisplayConfig, ErrorConfig

    return dict(
        display_config=DisplayConfig(show_indicator=False, print_results=False),
        cache_config=CacheConfig(write_cache=False, use_cache=False),
        error_config=ErrorConfig(**kw),
    )


def test_converter_keeps_roles_tool_calls_with_arguments_and_tool_results():
    from localjudge.integrations.deepeval_conversation import to_conversation

    conv = to_conversation(_booking())
    assert [t.role for t in conv.turns] == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    call_turn = conv.turns[1]
    assert [(c.name, c.arguments, c.id) for c in call_turn.tool_calls] == [
        ("search_hotels", {"city": "Paris", "nights": 2}, "call_1_0"),
        ("book", {"hotel": "Lutetia"}, "call_1_1"),
    ]
    assert [(t.tool_call_id, t.name, t.content) for t in conv.turns[2:4]] == [
        ("call_1_0", "search_hotels", json.dumps(["Lutetia", "Ritz"])),
        ("call_1_1", "book", "confirmation 42"),
    ]
    assert conv.turns[4].content == "Booked the Hotel Lutetia for you, Ana."
    assert conv.persona == "a travel agent" and conv.expected_outcome == "a room booked in Paris for Ana"


def test_a_tool_call_judge_sees_the_calls_their_arguments_and_results():
    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric

    prompts: list[str] = []
    eng = scripted(lambda msgs, fmt: prompts.append(prompt_text(msgs)) or yes_no("yes", "two calls, both needed"))
    metric = LocalJudgeConversationalMetric("conversational_tool_call_efficiency", engine=eng)
    metric.measure(_booking())
    (prompt,) = prompts
    assert "Tool: search_hotels\\nInputs: {'city': 'Paris', 'nights': 2}\\nOutputs: [\\\"Lutetia\\\", \\\"Ritz\\\"]" in prompt
    assert "Tool: book\\nInputs: {'hotel': 'Lutetia'}\\nOutputs: confirmation 42" in prompt
    assert "What name is the booking under?" in prompt


def test_the_judges_verdict_becomes_deepevals_score_reason_and_success():
    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric

    yes = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(yes_no("yes", "recalls Ana")))
    assert yes.measure(_booking()) == 1.0
    assert (yes.score, yes.reason, yes.success, yes.is_successful(), yes.error) == (1.0, "recalls Ana", True, True, None)
    assert yes.__name__ == "knowledge_retention" and yes.threshold == 0.5 and yes.evaluation_model == "localjudge:scripted"
    no = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(yes_no("no", "says blue")), name="Retention")
    assert no.measure(_weather()) == 0.0
    assert (no.reason, no.success, no.__name__) == ("says blue", False, "Retention")
    strict = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(), threshold=0.2, strict_mode=True)
    assert strict.threshold == 1.0


def test_per_turn_windows_judge_each_unit_interaction_and_aggregate_by_the_rule():
    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric

    prompts: list[str] = []

    def answer(msgs, fmt):
        prompts.append(prompt_text(msgs))
        return yes_no("no", "wrong colour") if "blue" in prompts[-1] else yes_no("yes", "fine")

    scores = {}
    for rule in ("mean", "min", "pass_fraction"):
        m = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(answer), window_size=1, aggregate=rule)
        scores[rule] = m.measure(_weather())
        assert m.reason == "turn 0: 1.00 fine\nturn 1: 0.00 wrong colour"
        assert m.score_breakdown == {"turn 0": 1.0, "turn 1": 0.0}
    assert scores == {"mean": 0.5, "min": 0.0, "pass_fraction": 0.5}
    # window 1: each judgement sees its own unit interaction only
    assert "favourite colour is green" in prompts[0] and "blue" not in prompts[0]
    assert "favourite colour is green" not in prompts[1] and "blue" in prompts[1]
    prompts.clear()
    LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(answer), window_size=2).measure(_weather())
    assert "favourite colour is green" in prompts[1] and "blue" in prompts[1]


def test_deepeval_evaluate_and_assert_test_take_the_metric(deepeval_dir):
    from deepeval import assert_test, evaluate

    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric

    def answer(msgs, fmt):
        return yes_no("no", "says blue") if "blue" in prompt_text(msgs) else yes_no("yes", "recalls")

    metric = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(answer))
    result = evaluate(test_cases=[_booking(), _weather()], metrics=[metric], **_quiet())
    by_name = {tr.name: tr for tr in result.test_results}
    assert {n: (tr.success, tr.metrics_data[0].score) for n, tr in by_name.items()} == {
        "booking": (True, 1.0),
        "weather": (False, 0.0),
    }
    assert by_name["weather"].metrics_data[0].reason == "says blue"
    assert_test(_booking(), [metric], run_async=False)
    with pytest.raises(AssertionError, match="knowledge_retention"):
        assert_test(_weather(), [metric], run_async=False)


def test_an_unscored_judgement_is_the_metrics_error_naming_the_case_and_reason(deepeval_dir):
    from deepeval import evaluate

    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric, MetricError

    metric = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted("not json at all"))
    with pytest.raises(MetricError, match=r"^test case weather: judge 'knowledge_retention' left it unscored \(parse_error\)"):
        metric.measure(_weather())
    assert metric.success is False
    result = evaluate(test_cases=[_weather()], metrics=[metric], **_quiet(ignore_errors=True))
    md = result.test_results[0].metrics_data[0]
    assert md.success is False and md.score is None and "parse_error" in (md.error or "")


def test_bad_arguments_and_bad_test_cases_are_one_line_errors():
    from deepeval.test_case import LLMTestCase

    from localjudge.errors import InputError
    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric, MetricError

    metric = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted())
    with pytest.raises(MetricError, match="not a deepeval ConversationalTestCase"):
        metric.measure(LLMTestCase(input="hi", actual_output="hello"))
    with pytest.raises(InputError, match="window_size: 0"):
        LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(), window_size=0)
    with pytest.raises(InputError, match="takes no variable 'colour'"):
        LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(), values={"colour": "green"})
    from deepeval.test_case import ConversationalTestCase, Turn

    lone = ConversationalTestCase(name="lone", turns=[Turn(role="user", content="hello?")])
    per_turn = LocalJudgeConversationalMetric("knowledge_retention", engine=scripted(), window_size=3)
    with pytest.raises(MetricError, match="^test case lone: no unit interaction to judge"):
        per_turn.measure(lone)


@pytest.mark.model
@pytest.mark.slow
def test_real_default_model_judges_two_conversations_in_deepeval_evaluate(deepeval_dir, engine):
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig

    from localjudge.integrations.deepeval_conversation import LocalJudgeConversationalMetric

    session = LocalJudgeConversationalMetric("knowledge_retention", engine=engine)
    per_turn = LocalJudgeConversationalMetric("knowledge_retention", engine=engine, window_size=1, name="retention per turn")
    result = evaluate(
        test_cases=[_booking(), _weather()],
        metrics=[session, per_turn],
        async_config=AsyncConfig(run_async=True, max_concurrent=4),
        **_quiet(ignore_errors=False),
    )
    assert len(result.test_results) == 2
    for tr in result.test_results:
        assert [md.name for md in tr.metrics_data] == ["knowledge_retention", "retention per turn"]
        for md in tr.metrics_data:
            assert md.error is None and md.score is not None and 0.0 <= md.score <= 1.0, (md.name, md.score, md.error)
            assert md.evaluation_model == "localjudge:smollm2-135m"
            assert md.success == (md.score >= 0.5)
        assert tr.metrics_data[1].reason.startswith("turn 0: ") and "\nturn 1: " in tr.metrics_data[1].reason


@pytest.mark.model
@pytest.mark.slow
def test_docs_recipe_runs_verbatim_on_the_default_model(deepeval_dir, capsys):
    from docs_snippets import section_snippets

    (code,) = section_snippets("docs/integrations.md", "DeepEval conversational metrics")
    exec(compile(code, "docs/integrations.md", "exec"), {})
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(" ")[0] for line in lines if line.startswith(("knowledge_retention ", "retention,"))] == [
        "knowledge_retention",
        "retention,",
    ]
