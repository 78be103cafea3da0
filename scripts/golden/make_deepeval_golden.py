"""Dev script: tests/golden/<name>.txt for DeepEval's several-call judges (kinds `deepeval_conversation` and
`deepeval_agentic`): the first prompt the installed deepeval package's own metric sends for a fixed case, recorded
from the real metric (a model that records the prompt, then stops the metric). Run it again after a DeepEval
upgrade; tests/test_deepeval_golden.py checks the files against the package and against each judge's own first
prompt for the same case."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.catalog.make_deepeval_conversation_judges import GOLDEN_TURNS  # (the single-call ports' golden turns)

ROOT = Path(__file__).resolve().parents[2]

ROLE = "A cheerful weather assistant who answers in one sentence, in °C."
INPUT = 'What\'s the weather in "Lyon" — and tomorrow, in °C?'
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": "Lyon", "unit": "C"}),
    ("search", {"query": "Lyon forecast", "days": 2, "exact": True}),
]


class _First(Exception):
    """Raised by the recording model once it has the first prompt: nothing after it is needed."""


def first_prompt(make_metric: Callable[[Any], Any], case: Any) -> str:
    """The first prompt the metric `make_metric(model)` sends for `case`."""
    from deepeval.models.base_model import DeepEvalBaseLLM

    seen: list[str] = []

    class Recording(DeepEvalBaseLLM):
        def __init__(self) -> None:
            super().__init__(model="recording")

        def load_model(self, *a: Any, **k: Any) -> None:
            return None

        def generate(self, prompt: str, schema: Any = None, **k: Any) -> Any:
            seen.append(prompt)
            raise _First

        async def a_generate(self, prompt: str, schema: Any = None, **k: Any) -> Any:
            return self.generate(prompt, schema)

        def get_model_name(self, *a: Any, **k: Any) -> str:
            return "recording"

    try:
        make_metric(Recording()).measure(case, _show_indicator=False)
    except _First:
        pass
    if not seen:
        raise SystemExit("the metric sent no prompt")
    return seen[0]


def _conversational(metric_name: str) -> tuple[Callable[[Any], Any], Any]:
    import deepeval.metrics as metrics
    from deepeval.test_case import ConversationalTestCase, Turn

    cls = getattr(metrics, metric_name)
    rag = RAG_CONTEXTS if metric_name in RAG_METRICS else [None] * len(GOLDEN_TURNS)
    turns = [Turn(role=t["role"], content=t["content"], retrieval_context=c) for t, c in zip(GOLDEN_TURNS, rag, strict=True)]
    case = ConversationalTestCase(turns=turns, chatbot_role=ROLE)
    if metric_name in OUTCOME_METRICS:
        case = ConversationalTestCase(turns=turns, chatbot_role=ROLE, expected_outcome=OUTCOME)
    if metric_name == "TopicAdherenceMetric":
        return (lambda model: cls(relevant_topics=TOPICS, model=model, async_mode=False)), case
    if metric_name == "GoalAccuracyMetric":
        return (lambda model: cls(model=model, async_mode=False)), _tool_case()
    if metric_name == "ConversationalGEval":  # the built-in example's criteria (judges/builtin/deepeval_professionalism.toml)
        from deepeval.test_case import MultiTurnParams

        from localjudge.judges import get_judge

        cfg = get_judge("deepeval_professionalism").spec.deepeval_geval
        assert cfg is not None
        params = [MultiTurnParams(p) for p in cfg.evaluation_params]
        return (lambda model: cls(name="p", criteria=cfg.criteria, evaluation_params=params, model=model, async_mode=False)), case
    return (lambda model: cls(model=model, async_mode=False)), case


TOPICS = ["weather", "travel"]  # TopicAdherenceMetric's relevant_topics for the golden case
# the turn-level RAG metrics' golden case: GOLDEN_TURNS with each assistant turn's retrieval context (two passages, none)
RAG_METRICS = ("TurnFaithfulnessMetric", "TurnContextualRelevancyMetric")
RAG_METRICS += ("TurnContextualPrecisionMetric", "TurnContextualRecallMetric")
# the metrics that also read the conversation's expected_outcome, and the golden case's
OUTCOME_METRICS = ("TurnContextualPrecisionMetric", "TurnContextualRecallMetric")
OUTCOME = 'Léa learns it is "sunny", 24 °C in Lyon. Rain is {likely} tomorrow.'
RAG_CONTEXTS: list[list[str] | None] = [None, ['Lyon: "sunny", 24 °C.', "Tomorrow: rain {likely}."], None, None]


def _tool_case() -> Any:
    """The golden turns with `CALLS` (each with an output) on the first assistant turn: GoalAccuracyMetric prints
    a turn's tool calls."""
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

    calls = [ToolCall(name=n, input_parameters=a, output=f"{n}: ok") for n, a in CALLS]
    return ConversationalTestCase(
        turns=[
            Turn(role=t["role"], content=t["content"], tools_called=calls if i == 1 else None) for i, t in enumerate(GOLDEN_TURNS)
        ]
    )


def _agentic(metric_name: str) -> tuple[Callable[[Any], Any], Any]:
    import deepeval.metrics as metrics
    from deepeval.test_case import LLMTestCase, ToolCall

    cls = getattr(metrics, metric_name)
    case = LLMTestCase(
        input=INPUT,
        actual_output=GOLDEN_TURNS[-1]["content"],
        tools_called=[ToolCall(name=n, input_parameters=a) for n, a in CALLS],
    )
    return (lambda model: cls(model=model, async_mode=False)), case


def trace_conversation() -> Any:
    """The golden case as a conversation: the input, the assistant calling CALLS (answered), the last turn."""
    from localjudge.conversations import from_messages

    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(CALLS)
    ]
    return from_messages(
        [
            {"role": "user", "content": INPUT},
            {"role": "assistant", "content": "Plan: get the weather, then search the forecast.", "tool_calls": calls},
            *({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"} for i in range(len(CALLS))),
            {"role": "assistant", "content": GOLDEN_TURNS[-1]["content"]},
        ]
    )


def _traced(metric_name: str) -> tuple[Callable[[Any], Any], Any]:
    """The trace metric with the golden conversation's trace dict as DeepEval's evaluate sets it (the trace dict
    itself is checked against a real @observe run in tests/test_deepeval_trace.py)."""
    import deepeval.metrics as metrics
    from deepeval.test_case import LLMTestCase

    from localjudge.conversations.deepeval_trace import deepeval_trace_dict

    cls = getattr(metrics, metric_name)
    case = LLMTestCase(input=INPUT, actual_output=GOLDEN_TURNS[-1]["content"])
    case._trace_dict = deepeval_trace_dict(trace_conversation())
    return (lambda model: cls(model=model, async_mode=False)), case


# judge name -> (how the package's metric and case are made, which of the two inputs the judge reads)
PORTS: dict[str, tuple[str, str]] = {
    "deepeval_knowledge_retention": ("KnowledgeRetentionMetric", "conversation"),
    "deepeval_conversation_completeness": ("ConversationCompletenessMetric", "conversation"),
    "deepeval_role_adherence": ("RoleAdherenceMetric", "conversation"),
    "deepeval_topic_adherence": ("TopicAdherenceMetric", "conversation"),
    "deepeval_goal_accuracy": ("GoalAccuracyMetric", "conversation"),
    "deepeval_argument_correctness": ("ArgumentCorrectnessMetric", "agentic"),
    "deepeval_task_completion": ("TaskCompletionMetric", "agentic"),
    "deepeval_turn_faithfulness": ("TurnFaithfulnessMetric", "conversation"),
    "deepeval_turn_contextual_relevancy": ("TurnContextualRelevancyMetric", "conversation"),
    "deepeval_professionalism": ("ConversationalGEval", "conversation"),
    "deepeval_step_efficiency": ("StepEfficiencyMetric", "trace"),
    "deepeval_plan_adherence": ("PlanAdherenceMetric", "trace"),
    "deepeval_turn_contextual_precision": ("TurnContextualPrecisionMetric", "conversation"),
    "deepeval_turn_contextual_recall": ("TurnContextualRecallMetric", "conversation"),
}


def golden(name: str) -> str:
    """The package's first prompt for the fixed case, as tests/golden/ stores messages (one user message)."""
    metric, kind = PORTS[name]
    make, case = {"conversation": _conversational, "agentic": _agentic, "trace": _traced}[kind](metric)
    return f"===== user =====\n{first_prompt(make, case)}\n"


def variables(name: str) -> dict[str, str]:
    """The judge's variables for the same case, as a localjudge run gives them."""
    from localjudge.conversations import from_messages
    from localjudge.conversations.deepeval_case import print_tools_called_text, tools_called_text
    from localjudge.conversations.model import ToolCall
    from localjudge.conversations.render import deepeval_turns_text

    if name == "deepeval_goal_accuracy":
        from localjudge.conversations.deepeval_tool_turns import deepeval_tool_turns_text
        from localjudge.conversations.readers import from_deepeval

        return {"deepeval_tool_turns": deepeval_tool_turns_text(from_deepeval(_tool_case()))}
    if PORTS[name][0] in RAG_METRICS:
        from localjudge.conversations.render import deepeval_rag_turns_text

        msgs = [
            {**t, **({"retrieval_context": c} if c is not None else {})} for t, c in zip(GOLDEN_TURNS, RAG_CONTEXTS, strict=True)
        ]
        rag = {"deepeval_rag_turns": deepeval_rag_turns_text(from_messages(msgs))}
        return {**rag, "expected_outcome": OUTCOME} if PORTS[name][0] in OUTCOME_METRICS else rag
    if name == "deepeval_topic_adherence":
        return {"deepeval_turns": deepeval_turns_text(from_messages(GOLDEN_TURNS)), "relevant_topics": json.dumps(TOPICS)}
    if PORTS[name][1] == "conversation":
        return {"deepeval_turns": deepeval_turns_text(from_messages(GOLDEN_TURNS)), "chatbot_role": ROLE}
    if PORTS[name][1] == "trace":
        from localjudge.conversations.deepeval_trace import deepeval_trace_json

        return {"deepeval_trace_json": deepeval_trace_json(trace_conversation())}
    calls = [ToolCall(name=n, arguments=a) for n, a in CALLS]
    if name == "deepeval_task_completion":
        return {
            "deepeval_input": INPUT,
            "deepeval_actual_output": GOLDEN_TURNS[-1]["content"],
            "deepeval_tools_called_json": print_tools_called_text(calls),
        }
    return {"deepeval_input": INPUT, "deepeval_tools_called": tools_called_text(calls)}


def main() -> None:
    for name in sys.argv[1:] or PORTS:
        path = ROOT / "tests" / "golden" / f"{name}.txt"
        path.write_text(golden(name), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
