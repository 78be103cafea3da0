"""The judge kinds, each once: how a row is judged, and what the kind adds to the prompt or the result (what a judge
file of the kind must give is the kind's section, sections.py). Every place that behaves by kind (the spec check, the prompt builder, the judge's
calls, its outcome, its variable values, align) reads the kind's `KindTraits` from `KINDS`, never a kind's name;
a kind's calls are the program of its call shape (`programs.PROGRAMS`).

Adding a kind is adding a row here and its section in `sections.py`, and its plan: for a prompt built from a key,
its builder in `builders.BUILDERS`; for a new call shape, its program (`programs.register_program`) and, where its
plan is not the file's own messages, its entry in `builders.PLANS`.
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
    """What a judge kind is: how a row is judged (`calls`), whether it takes few-shot examples, whether the four-line
    capping rules apply to its verdict, the text it adds to the variables, and the spec key its prompt is built from
    (None: the file's own messages and output). The keys a judge file of it must give are its section's
    (sections.py)."""

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
    "single": KindTraits(),
    "per_item": KindTraits(calls="per_item", examples=False),
    "two_stage": KindTraits(calls="two_stage", examples=False),
    "four_line": KindTraits(four_line_rules=True),
    "v1_metric": KindTraits(extra_text="grading_context", built_from="metric"),
    "instructions": KindTraits(extra_text="instruction_fields", built_from="instructions"),
    "custom_prompt": KindTraits(built_from="prompt_template"),
    "tool_call_match": KindTraits(calls="none", examples=False, built_from="match"),
    "ragas_agent": KindTraits(calls="ragas_agent", examples=False),
    # DeepEval's LLM-judged agentic metrics (judges/deepeval_agentic.py)
    "deepeval_agentic": KindTraits(calls="deepeval_agentic", examples=False),
    "deepeval_conversation": KindTraits(calls="deepeval_conversation", examples=False),
    # DeepEval's ConversationalGEval: its prompts built from `[deepeval_geval]` (judges/deepeval_geval.py)
    "deepeval_geval": KindTraits(calls="deepeval_geval", examples=False, built_from="deepeval_geval"),
}
