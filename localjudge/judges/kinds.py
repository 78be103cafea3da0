"""The judge kinds, each once: what a judge file of the kind must give, how a row is judged, and what the kind
adds to the prompt or the result. Every place that behaves by kind (the spec check, the prompt builder, the judge's
calls, its outcome, its variable values, align) reads the kind's `KindTraits` from `KINDS`, never a kind's name;
a kind's calls are the program of its call shape (`programs.PROGRAMS`).

Adding a kind is adding a row here (and, for a prompt built from a key, its builder in `builders.BUILDERS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal[
    "single",
    "per_item",
    "two_stage",
    "four_line",
    "v1_metric",
    "instructions",
    "custom_prompt",
    "tool_call_match",
    "ragas_agent",
    "deepeval_agentic",
    "deepeval_conversation",
    "deepeval_geval",
]
# how a row is judged: one call, one call per item of the item variable, or statements then their verdicts
# ("none": no model call, the judge computes its score itself: tool_call_match; "ragas_agent": RAGAS's agent
# metrics' chained calls, judges/ragas_agent.py; "deepeval_conversation" and "deepeval_agentic": DeepEval's
# conversational and agentic metrics' chained calls, judges/deepeval_conversation.py and judges/deepeval_agentic.py)
CallShape = Literal[
    "one", "per_item", "two_stage", "none", "ragas_agent", "deepeval_agentic", "deepeval_conversation", "deepeval_geval"
]
# what the kind adds to the variables' texts: nothing, MLflow's grading context, or the instructions' field list
ExtraText = Literal["", "grading_context", "instruction_fields"]


@dataclass(frozen=True)
class KindTraits:
    """What a judge kind is: the keys a judge file of it must give, how a row is judged (`calls`), whether it takes
    few-shot examples, whether the four-line capping rules apply to its verdict, the text it adds to the variables,
    and the spec key its prompt is built from (None: the file's own messages and output)."""

    needs: tuple[str, ...]
    calls: CallShape = "one"
    examples: bool = True
    four_line_rules: bool = False
    extra_text: ExtraText = ""
    built_from: str | None = None

    @property
    def single_call(self) -> bool:
        """Whether a row is judged with one call (what `score_text`, `--fast`, probabilities and align work on)."""
        return self.calls == "one"

    @property
    def needs_model(self) -> bool:
        """Whether judging a row calls the model (a run of model-free judges only never loads one)."""
        return self.calls != "none"


KINDS: dict[str, KindTraits] = {
    "single": KindTraits(needs=("messages", "output")),
    "per_item": KindTraits(needs=("messages", "output", "item_variable"), calls="per_item", examples=False),
    "two_stage": KindTraits(needs=("stages",), calls="two_stage", examples=False),
    "four_line": KindTraits(needs=("messages", "output", "context_variable"), four_line_rules=True),
    "v1_metric": KindTraits(needs=("metric",), extra_text="grading_context", built_from="metric"),
    "instructions": KindTraits(needs=("instructions",), extra_text="instruction_fields", built_from="instructions"),
    "custom_prompt": KindTraits(needs=("prompt_template",), built_from="prompt_template"),
    "tool_call_match": KindTraits(needs=("match",), calls="none", examples=False, built_from="match"),
    "ragas_agent": KindTraits(needs=("stages", "ragas_agent"), calls="ragas_agent", examples=False),
    # DeepEval's LLM-judged agentic metrics (judges/deepeval_agentic.py)
    "deepeval_agentic": KindTraits(needs=("stages", "deepeval_agentic"), calls="deepeval_agentic", examples=False),
    "deepeval_conversation": KindTraits(needs=("stages", "deepeval_conversation"), calls="deepeval_conversation", examples=False),
    # DeepEval's ConversationalGEval: its prompts built from `[deepeval_geval]` (judges/deepeval_geval.py)
    "deepeval_geval": KindTraits(needs=("deepeval_geval",), calls="deepeval_geval", examples=False, built_from="deepeval_geval"),
}
