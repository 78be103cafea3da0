"""Dev script: write DeepEval's trace-based agentic metrics StepEfficiencyMetric and PlanAdherenceMetric as
localjudge judge files (localjudge/judges/builtin/deepeval_step_efficiency.toml and deepeval_plan_adherence.toml,
kind `deepeval_agentic`) from the installed deepeval package: each prompt is the metric's own `_get_prompt` output
with `{{...}}` placeholders where DeepEval prints its values (multimodal off). Run it again after a DeepEval
upgrade; tests/test_deepeval_trace_judges.py checks the files against the installed package, byte for byte."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scripts.catalog import last_turn_block
from scripts.catalog.make_deepeval_agentic_judges import _file, q

ROOT = Path(__file__).resolve().parents[2]

URL = "https://github.com/confident-ai/deepeval/tree/main/deepeval/metrics/"
TRACE = "{{deepeval_trace_json}}"
TASK_SCHEMA = {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}
PLAN_SCHEMA = {
    "type": "object",
    "properties": {"plan": {"type": "array", "items": {"type": "string"}, "maxItems": 8}},
    "required": ["plan"],
}
SCORE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.01},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
}


def _metric(name: str) -> Any:
    import deepeval.metrics as metrics
    from deepeval.models.base_model import DeepEvalBaseLLM

    class _Unused(DeepEvalBaseLLM):
        def __init__(self) -> None:
            super().__init__(model="unused")

        def load_model(self, *a: Any, **k: Any) -> None:
            return None

        def generate(self, *a: Any, **k: Any) -> Any:
            raise AssertionError("no call")

        async def a_generate(self, *a: Any, **k: Any) -> Any:
            raise AssertionError("no call")

        def get_model_name(self, *a: Any, **k: Any) -> str:
            return "unused"

    return getattr(metrics, name)(model=_Unused(), async_mode=False)


def _stage(name: str, template: str, schema: dict[str, Any], **out: Any) -> dict[str, Any]:
    return {"name": name, "template": template, "output": {"kind": "json_schema", "schema": json.dumps(schema), **out}}


def task_stage(metric: Any) -> dict[str, Any]:
    """StepEfficiency's task extraction (PlanAdherence borrows it, template_class="StepEfficiencyMetric")."""
    template = metric._get_prompt("extract_task_from_trace", template_class="StepEfficiencyMetric", trace_json=TRACE)
    return _stage("extract_task_from_trace", template, TASK_SCHEMA, field_tokens=96)


def stages(name: str) -> list[dict[str, Any]]:
    """The metric's calls, in DeepEval's order (measure with async_mode=False)."""
    if name == "deepeval_step_efficiency":
        m = _metric("StepEfficiencyMetric")
        score = m._get_prompt("get_execution_efficiency", task="{{deepeval_task}}", trace_json_str=TRACE)
        return [task_stage(m), _stage("get_execution_efficiency", score, SCORE_SCHEMA, field_tokens=128)]
    m = _metric("PlanAdherenceMetric")
    plan = m._get_prompt("extract_plan_from_trace", template_class="PlanAdherenceMetric", trace_json_str=TRACE)
    score = m._get_prompt(
        "evaluate_adherence",
        template_class="PlanAdherenceMetric",
        user_task="{{deepeval_task}}",
        agent_plan="{{deepeval_agent_plan}}",
        execution_trace_json=TRACE,
    )
    return [
        task_stage(m),
        _stage("extract_plan_from_trace", plan, PLAN_SCHEMA, field_tokens=48, max_tokens=512),
        _stage("evaluate_adherence", score, SCORE_SCHEMA, field_tokens=128),
    ]


ABOUT = {
    "deepeval_step_efficiency": (
        "step_efficiency",
        "DeepEval's StepEfficiencyMetric: the user's task read from the agent's trace, then a 0-1 score on how "
        "minimal the trace's steps (LLM calls, tool calls) were for it.",
        "DeepEval 4.3.1 StepEfficiencyMetric: the extract_task_from_trace and get_execution_efficiency templates "
        "verbatim (multimodal off); score = the model's score (0 under strict_mode when below 1).",
        "step_efficiency/templates/get_execution_efficiency.txt",
    ),
    "deepeval_plan_adherence": (
        "plan_adherence",
        "DeepEval's PlanAdherenceMetric: the user's task and the plan the agent stated, read from its trace, then "
        "a 0-1 score on how exactly the trace followed the plan (1 with no plan in the trace).",
        "DeepEval 4.3.1 PlanAdherenceMetric: StepEfficiency's extract_task_from_trace, then extract_plan_from_trace "
        "and evaluate_adherence verbatim (multimodal off); no plan: 1.0 with DeepEval's reason and no third call.",
        "plan_adherence/templates/evaluate_adherence.txt",
    ),
}


def toml(name: str) -> str:
    """The judge file `name` as the installed package's templates make it."""
    metric, description, notes, url = ABOUT[name]
    header = [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);",
        "# written by scripts/catalog/make_deepeval_trace_judges.py from the installed deepeval package.",
        f'name = "{name}"',
        "description = " + q(description),
        'version = "1"',
        'kind = "deepeval_agentic"',
        'template_style = "mustache"',
        "pass_threshold = 0.5",
        f'deepeval_agentic = "{metric}"',
        "[source]",
        'project = "DeepEval"',
        'license = "Apache-2.0"',
        f'url = "{URL}{url}"',
        "notes = " + q(notes),
        "[[variables]]",
        'name = "deepeval_trace_json"',
        "description = "
        + q(
            "the conversation as the trace dict DeepEval builds for its agent run, printed as its metrics print it "
            "(localjudge.conversations.deepeval_trace)"
        ),
    ]
    return _file(header, stages(name)) + last_turn_block(name)  # why no last-turn control (scripts/catalog)


def main() -> None:
    for name in ABOUT:
        path = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        path.write_text(toml(name), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
