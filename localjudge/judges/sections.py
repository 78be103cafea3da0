"""Each judge kind's section: the keys of a judge file that its kind reads, typed, with the checks of the kind.

A judge file stays one flat table (spec.py: `JudgeSpec`, the format users write, unchanged); at load the keys its
`kind` reads are validated once more into that kind's section, a member of the discriminated union `KindSection`
(`JudgeSpec.section()`). A section's required fields are the keys the kind needs ("kind 'per_item' needs key
'item_variable'" when one is absent or empty), its own validator checks what ties them (how many stages a metric
chains), and a program or a prompt builder receives its kind's section typed, its keys never None
(`programs.PROGRAMS`, `builders.BUILDERS` declare the section they read).

Adding a kind is adding its row in kinds.py and its section here. The models of the kind-specific keys (a stage, a
metric's settings) live here too, below the sections' base; spec.py imports them for the flat file model.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageTemplate(_Strict):
    """One chat message of a judge: its role and its template text."""

    role: Literal["system", "user", "assistant"]
    template: str


class Stage(_Strict):
    """One call of a two_stage judge: its name, messages, and output format (None: built per call)."""

    name: str
    messages: list[MessageTemplate]
    output: dict[str, Any] | None = None  # stage 2 of two_stage builds its format per call (exactly N)


class RagasAgent(_Strict):
    """Which RAGAS agent metric a ragas_agent judge computes from its stages (judges/ragas_agent.py), and
    topic adherence's `mode`."""

    metric: Literal["goal_accuracy_with_reference", "goal_accuracy_without_reference", "topic_adherence"]
    mode: Literal["precision", "recall", "f1"] = "f1"


class DeepEvalConversation(_Strict):
    """Which DeepEval conversational metric a deepeval_conversation judge computes from its stages
    (judges/deepeval_conversation.py), and DeepEval's `strict_mode` (a score under 1 becomes 0)."""

    metric: Literal[
        "knowledge_retention",
        "conversation_completeness",
        "role_adherence",
        "topic_adherence",
        "turn_faithfulness",
        "turn_contextual_relevancy",
        "goal_accuracy",
        "turn_contextual_precision",
        "turn_contextual_recall",
    ]
    strict_mode: bool = False


GEvalParam = Literal["content", "role", "scenario", "expected_outcome", "retrieval_context", "tools_called"]

# DeepEval 4.3.1 MultiTurnParams that `deepeval_geval` refuses, and why (the one-line error says it)
_NO_LABEL = "DeepEval 4.3.1's ConversationalGEval has no label for it and fails with a KeyError: no prompt to port"
_NO_MAP = "DeepEval prints the Python dict/list the test case holds; a row column is text, with no one faithful mapping"
_NO_FIELD = "localjudge's conversation model holds no such turn field"
GEVAL_REFUSED: dict[str, str] = {
    **dict.fromkeys(("context", "user_description", "chatbot_role"), _NO_LABEL),
    **dict.fromkeys(("metadata", "tags"), _NO_MAP),
    **dict.fromkeys(
        ("audio", "provider_transcript", "mcp_tools_called", "mcp_resources_called", "mcp_prompts_called"), _NO_FIELD
    ),
}


def _geval_param(v: Any) -> Any:
    if isinstance(v, str) and v in GEVAL_REFUSED:
        raise ValueError(
            f"{v!r} is not supported: {GEVAL_REFUSED[v]}; use content, role, scenario, expected_outcome, "
            "retrieval_context or tools_called"
        )
    return v


class GEvalRubric(_Strict):
    """One band of a ConversationalGEval rubric (DeepEval's `Rubric`): scores `score_range` (0-10, inclusive)
    mean `expected_outcome`."""

    score_range: tuple[int, int]
    expected_outcome: str

    @field_validator("score_range")
    @classmethod
    def _range(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not (0 <= v[0] <= 10 and 0 <= v[1] <= 10):
            raise ValueError("both score_range values must be between 0 and 10 inclusive")
        if v[0] > v[1]:
            raise ValueError("score_range's start must be less than or equal to its end")
        return v


class DeepEvalGEval(_Strict):
    """A DeepEval ConversationalGEval judge (kind `deepeval_geval`, judges/deepeval_geval.py): the `criteria`
    DeepEval turns into evaluation steps (one call), or the `evaluation_steps` themselves; the turn and
    conversation fields shown (`content` and `role` always, as DeepEval adds them; per turn `retrieval_context`
    and `tools_called`; `scenario`, `expected_outcome` from the row; GEVAL_REFUSED's refused with why); an optional `rubric`; DeepEval's `strict_mode` (a score under 1 becomes 0)."""

    criteria: str | None = None
    evaluation_steps: list[str] | None = None
    evaluation_params: list[Annotated[GEvalParam, BeforeValidator(_geval_param)]] = ["content", "role"]
    rubric: list[GEvalRubric] = []
    strict_mode: bool = False

    @model_validator(mode="after")
    def _given(self) -> DeepEvalGEval:
        if self.criteria is None and self.evaluation_steps is None:
            raise ValueError("give 'criteria' or 'evaluation_steps'")
        if self.criteria is not None and not self.criteria.strip():
            raise ValueError("'criteria' cannot be an empty string")
        if self.evaluation_steps is not None and not self.evaluation_steps:
            raise ValueError("'evaluation_steps' must not be empty: omit it (criteria then) or give the steps")
        if not self.evaluation_params:
            raise ValueError("'evaluation_params' cannot be an empty list")
        bands = sorted(self.rubric, key=lambda r: r.score_range[0])
        for a, b in zip(bands, bands[1:], strict=False):
            if a.score_range[1] >= b.score_range[0]:
                raise ValueError(f"rubric score ranges overlap: {list(a.score_range)} and {list(b.score_range)}")
        return self


class Example(_Strict):
    """A few-shot example of an MLflow v1 metric (MLflow's EvaluationExample)."""

    output: str
    score: float | int
    justification: str
    input: str | None = None
    grading_context: dict[str, str] | str | None = None


class V1Metric(_Strict):
    """What MLflow's make_genai_metric takes: a metric made from a definition, a rubric and examples."""

    name: str | None = None  # the metric name shown in the prompt; default: the judge name
    definition: str
    grading_prompt: str
    grading_context_columns: list[str] = []
    include_input: bool = True
    examples: list[Example] = []
    min: int = 1
    max: int = 5


class ResultType(_Strict):
    """The result type of an instructions judge, and so its constraint."""

    type: Literal["yes_no", "bool", "int", "float", "labels"] = "yes_no"
    min: float | None = None
    max: float | None = None
    decimals: int = 2  # float results
    labels: list[str] = []
    label_values: dict[str, float] | None = None  # labels -> score in [0, 1]


AgenticMetric = Literal["argument_correctness", "task_completion", "step_efficiency", "plan_adherence"]
MatchMode = Literal["exact", "ordered", "subset", "mlflow_exact"]


# ------------------------------------------------------------------------------------------ sections


def needs(section: type[Section]) -> tuple[str, ...]:
    """The keys a kind needs: its section's required fields, in their order."""
    return tuple(n for n, f in section.model_fields.items() if n != "kind" and f.is_required())


class Section(BaseModel):
    """A kind's section: the judge file's keys its kind reads (the file's other keys are the file model's)."""

    model_config = ConfigDict(extra="ignore")  # built from every kind's keys of the file; each takes its own

    @model_validator(mode="before")
    @classmethod
    def _given(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in needs(cls):
                if not data.get(key):
                    raise ValueError(f"kind {data.get('kind')!r} needs key {key!r}")
        return data


def _stage_count(stages: list[Stage], want: int) -> bool:
    """Exactly `want` stages, each with its output format."""
    return len(stages) == want and all(s.output is not None for s in stages)


class MessagesSection(Section):
    """A kind whose calls send the file's own `messages` under its `output` format."""

    messages: list[MessageTemplate]
    output: dict[str, Any]


class SingleSection(MessagesSection):
    """`single`: one call, the file's messages and output."""

    kind: Literal["single"]


class PerItemSection(MessagesSection):
    """`per_item`: one call per item of `item_variable` when it is a list."""

    kind: Literal["per_item"]
    item_variable: str


class TwoStageSection(Section):
    """`two_stage`: statements (stage 0), then one verdict per statement (stage 1), an unsure one worth
    `unsure_value`."""

    kind: Literal["two_stage"]
    stages: list[Stage]
    unsure_value: float = 0.5

    @model_validator(mode="after")
    def _two(self) -> TwoStageSection:
        if len(self.stages) != 2:
            raise ValueError("kind 'two_stage' needs exactly 2 stages")
        return self


class FourLineSection(MessagesSection):
    """`four_line`: one call; the advanced relevance rubric's rules after parsing (`context_variable` tells if any)."""

    kind: Literal["four_line"]
    context_variable: str


class V1MetricSection(Section):
    """`v1_metric`: MLflow's v1 grading template built from `[metric]`."""

    kind: Literal["v1_metric"]
    metric: V1Metric


class InstructionsSection(Section):
    """`instructions`: MLflow's field-based instructions judge, its result type from `[result]` (yes/no if none)."""

    kind: Literal["instructions"]
    instructions: str
    result: ResultType | None = None


class CustomPromptSection(Section):
    """`custom_prompt`: MLflow's custom prompt judge, `[[label]]` choices, optionally a value per label."""

    kind: Literal["custom_prompt"]
    prompt_template: str
    numeric_values: dict[str, float] | None = None


class ToolCallMatchSection(Section):
    """`tool_call_match`: no model call; tool calls compared by `match` (judges/toolmatch.py)."""

    kind: Literal["tool_call_match"]
    match: MatchMode
    match_ordered: bool = False  # `mlflow_exact`: MLflow's should_consider_ordering


class RagasAgentSection(Section):
    """`ragas_agent`: RAGAS's agent metric `ragas_agent.metric` chaining `stages` (judges/ragas_agent.py)."""

    kind: Literal["ragas_agent"]
    stages: list[Stage]
    ragas_agent: RagasAgent

    @model_validator(mode="after")
    def _chain(self) -> RagasAgentSection:
        want = 3 if self.ragas_agent.metric == "topic_adherence" else 2
        if not _stage_count(self.stages, want):
            raise ValueError(f"ragas_agent metric {self.ragas_agent.metric!r} needs exactly {want} stages, each with an output")
        return self


class DeepEvalAgenticSection(Section):
    """`deepeval_agentic`: DeepEval's agentic metric `deepeval_agentic` chaining `stages` (judges/deepeval_agentic.py)."""

    kind: Literal["deepeval_agentic"]
    stages: list[Stage]
    deepeval_agentic: AgenticMetric
    deepeval_strict_mode: bool = False  # DeepEval's strict_mode (a score under 1 becomes 0)

    @model_validator(mode="after")
    def _chain(self) -> DeepEvalAgenticSection:
        want = 3 if self.deepeval_agentic == "plan_adherence" else 2
        if not _stage_count(self.stages, want):
            raise ValueError(
                f"kind 'deepeval_agentic' ({self.deepeval_agentic}) needs exactly {want} stages, each with an output"
            )
        return self


class DeepEvalConversationSection(Section):
    """`deepeval_conversation`: DeepEval's conversational metric chaining `stages` (judges/deepeval_conversation.py)."""

    kind: Literal["deepeval_conversation"]
    stages: list[Stage]
    deepeval_conversation: DeepEvalConversation

    @model_validator(mode="after")
    def _chain(self) -> DeepEvalConversationSection:
        metric = self.deepeval_conversation.metric
        want = {"role_adherence": 2, "turn_faithfulness": 5}.get(metric, 3)
        if not _stage_count(self.stages, want):
            raise ValueError(f"deepeval_conversation metric {metric!r} needs exactly {want} stages, each with an output")
        return self


class DeepEvalGEvalSection(Section):
    """`deepeval_geval`: DeepEval's ConversationalGEval from `[deepeval_geval]` (judges/deepeval_geval.py)."""

    kind: Literal["deepeval_geval"]
    deepeval_geval: DeepEvalGEval


KindSection = Annotated[
    SingleSection
    | PerItemSection
    | TwoStageSection
    | FourLineSection
    | V1MetricSection
    | InstructionsSection
    | CustomPromptSection
    | ToolCallMatchSection
    | RagasAgentSection
    | DeepEvalAgenticSection
    | DeepEvalConversationSection
    | DeepEvalGEvalSection,
    Field(discriminator="kind"),
]


@functools.cache
def _adapter() -> TypeAdapter[KindSection]:
    return TypeAdapter(KindSection)


@functools.cache
def section_types() -> dict[str, type[Section]]:
    """Each kind's section type, by kind (the union's members by their `kind` tag)."""
    return {kind: cls for cls in _members() for kind in get_args(cls.model_fields["kind"].annotation)}


def _members() -> tuple[type[Section], ...]:
    return get_args(get_args(KindSection)[0])


@functools.cache
def section_keys() -> frozenset[str]:
    """Every key some kind's section reads (what `JudgeSpec.section` hands the union)."""
    return frozenset(n for cls in _members() for n in cls.model_fields if n != "kind")


def parse_section(data: dict[str, Any]) -> KindSection:
    """`data` (its `kind` and the file's kind keys) as its kind's section; a problem is one `ValueError` line, as the
    file model's own checks read (`kind 'per_item' needs key 'item_variable'`), never the union's tag."""
    try:
        return _adapter().validate_python(data)
    except ValidationError as e:
        raise ValueError(e.errors()[0].get("msg", "invalid").removeprefix("Value error, ")) from None


S = TypeVar("S", bound=Section)


def typed_section(section: Section, want: type[S], kind: str) -> S:
    """`section` as the section type `want` that a program or a builder reads: a kind whose traits name a program
    or a builder of another kind's section is a programming error, named."""
    if not isinstance(section, want):
        raise TypeError(f"kind {kind!r} has a {type(section).__name__}; its program reads a {want.__name__}")
    return section
