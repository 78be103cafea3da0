"""Compile a `JudgeSpec` into a call plan: messages to render, variables, and output formats.

Plain kinds (single, per_item, four_line, two_stage) use their messages as written. Three kinds are
built from MLflow's own texts (templates/mlflow.toml, verbatim, see NOTICE):

  * v1_metric – MLflow's `make_genai_metric`: the v1 grading template (with or without the input),
    the metric name, definition, rubric and few-shot examples filled in once (MLflow's
    `partial_fill`), leaving `{input}`, `{output}` and `{grading_context_columns}` for each row.
    Examples print as MLflow's `EvaluationExample.__str__`; grading context columns as MLflow's
    `_format_args_string` ("Additional information used by the model:\\nkey: ..\\nvalue:\\n..").
  * instructions – MLflow's field-based `InstructionsJudge`: system message = JUDGE_BASE_PROMPT +
    "\\n\\nYour task: <instructions>." + MLflow's `add_output_format_instructions` (rationale listed
    first, as with `generate_rationale_first=True`, because the constraint writes the rationale
    first); the instructions keep their `{{ inputs }}` text. User message = one line per variable
    used, in order of appearance, `"<name>: <json.dumps(value, indent=2)>"`.
  * custom_prompt – MLflow's `custom_prompt_judge`: `[[label]]` choices found with MLflow's pattern,
    brackets removed, the rendered prompt stripped, then MLflow's JSON answer suffix appended.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TypeVar

from ..errors import InputError
from ..formats import OutputFormat, ResultJSON, make_format
from .kinds import KINDS
from .render import Style, TemplateError, placeholders, render, tags_in
from .sections import (
    CustomPromptSection,
    DeepEvalGEvalSection,
    InstructionsSection,
    MessagesSection,
    ResultType,
    Section,
    ToolCallMatchSection,
    V1Metric,
    V1MetricSection,
    typed_section,
)
from .spec import JudgeSpec, MessageTemplate, Variable

CHOICE_PATTERN = re.compile(r"\[\[([\w ]+)\]\]")  # MLflow's custom_prompt_judge _CHOICE_PATTERN
INSTRUCTION_VARIABLES = ("inputs", "outputs", "expectations")


@functools.cache
def mlflow_texts() -> dict[str, Any]:
    """The fixed MLflow texts (templates/mlflow.toml)."""
    return tomllib.loads(resources.files("localjudge.judges").joinpath("templates/mlflow.toml").read_text("utf-8"))


def build_format(output: dict[str, Any]) -> OutputFormat:
    """An output format from a spec's `output` table: {kind = ..., parameters...}."""
    params = dict(output)
    kind = params.pop("kind", None)
    if not kind:
        raise InputError("output table needs 'kind' (e.g. yes_no_json, score_json, score_lines, choice)")
    return make_format(kind, **params)


@dataclass
class Msg:
    """A message to render: `literal` messages are inserted as they are (no placeholders)."""

    role: str
    template: str
    literal: bool = False
    strip: bool = False  # strip the rendered text (MLflow's custom prompt judge)
    append: str = ""  # literal text appended after rendering


@dataclass
class Plan:
    """What a judge does per row: the stages' messages and formats, and how to render them."""

    style: Style
    variables: list[Variable]
    stages: list[list[Msg]]
    formats: list[OutputFormat | None]  # None: built per call (two_stage verdicts)
    derived: set[str] = field(default_factory=set)  # placeholders computed by the judge, not given
    tags: set[str] = field(default_factory=set)  # the prompt's own XML-style tags (for neutralise)
    labels: list[str] = field(default_factory=list)  # custom prompt choices
    numeric_values: dict[str, float] | None = None
    context_columns: list[str] = field(default_factory=list)  # v1 metrics' grading context columns


def _msgs(templates: list[MessageTemplate]) -> list[Msg]:
    return [Msg(m.role, m.template) for m in templates]


class SpecKeyError(InputError):
    """A spec problem found while compiling, with the key it is about."""

    def __init__(self, key: str, message: str):
        super().__init__(f"key '{key}': {message}")
        self.key = key


def _at(key: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except SpecKeyError:
        raise
    except (InputError, TemplateError) as e:
        raise SpecKeyError(key, str(e)) from None


def compile_spec(spec: JudgeSpec, section: Section) -> Plan:
    """Build the plan of `spec` (its kind's keys: `section`) and check it: every placeholder is declared, every format
    can be constrained. The plan comes from the kind's builder: `BUILDERS` for a prompt built from one spec key
    (`KindTraits.built_from`, its errors named after that key), else `PLANS` by call shape.

    Problems raise `SpecKeyError` naming the spec key they come from.
    """
    traits = KINDS[spec.kind]
    if traits.built_from is not None:
        plan = _at(traits.built_from, BUILDERS[traits.built_from], spec, section)
    else:
        plan = PLANS.get(traits.calls, _messages)(spec, section)
    for i, f in enumerate(plan.formats):
        if f is not None:  # a format that cannot be written as a constraint fails here, at load time
            _at("output" if len(plan.formats) == 1 else f"stages.{i}.output", f.constraint)
    declared = {v.name for v in plan.variables} | plan.derived
    for si, stage in enumerate(plan.stages):
        for mi, m in enumerate(stage):
            if m.literal:
                continue
            key = f"stages.{si}.messages.{mi}.template" if spec.stages else f"messages.{mi}.template"
            for name in _at(key, placeholders, m.template, plan.style, spec.expressions):
                if name not in declared:
                    raise SpecKeyError(key, f"placeholder {name!r} is not a declared variable; add it to [[variables]]")
    plan.tags |= tags_in(m.template for stage in plan.stages for m in stage)
    plan.tags |= {v.item_tag for v in plan.variables if v.item_tag}
    return plan


# ------------------------------------------------------------------- kinds judged with the file's own messages


def _messages(spec: JudgeSpec, section: Section) -> Plan:
    """One call (or one per item) with the file's `messages` and `output`."""
    sec = typed_section(section, MessagesSection, spec.kind)
    return Plan(spec.template_style, list(spec.variables), [_msgs(sec.messages)], [_at("output", build_format, sec.output)])


def _two_stage(spec: JudgeSpec, section: Section) -> Plan:
    """Statements (stage 0, `statements` unless the file says otherwise), then a verdict list whose `n` and
    `unsure_value` are set per call (stage 1: only its field_tokens may be given)."""
    f1 = _at("stages.0.output", build_format, spec.stages[0].output or {"kind": "statements"})
    plan = Plan(
        spec.template_style,
        list(spec.variables),
        [_msgs(s.messages) for s in spec.stages],
        [f1, None],
        derived={"statements", *spec.expressions.values()},
    )
    out2 = dict(spec.stages[1].output or {})
    out2.pop("kind", None)
    if set(out2) - {"field_tokens"}:
        raise SpecKeyError("stages.1.output", "takes only field_tokens; n and unsure_value are set per call")
    _at(
        "stages.1.output",
        lambda: build_format({"kind": "verdict_list", "n": 1, "unsure_value": spec.unsure_value, **out2}).regex(),
    )
    return plan


def _staged(derived: Callable[[], set[str]]) -> Build:
    """The plan of a several-call program: the file's stages, each with its own output, and the placeholders the
    program computes between calls (`derived()`, read when a judge is compiled: the programs' modules import the
    store's result model, so they are imported lazily)."""

    def build(spec: JudgeSpec, section: Section) -> Plan:
        formats: list[OutputFormat | None] = [
            _at(f"stages.{i}.output", build_format, s.output or {}) for i, s in enumerate(spec.stages)
        ]
        return Plan(spec.template_style, list(spec.variables), [_msgs(s.messages) for s in spec.stages], formats, derived())

    return build


def _conversation_derived() -> set[str]:
    from .deepeval_conversation import FILLS

    return set(FILLS)


def _agentic_derived() -> set[str]:
    from .deepeval_agentic import FILLS

    return set(FILLS)


# ------------------------------------------------------------------------------------- v1 metrics


def example_text(ex: dict[str, Any], include_input: bool) -> str:
    """MLflow's EvaluationExample.__str__ (a part is left out when its value is None)."""
    t = mlflow_texts()["v1"]
    ctx = ex.get("grading_context")
    if isinstance(ctx, dict):
        ctx = t["context_separator"].join(
            render(t["context_item"], "format", {"key": k, "value": str(v)}) for k, v in ctx.items()
        )
    vals = {
        "input": ex.get("input") if include_input else None,
        "output": ex["output"],
        "grading_context": ctx,
        "score": str(ex["score"]),
        "justification": ex["justification"],
    }
    out = []
    for part, needs in (
        ("example_input", "input"),
        ("example_output", "output"),
        ("example_context", "grading_context"),
        ("example_score", "score"),
    ):
        if vals[needs] is None:
            continue
        out.append(render(t[part], "format", {k: str(v) for k, v in vals.items() if v is not None}))
    return "".join(out)


def grading_context_text(columns: list[str], values: dict[str, Any]) -> str:
    """MLflow's _format_args_string: the grading context columns of one row."""
    t = mlflow_texts()["v1"]
    if not columns:
        return ""
    items = [render(t["context_item"], "format", {"key": c, "value": str(values[c])}) for c in columns]
    return t["context_header"] + t["context_separator"].join(items)


def _v1(spec: JudgeSpec, sec: V1MetricSection) -> Plan:
    m = sec.metric
    t = mlflow_texts()["v1"]
    for i, ex in enumerate(m.examples):
        ctx = ex.grading_context
        keys = [] if ctx is None else list(ctx) if isinstance(ctx, dict) else m.grading_context_columns[:1]
        if (ctx is not None or m.grading_context_columns) and sorted(keys) != sorted(m.grading_context_columns):
            raise SpecKeyError(
                f"metric.examples.{i}.grading_context",
                f"has {keys}; it must give exactly grading_context_columns {m.grading_context_columns}",
            )
        if m.include_input and ex.input is None:
            raise SpecKeyError(f"metric.examples.{i}.input", "missing (include_input is true)")
    exs = []
    for ex in m.examples:
        d = ex.model_dump()
        if isinstance(ex.grading_context, str):  # MLflow: a string context belongs to the first column
            d["grading_context"] = {m.grading_context_columns[0]: ex.grading_context}
        exs.append(example_text(d, m.include_input))
    examples = "" if not exs else t["examples_header"] + t["examples_separator"].join(exs)
    template = render(
        t["with_input"] if m.include_input else t["without_input"],
        "format",
        {"name": m.name or spec.name, "definition": m.definition, "grading_prompt": m.grading_prompt, "examples": examples},
        partial=True,
    )
    variables = list(spec.variables) or _v1_variables(m)
    return Plan(
        "format",
        variables,
        [[Msg("user", template)]],
        [make_format("score_lines", min=m.min, max=m.max)],
        derived={"grading_context_columns"},
        context_columns=list(m.grading_context_columns),
    )


def _v1_variables(m: V1Metric) -> list[Variable]:
    out = [Variable(name="input", description="the input sent to the model", aliases=["question"])] if m.include_input else []
    out.append(Variable(name="output", description="the model's output", aliases=["answer"]))
    out += [Variable(name=c, description="grading context column") for c in m.grading_context_columns]
    return out


# ------------------------------------------------------------------------------- instructions judge


def instruction_format(r: ResultType | None) -> OutputFormat:
    """The output format of an instructions judge from its `[result]`: `yes_no_json` (the default), a choice
    with rationale for labels, else `result_json` (bool, int or float)."""
    if r is None or r.type == "yes_no":
        return make_format("yes_no_json")
    if r.type == "labels":
        return make_format("choice", labels=r.labels, values=r.label_values, rationale=True)
    return ResultJSON(type=r.type, min=r.min, max=r.max, decimals=r.decimals)


def _instructions(spec: JudgeSpec, sec: InstructionsSection) -> Plan:
    text = sec.instructions
    t = mlflow_texts()["instructions"]
    used = placeholders(text, "mustache")
    bad = [u for u in used if u not in INSTRUCTION_VARIABLES]
    if bad:
        raise InputError(
            f"instructions use unsupported variables {bad}; only {{{{ inputs }}}}, {{{{ outputs }}}}, "
            "{{ expectations }} are allowed"
        )
    if not used:
        raise InputError("instructions must contain at least one variable: {{ inputs }}, {{ outputs }} or {{ expectations }}")
    fmt = _at("result", instruction_format, sec.result)
    fields = [("rationale", t["rationale_description"]), ("result", t["result_description"])]
    json_format = "{\n" + ",\n".join(render(t["field_line"], "format", {"name": n, "description": d}) for n, d in fields) + "\n}"
    system = render(t["system"], "mustache", {"instructions": text})
    system += render(t["output_format"], "format", {"json_format": json_format})
    variables = [
        Variable(name=u, description=f"the {u} to evaluate", list_format="json", dict_format="json", allow_empty=True)
        for u in used
    ]
    return Plan(
        "mustache",
        variables,
        [[Msg("system", system, literal=True), Msg("user", "{{__fields__}}")]],
        [fmt],
        derived={"__fields__"},
    )


def instruction_fields_text(names: list[str], values: dict[str, str]) -> str:
    """The user message of an instructions judge: a `name: value` line per field of `names` that has a value,
    or MLflow's fallback text when none has."""
    t = mlflow_texts()["instructions"]
    parts = [render(t["field_value"], "format", {"name": n, "value": values[n]}) for n in names if n in values]
    return "\n".join(parts) if parts else t["empty_user_message"]


# ------------------------------------------------------------------------------ custom prompt judge


def _custom(spec: JudgeSpec, sec: CustomPromptSection) -> Plan:
    tpl = sec.prompt_template
    labels: list[str] = []
    for c in CHOICE_PATTERN.findall(tpl):
        if c not in labels:
            labels.append(c)
    if not labels:
        raise InputError("prompt_template must include choices written as [[CHOICE_NAME]]; none found")
    if len(labels) < 2:
        raise InputError(f"prompt_template offers one choice {labels}; give at least two [[choices]]")
    nv = sec.numeric_values
    values = None
    if nv is not None:
        if sorted(nv) != sorted(labels):
            raise SpecKeyError(
                "numeric_values",
                f"numeric_values keys {sorted(nv)} must match the [[choices]] {sorted(labels)}; "
                "give a value for every choice or for none",
            )
        lo, hi = min(nv.values()), max(nv.values())
        values = {k: 1.0 if hi == lo else (float(x) - lo) / (hi - lo) for k, x in nv.items()}
    fmt = make_format("choice", labels=labels, values=values, rationale=True)
    body = CHOICE_PATTERN.sub(lambda m: m.group(1), tpl)
    variables = list(spec.variables) or [Variable(name=n) for n in placeholders(body, "mustache")]
    suffix = "\n\n" + mlflow_texts()["custom_prompt"]["suffix"]
    return Plan(
        "mustache",
        variables,
        [[Msg("user", body, strip=True, append=suffix)]],
        [fmt],
        labels=labels,
        numeric_values=dict(nv) if nv else None,
    )


# ------------------------------------------------------------------------------ tool-call match judge


def _match(spec: JudgeSpec, sec: ToolCallMatchSection) -> Plan:
    """A model-free judge of one tool call (judges/toolmatch.py): its one message only shows what is compared
    (it is never sent; it is the cache key's prompt); its score is a float in [0, 1]."""
    if sec.match == "mlflow_exact":  # MLflow's exact mode judges the whole call list of a conversation
        variables = [
            Variable(name="tool_calls", description="the calls the assistant made, in order: a JSON list"),
            Variable(name="expected_tool_calls", description="the calls expected: a JSON list"),
        ]
        text = f"match: mlflow_exact (ordered: {sec.match_ordered})\ncalls: {{{{tool_calls}}}}\nexpected: {{{{expected_tool_calls}}}}"
        return Plan("mustache", variables, [[Msg("user", text)]], [ResultJSON(type="float", min=0, max=1, decimals=3)])
    variables = [
        Variable(name="tool_call", description="the call judged: {name, arguments} as JSON text"),
        Variable(name="tool_call_index", description="its 0-based index among the conversation's calls"),
        Variable(name="expected_tool_calls", description="the calls expected, in order: a JSON list"),
    ]
    text = f"match: {sec.match}\ntool call {{{{tool_call_index}}}}: {{{{tool_call}}}}\nexpected: {{{{expected_tool_calls}}}}"
    return Plan("mustache", variables, [[Msg("user", text)]], [ResultJSON(type="float", min=0, max=1, decimals=3)])


def _geval(spec: JudgeSpec, sec: DeepEvalGEvalSection) -> Plan:
    """DeepEval's ConversationalGEval (judges/deepeval_geval.py, imported lazily: it imports the store's result
    model): its two prompts, each constrained to its pydantic model's schema."""
    from .deepeval_geval import FILLS, plan_parts

    variables, prompts, schemas = plan_parts(sec.deepeval_geval)
    formats: list[OutputFormat | None] = [build_format({"kind": "json_schema", "schema": s, "field_tokens": 64}) for s in schemas]
    return Plan("mustache", variables, [[Msg("user", p)] for p in prompts], formats, derived=set(FILLS))


S = TypeVar("S", bound=Section)
Build = Callable[[JudgeSpec, Section], Plan]


def _built(want: type[S], build: Callable[[JudgeSpec, S], Plan]) -> Build:
    """A builder that reads its kind's section typed (`want`), checked once here."""
    return lambda spec, section: build(spec, typed_section(section, want, spec.kind))


# the plan of each call shape whose judges are written as messages in their file (`KindTraits.built_from` None); a
# call shape not here (a plugin's, `programs.register_program`) is judged with the file's own messages and output
PLANS: dict[str, Build] = {
    "one": _messages,
    "per_item": _messages,
    "two_stage": _two_stage,
    "ragas_agent": _staged(lambda: {"stage_input"}),
    "deepeval_conversation": _staged(_conversation_derived),
    "deepeval_agentic": _staged(_agentic_derived),
}

# the prompt builder of each kind whose prompt is built from one spec key (`KindTraits.built_from`), with the section
# type it reads
BUILDERS: dict[str, Build] = {
    "metric": _built(V1MetricSection, _v1),
    "instructions": _built(InstructionsSection, _instructions),
    "prompt_template": _built(CustomPromptSection, _custom),
    "match": _built(ToolCallMatchSection, _match),
    "deepeval_geval": _built(DeepEvalGEvalSection, _geval),
}
