"""The deterministic tool-call metrics give the same numbers as RAGAS's ToolCallAccuracy and DeepEval's
ToolCorrectnessMetric themselves, called here on the same cases (neither uses a model on these paths:
RAGAS's metric takes none; DeepEval's constructor wants one, so it gets a model that fails when called,
which proves the score path never calls it)."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from localjudge.conversations.model import ToolCall
from localjudge.conversations.toolcalls import deepeval_tool_correctness, ragas_tool_call_accuracy


def tc(name, **args):
    return ToolCall(name=name, arguments=args)


W = tc("weather", city="Paris", unit="C")
S = tc("search", query="louvre hours")
B = tc("book", venue="Louvre", when={"day": "mon", "time": "10:00"}, people=2)
# (id, called, expected)
CASES = [
    ("identical", [W, S], [W, S]),
    ("both_empty", [], []),
    ("no_calls", [], [W]),
    ("no_reference", [W], []),
    ("reordered", [S, W], [W, S]),
    ("extra_call", [W, S, B], [W, S]),
    ("missing_call", [W], [W, S]),
    ("wrong_name", [tc("forecast", city="Paris", unit="C")], [W]),
    ("wrong_arg_value", [tc("weather", city="Lyon", unit="C")], [W]),
    ("wrong_arg_type_int_vs_str", [tc("book", venue="Louvre", when={"day": "mon", "time": "10:00"}, people="2")], [B]),
    ("wrong_arg_type_float_vs_int", [tc("book", venue="Louvre", when={"day": "mon", "time": "10:00"}, people=2.0)], [B]),
    ("missing_arg", [tc("weather", city="Paris")], [W]),
    ("extra_arg", [tc("weather", city="Paris", unit="C", lang="fr")], [W]),
    ("nested_arg_differs", [tc("book", venue="Louvre", when={"day": "tue", "time": "10:00"}, people=2)], [B]),
    ("nested_arg_reordered_keys", [tc("book", people=2, when={"time": "10:00", "day": "mon"}, venue="Louvre")], [B]),
    ("list_arg", [tc("search", query=["a", "b"])], [tc("search", query=["b", "a"])]),
    ("no_args_both", [tc("now")], [tc("now")]),
    ("args_called_none_expected", [tc("now", tz="UTC")], [tc("now")]),
    ("duplicate_calls_expected_twice", [S, S], [S, S]),
    ("duplicate_called_once_expected_twice", [S], [S, S]),
    ("called_twice_expected_once", [S, S], [S]),
    (
        "same_name_different_args_swapped",
        [tc("weather", city="Rome"), tc("weather", city="Oslo")],
        [tc("weather", city="Oslo"), tc("weather", city="Rome")],
    ),
    ("interleaved_extra_in_middle", [W, tc("log", msg="x"), S], [W, S]),
    ("bool_vs_string_arg", [tc("flag", on=True)], [tc("flag", on="True")]),
    ("none_arg", [tc("flag", on=None)], [tc("flag", on="None")]),
]
IDS = [c[0] for c in CASES]


def ragas_score(called, expected, strict_order):
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage
    from ragas.messages import ToolCall as RToolCall
    from ragas.metrics._tool_call_accuracy import ToolCallAccuracy  # the class ragas.metrics re-exports

    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="plan my day"),
            AIMessage(content="", tool_calls=[RToolCall(name=c.name, args=c.arguments) for c in called]),
        ],
        reference_tool_calls=[RToolCall(name=c.name, args=c.arguments) for c in expected],
    )
    metric = ToolCallAccuracy(strict_order=strict_order)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asyncio.run(metric._multi_turn_ascore(sample, None))


def deepeval_score(called, expected, **kw):
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, ToolCallParams
    from deepeval.test_case import ToolCall as DToolCall

    class FailingModel(DeepEvalBaseLLM):
        def load_model(self):
            return None

        def generate(self, *a, **k):
            raise AssertionError("DeepEval called the model")

        async def a_generate(self, *a, **k):
            raise AssertionError("DeepEval called the model")

        def get_model_name(self):
            return "no-model"

    params = [ToolCallParams.INPUT_PARAMETERS] if kw.get("input_parameters") else []
    metric = ToolCorrectnessMetric(
        model=FailingModel(),
        async_mode=False,
        include_reason=True,
        should_exact_match=kw.get("exact_match", False),
        should_consider_ordering=kw.get("consider_ordering", False),
        evaluation_params=params,
    )
    case = LLMTestCase(
        input="plan my day",
        actual_output="done",
        tools_called=[DToolCall(name=c.name, input_parameters=c.arguments) for c in called],
        expected_tools=[DToolCall(name=c.name, input_parameters=c.arguments) for c in expected],
    )
    return metric.measure(case, _show_indicator=False)


@pytest.mark.parametrize("strict_order", [True, False], ids=["strict", "any_order"])
@pytest.mark.parametrize(("name", "called", "expected"), CASES, ids=IDS)
def test_tool_call_accuracy_equals_ragas(name, called, expected, strict_order):
    assert ragas_tool_call_accuracy(called, expected, strict_order=strict_order) == ragas_score(called, expected, strict_order)


DEEPEVAL_MODES = {
    "names": {},
    "names_ordered": {"consider_ordering": True},
    "names_exact": {"exact_match": True},
    "args": {"input_parameters": True},
    "args_ordered": {"input_parameters": True, "consider_ordering": True},
    "args_exact": {"input_parameters": True, "exact_match": True},
}


@pytest.mark.parametrize("mode", list(DEEPEVAL_MODES))
@pytest.mark.parametrize(("name", "called", "expected"), CASES, ids=IDS)
def test_tool_correctness_equals_deepeval(name, called, expected, mode):
    kw = DEEPEVAL_MODES[mode]
    assert deepeval_tool_correctness(called, expected, **kw) == deepeval_score(called, expected, **kw)


def test_cases_cover_partial_scores_not_only_zero_and_one():
    ragas = {ragas_tool_call_accuracy(c, e) for _, c, e in CASES}
    deepeval = {deepeval_tool_correctness(c, e, input_parameters=True) for _, c, e in CASES}
    assert ragas - {0.0, 1.0} and deepeval - {0.0, 1.0}
