"""The judge data-file schema (TOML) and its loader.

A judge file is validated into a `JudgeSpec` (pydantic, unknown keys rejected). Any problem is a
`JudgeSpecError` naming the file and the key, e.g.
`judge file my.toml: key 'output.kind': unknown output format 'yesno'`. The file is one flat table; the keys its
`kind` reads are checked once more, at load, as that kind's typed section (sections.py, `JudgeSpec.section()`), which
its program and prompt builder receive.

Kinds:
  single        one call: `messages` rendered, `output` parsed (most judges)
  per_item      one call per item of `item_variable` when it is a list; score = fraction of "yes"
  two_stage     `stages[0]` extracts statements, `stages[1]` gives exactly one verdict per statement
  four_line     one call; the advanced relevance rubric's rules applied after parsing (`context_variable` tells if any)
  v1_metric     MLflow v1 grading template built from `metric` (definition, rubric, examples)
  instructions  MLflow's field-based instructions judge built from `instructions` + `result`
  custom_prompt MLflow's custom prompt judge built from `prompt_template` with [[label]] choices
  ragas_agent   RAGAS's agent metrics: `stages` are its prompts, `[ragas_agent]` which metric chains them (ragas_agent.py)
  deepeval_conversation  DeepEval's conversational metrics: `stages` are its prompts, `[deepeval_conversation]` which
                metric chains them (deepeval_conversation.py)
  deepeval_geval DeepEval's ConversationalGEval: `[deepeval_geval]` criteria or evaluation_steps, evaluation_params,
                rubric, strict_mode; its prompts are DeepEval's own (templates/deepeval_geval.toml, deepeval_geval.py)

A minimal judge file (see builtin/*.toml for every kind):

    name = "polite"                       # snake_case; the file may be named anything.toml
    description = "Is the reply polite?"
    template_style = "mustache"           # {{var}}; or "format" ({var}, {{ }} for braces), "js" (${var})
    pass_threshold = 0.5                  # passed = score >= pass_threshold
    think_tokens = 0                      # > 0: a reasoning judge, thinks in <think>...</think> (N tokens) first
    [source]                              # optional attribution
    project = "me"
    [[variables]]
    name = "output"
    aliases = ["answer"]                  # other names accepted for it
    [[messages]]
    role = "user"
    template = '''Is this reply polite? <reply>{{output}}</reply>
    Answer in JSON: {"rationale": "...", "result": "yes|no"}'''
    [output]
    kind = "yes_no_json"                  # any formats.make_format kind, or result_json; plus its parameters

Builder kinds instead take, e.g., `kind = "custom_prompt"` + `prompt_template = "... [[good]] [[bad]]"`
(+ `[numeric_values]`), `kind = "instructions"` + `instructions = "... {{ outputs }} ..."` + `[result]`
(type = yes_no | bool | int | float | labels, min, max, decimals, labels), or `kind = "v1_metric"` +
`[metric]` (definition, grading_prompt, grading_context_columns, include_input, [[metric.examples]]).

`localjudge align` writes two more keys: `[[examples]]` (few-shot turns: `variables` + the `output` shown)
and `[alignment]` (score on the expected score with `pass_threshold` as the threshold; provenance).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import JudgeSpecError
from .kinds import KINDS, Kind
from .render import DictFormat, ListFormat, Style
from .sections import GEVAL_REFUSED as GEVAL_REFUSED  # the kind-specific models, re-exported where they were
from .sections import (
    AgenticMetric,
    DeepEvalConversation,
    DeepEvalGEval,
    KindSection,
    MatchMode,
    MessageTemplate,
    RagasAgent,
    ResultType,
    Stage,
    V1Metric,
    parse_section,
    section_keys,
)
from .sections import Example as Example
from .sections import GEvalParam as GEvalParam
from .sections import GEvalRubric as GEvalRubric

NAME_RE = r"[a-z][a-z0-9_]*"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Strict):
    """Where a judge comes from (attribution): project, url, license, notes."""

    project: str
    url: str = ""
    license: str = ""
    notes: str = ""


class Variable(_Strict):
    """One template variable and how its value becomes prompt text."""

    name: str
    required: bool = True
    description: str = ""
    aliases: list[str] = []  # other names accepted for this variable (e.g. question for input)
    allow_empty: bool = False  # an empty string is a valid value (else InputError)
    list_format: ListFormat = "str"
    dict_format: DictFormat = "str"
    item_tag: str = ""  # for list_format = "tag_lines"
    default: Any = None  # value when absent (optional variables)
    choices: dict[str, str] | None = None  # value -> text inserted (a switch rendered into the prompt)
    empty_text: str | None = None  # text inserted when an optional value is absent or empty
    compose: dict[str, str] | None = None  # when absent: {key: other variable} -> a dict of those present
    # on a conversation row, the derived value this variable reads instead of the one of its own name (MLflow's
    # tool-call judge reads `conversation_with_tool_calls` as its `conversation`); a column the user maps wins
    from_conversation: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_]\w*", v):
            raise ValueError(f"variable name {v!r} must be an identifier")
        return v


class Suffix(_Strict):
    """Text appended to the last message when a variable's value is a list (MLflow's expected facts)."""

    when_list: str
    text: str


class FewShot(_Strict):
    """A worked example shown before the real prompt (written by `localjudge align` from labelled rows): the
    variables its prompt is rendered with, and the answer shown for it (an assistant turn in the judge's format)."""

    variables: dict[str, Any]
    output: str
    label: str = ""  # the human label it demonstrates (provenance)
    row: int | None = None  # its row in the labels file (provenance)


class Alignment(_Strict):
    """How `localjudge align` calibrated this judge on human labels. With `score = "expected"` the judge asks for
    token probabilities, its score is the expected score at the verdict, and it passes (yes / the first answer) when
    that is >= `pass_threshold`; the rest is provenance, checked by nothing but shown by `judges show`."""

    score: Literal["expected"] = "expected"
    based_on: str = ""  # the judge it was aligned from: name and version hash
    labels_file: str = ""
    labels_sha256: str = ""
    label_column: str = "label"
    positive: str = ""  # the label value counted as positive
    split_seed: int = 0
    test_fraction: float = 0.0
    n_train: int = 0
    n_test: int = 0
    threshold: float = 0.5
    threshold_rule: str = ""
    example_rule: str = ""
    model_id: str = ""
    model_sha256: str = ""
    aligned_at: str = ""
    heldout: dict[str, Any] = {}  # held-out figures before and after, as reported


class Controls(_Strict):
    """Which of a judge's variables hold the output it judges, the context, the reference and a conversation judge's
    conversation: what negative controls swap between rows (report/controls.py); or, for a conversation judge, why it
    gets no last-turn control (`no_last_turn`). Declared in the judge file, never guessed from a variable's name; it
    changes nothing a judge sends, so it is left out of the judge's version (its cache keys)."""

    answer: str | None = None
    context: str | None = None
    reference: str | None = None
    pair: list[str] | None = None  # a pairwise judge's two answers, first then second: the same-answer control
    # a conversation judge's conversation (a value a conversation row derives from its typed conversation): the
    # last-turn control gives it another conversation's last assistant answer
    conversation: str | None = None
    # a conversation judge whose verdict does not rest on the last assistant answer: why it gets no last-turn control
    # (what the controls' summary says in place of a verdict); a sentence, not a variable
    no_last_turn: str | None = None


class JudgeSpec(_Strict):
    """A judge data file, validated: unknown keys rejected, and the keys each `kind` needs checked."""

    name: str
    description: str = ""
    version: str | None = None  # informational; Judge.version is the hash of the whole spec
    kind: Kind = "single"
    template_style: Style = "mustache"
    source: Source | None = None
    variables: list[Variable] = []
    messages: list[MessageTemplate] = []
    output: dict[str, Any] | None = None  # {kind = <format kind>, ...format parameters}
    suffixes: list[Suffix] = []
    pass_threshold: float = Field(0.5, ge=0, le=1)
    think_tokens: int = Field(0, ge=0)  # reasoning judge: think in <think>...</think> for at most N tokens, then the verdict
    neutralise: list[tuple[str, str]] = []  # extra [delimiter, replacement] pairs (see render.py)
    expressions: dict[str, str] = {}  # js templates: exact `${...}` expression -> derived variable
    # kind-specific
    item_variable: str | None = None  # per_item
    context_variable: str | None = None  # four_line
    stages: list[Stage] = []  # two_stage
    unsure_value: float = Field(0.5, ge=0, le=1)  # two_stage
    metric: V1Metric | None = None  # v1_metric
    instructions: str | None = None  # instructions
    result: ResultType | None = None  # instructions
    prompt_template: str | None = None  # custom_prompt
    match: MatchMode | None = None  # tool_call_match (judges/toolmatch.py)
    match_ordered: bool = False  # tool_call_match `mlflow_exact`: MLflow's should_consider_ordering
    numeric_values: dict[str, float] | None = None  # custom_prompt
    ragas_agent: RagasAgent | None = None  # ragas_agent
    deepeval_agentic: AgenticMetric | None = None  # deepeval_agentic
    deepeval_strict_mode: bool = False  # deepeval_agentic: DeepEval's strict_mode (a score under 1 becomes 0)
    deepeval_conversation: DeepEvalConversation | None = None  # deepeval_conversation
    deepeval_geval: DeepEvalGEval | None = None  # deepeval_geval
    # written by `localjudge align`; left out of the version hash when empty (older judges keep their versions)
    examples: list[FewShot] = []  # few-shot turns before the prompt (single-call judges)
    alignment: Alignment | None = None
    controls: Controls | None = None  # the variables negative controls swap; never part of the version

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(NAME_RE, v):
            raise ValueError(f"judge name {v!r} must be snake_case (a-z, 0-9, _), starting with a letter")
        return v

    @model_validator(mode="after")
    def _kind_fields(self) -> JudgeSpec:
        k, traits = self.kind, KINDS[self.kind]
        self.section()  # the keys the kind needs, and what ties them (sections.py: each kind's own checks)
        names = [v.name for v in self.variables]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate variable names in {names}")
        for key in ("item_variable", "context_variable"):
            v = getattr(self, key)
            if v and v not in names:
                raise ValueError(f"{key} {v!r} is not a declared variable")
        for key, v in (self.controls.model_dump(exclude={"no_last_turn"}) if self.controls else {}).items():
            for one in v if isinstance(v, list) else [v]:
                if one and one not in names:
                    raise ValueError(f"controls.{key} {one!r} is not a declared variable")
        if self.controls and self.controls.conversation and self.controls.no_last_turn:
            raise ValueError("controls.no_last_turn says why a judge gets no last-turn control: not with controls.conversation")
        pair = self.controls.pair if self.controls else None
        if pair is not None and (len(pair) != 2 or pair[0] == pair[1]):
            raise ValueError(f"controls.pair {pair!r} must name two different variables, the first answer then the second")
        for s in self.suffixes:
            if s.when_list not in names:
                raise ValueError(f"suffix refers to undeclared variable {s.when_list!r}")
        if self.examples and not traits.examples:
            raise ValueError(f"few-shot examples apply to single-call judges, not kind {k!r}")
        return self

    def section(self) -> KindSection:
        """This judge's kind section (sections.py): the file's keys its kind reads, typed and checked; a problem
        raises `ValueError` naming the key (`kind 'per_item' needs key 'item_variable'`)."""
        return parse_section({"kind": self.kind, **{key: getattr(self, key) for key in section_keys()}})


# The fields of the first judge file format: a judge's version hashes them always. A field added since is hashed
# only when it is set (not empty, not false), so adding one to the format keeps every existing judge's version, and
# with it the cache keys of every store (no list to extend: a new field is outside these sets by construction).
FIRST_SPEC_FIELDS = frozenset(
    (
        *("name", "description", "version", "kind", "template_style", "source", "variables", "messages", "output"),
        *("suffixes", "pass_threshold", "neutralise", "expressions", "item_variable", "context_variable", "stages"),
        *("unsure_value", "metric", "instructions", "result", "prompt_template", "numeric_values"),
    )
)
FIRST_VARIABLE_FIELDS = frozenset(
    (
        *("name", "required", "description", "aliases", "allow_empty", "list_format", "dict_format", "item_tag"),
        *("default", "choices", "empty_text", "compose"),
    )
)


def version_dump(spec: JudgeSpec) -> dict[str, Any]:
    """The spec as its version hashes it (`Judge.version`): its JSON dump without the fields added since the first
    format (its own and its variables') while they are empty."""
    dump = spec.model_dump(mode="json")
    dump.pop("controls", None)  # what controls swap changes no prompt: never a new version
    for key in [k for k in dump if k not in FIRST_SPEC_FIELDS and not dump[k]]:
        dump.pop(key)
    for var in dump.get("variables") or []:
        for key in [k for k in var if k not in FIRST_VARIABLE_FIELDS and not var[k]]:
            var.pop(key)
    return dump


def _loc(err: dict) -> str:
    return ".".join(str(p) for p in err.get("loc", ())) or "(top level)"


def spec_from_dict(data: dict[str, Any], origin: str = "<dict>") -> JudgeSpec:
    """Validate a parsed judge file; errors name `origin` and the offending key."""
    try:
        return JudgeSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        msg = err.get("msg", "invalid").removeprefix("Value error, ")
        more = f" (and {len(e.errors()) - 1} more problem(s))" if len(e.errors()) > 1 else ""
        raise JudgeSpecError(f"judge file {origin}: key '{_loc(dict(err))}': {msg}{more}; fix the file and retry") from None


def read_spec(path: str | Path) -> JudgeSpec:
    """Read and validate one judge TOML file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise JudgeSpecError(f"judge file {p}: cannot read it ({e.strerror}); check the path") from None
    except UnicodeDecodeError:
        raise JudgeSpecError(f"judge file {p}: not UTF-8 text; save it as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise JudgeSpecError(f"judge file {p}: invalid TOML: {e}; fix the syntax") from None
    return spec_from_dict(data, str(p))
