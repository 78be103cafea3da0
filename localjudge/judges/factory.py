"""Python equivalents of the builder judge files: `make_metric`, `make_instructions_judge`,
`make_custom_prompt_judge`, `make_conversational_geval_judge`. Each returns the same `Judge` a data file with that
content would give.
"""

from __future__ import annotations

from typing import Any

from .judge import Judge
from .spec import spec_from_dict


def make_metric(
    name: str,
    definition: str,
    grading_prompt: str,
    examples: list[dict[str, Any]] | None = None,
    grading_context_columns: list[str] | None = None,
    include_input: bool = True,
    *,
    description: str = "",
    pass_threshold: float = 0.75,
    min: int = 1,
    max: int = 5,
) -> Judge:
    """MLflow's `make_genai_metric` idea: a 1-5 `score:`/`justification:` judge from a definition, a rubric
    and few-shot examples (dicts with input, output, score, justification, grading_context)."""
    data: dict[str, Any] = {
        "name": name,
        "kind": "v1_metric",
        "description": description or f"MLflow v1-style metric {name}",
        "pass_threshold": pass_threshold,
        "metric": {
            "definition": definition,
            "grading_prompt": grading_prompt,
            "include_input": include_input,
            "grading_context_columns": list(grading_context_columns or []),
            "examples": list(examples or []),
            "min": min,
            "max": max,
        },
    }
    return Judge(spec_from_dict(data, f"make_metric({name!r})"), f"make_metric({name!r})")


def make_instructions_judge(
    name: str,
    instructions: str,
    result_type: str = "yes_no",
    *,
    min: float | None = None,
    max: float | None = None,
    decimals: int = 2,
    labels: list[str] | None = None,
    label_values: dict[str, float] | None = None,
    description: str = "",
    pass_threshold: float = 0.5,
) -> Judge:
    """MLflow's field-based instructions judge: `instructions` use {{ inputs }}, {{ outputs }},
    {{ expectations }}; result_type is yes_no, bool, int (min..max), float (min..max) or labels."""
    result: dict[str, Any] = {"type": result_type, "decimals": decimals, "labels": list(labels or [])}
    if min is not None:
        result["min"] = min
    if max is not None:
        result["max"] = max
    if label_values is not None:
        result["label_values"] = label_values
    data = {
        "name": name,
        "kind": "instructions",
        "description": description or f"instructions judge {name}",
        "instructions": instructions,
        "result": result,
        "pass_threshold": pass_threshold,
    }
    return Judge(spec_from_dict(data, f"make_instructions_judge({name!r})"), f"make_instructions_judge({name!r})")


def make_custom_prompt_judge(
    name: str,
    prompt_template: str,
    numeric_values: dict[str, float] | None = None,
    *,
    description: str = "",
    pass_threshold: float = 0.5,
) -> Judge:
    """MLflow's custom prompt judge: {{variables}} and [[label]] choices; optional numeric value per label
    (all labels or none; the score is the value rescaled to [0, 1] over the given values)."""
    data: dict[str, Any] = {
        "name": name,
        "kind": "custom_prompt",
        "description": description or f"custom prompt judge {name}",
        "prompt_template": prompt_template,
        "pass_threshold": pass_threshold,
    }
    if numeric_values is not None:
        data["numeric_values"] = numeric_values
    return Judge(spec_from_dict(data, f"make_custom_prompt_judge({name!r})"), f"make_custom_prompt_judge({name!r})")


def make_conversational_geval_judge(
    name: str,
    criteria: str | None = None,
    evaluation_steps: list[str] | None = None,
    evaluation_params: list[str] | None = None,
    rubric: list[dict[str, Any]] | None = None,
    *,
    strict_mode: bool = False,
    description: str = "",
    pass_threshold: float = 0.5,
) -> Judge:
    """DeepEval's `ConversationalGEval(name, criteria | evaluation_steps, evaluation_params, rubric, strict_mode)`
    as a judge (kind `deepeval_geval`): `evaluation_params` among content, role, scenario, expected_outcome,
    retrieval_context, tools_called (content and role always shown; default both); `rubric` a list of
    {score_range: (lo, hi), expected_outcome}.
    It judges a conversation's `deepeval_turns` (`deepeval_rag_turns` / `deepeval_tool_turns` with
    retrieval_context / tools_called; give it `--conversation` rows or a messages column)."""
    cfg: dict[str, Any] = {"strict_mode": strict_mode}
    if criteria is not None:
        cfg["criteria"] = criteria
    if evaluation_steps is not None:
        cfg["evaluation_steps"] = list(evaluation_steps)
    if evaluation_params is not None:
        cfg["evaluation_params"] = list(evaluation_params)
    if rubric is not None:
        cfg["rubric"] = [dict(r) for r in rubric]
    data: dict[str, Any] = {
        "name": name,
        "kind": "deepeval_geval",
        "description": description or f"DeepEval ConversationalGEval judge {name}",
        "pass_threshold": pass_threshold,
        "deepeval_geval": cfg,
    }
    origin = f"make_conversational_geval_judge({name!r})"
    return Judge(spec_from_dict(data, origin), origin)
