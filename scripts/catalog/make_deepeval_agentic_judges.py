"""Dev script: write DeepEval's LLM-judged agentic metrics ArgumentCorrectnessMetric and TaskCompletionMetric as
localjudge judge files (localjudge/judges/builtin/deepeval_argument_correctness.toml and
deepeval_task_completion.toml, kind `deepeval_agentic`) from the installed deepeval package: each prompt is the package's own template rendered with `{{...}}` placeholders where DeepEval prints its
values (multimodal off). Run it again after a DeepEval upgrade; tests/test_deepeval_agentic_judges.py and
tests/test_deepeval_task_completion.py check the files against the installed package's prompts, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scripts.catalog import NO_LAST_TURN, controls_block

ROOT = Path(__file__).resolve().parents[2]
URL = "https://github.com/confident-ai/deepeval/tree/main/deepeval/metrics/argument_correctness/templates/"
VERDICTS_SCHEMA = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"verdict": {"enum": ["yes", "no"]}, "reason": {"type": "string"}},
                "required": ["verdict", "reason"],
            },
        }
    },
    "required": ["verdicts"],
}
REASON_SCHEMA = {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}


def stages() -> list[dict[str, Any]]:
    """The metric's two calls: the verdicts (one per tool call), then the reason for the score."""
    from deepeval.metrics.argument_correctness.argument_correctness import ArgumentCorrectnessTemplate as T

    verdicts = T.generate_verdicts(
        input="{{deepeval_input}}", stringified_tools_called="{{deepeval_tools_called}}", multimodal=False
    )
    reason = T.generate_reason(
        incorrect_tool_calls_reasons="{{incorrect_tool_calls_reasons}}",
        input="{{deepeval_input}}",
        score="{{score}}",
        multimodal=False,
    )
    return [
        {
            "name": "generate_verdicts",
            "template": verdicts,
            "output": {"kind": "json_schema", "schema": json.dumps(VERDICTS_SCHEMA), "field_tokens": 64, "max_tokens": 512},
        },
        {
            "name": "generate_reason",
            "template": reason,
            "output": {"kind": "json_schema", "schema": json.dumps(REASON_SCHEMA), "field_tokens": 96},
        },
    ]


TC_URL = "https://github.com/confident-ai/deepeval/tree/main/deepeval/metrics/task_completion/templates/"
TASK_SCHEMA = {
    "type": "object",
    "properties": {"task": {"type": "string"}, "outcome": {"type": "string"}},
    "required": ["task", "outcome"],
}
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.01},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
}


def task_completion_stages() -> list[dict[str, Any]]:
    """TaskCompletionMetric's two calls without a trace: the task and outcome, then the verdict on them."""
    from deepeval.metrics.task_completion.task_completion import TaskCompletionTemplate as T

    extract = T.extract_goal_and_outcome(
        input="{{deepeval_input}}",
        actual_output="{{deepeval_actual_output}}",
        tools_called_formatted="{{deepeval_tools_called_json}}",
        multimodal=False,
        strict=True,
    )
    verdict = T.generate_verdict(task="{{deepeval_task}}", actual_outcome="{{deepeval_outcome}}", multimodal=False, strict=True)
    return [
        {
            "name": "extract_goal_and_outcome",
            "template": extract,
            "output": {"kind": "json_schema", "schema": json.dumps(TASK_SCHEMA), "field_tokens": 96},
        },
        {
            "name": "generate_verdict",
            "template": verdict,
            "output": {"kind": "json_schema", "schema": json.dumps(VERDICT_SCHEMA), "field_tokens": 96},
        },
    ]


def task_completion_header() -> list[str]:
    return [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);",
        "# written by scripts/catalog/make_deepeval_agentic_judges.py from the installed deepeval package.",
        'name = "deepeval_task_completion"',
        "description = "
        + q(
            "DeepEval's TaskCompletionMetric: the task the user wanted and the outcome the agent reached (from the "
            "input, the tool calls and the final response), then a 0-1 verdict on how well the outcome achieves it."
        ),
        'version = "1"',
        'kind = "deepeval_agentic"',
        'template_style = "mustache"',
        "pass_threshold = 0.5",
        'deepeval_agentic = "task_completion"',
        "[source]",
        'project = "DeepEval"',
        'license = "Apache-2.0"',
        f'url = "{TC_URL}extract_goal_and_outcome.txt"',
        "notes = "
        + q(
            "DeepEval 4.3.1 TaskCompletionMetric without a trace: the extract_goal_and_outcome and generate_verdict "
            "templates verbatim; score = the verdict (0 under strict_mode when below 1)."
        ),
        "[[variables]]",
        'name = "deepeval_input"',
        "description = " + q("the test case's input: the user turns (localjudge.conversations.deepeval_case)"),
        "[[variables]]",
        'name = "deepeval_actual_output"',
        "description = " + q("the test case's actual_output: the last assistant message"),
        "allow_empty = true",
        "[[variables]]",
        'name = "deepeval_tools_called_json"',
        "description = "
        + q("the tool calls (with their results as output) as DeepEval's print_tools_called prints them, empty when none"),
        "allow_empty = true",
    ]


def q(s: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(s, ensure_ascii=False)


def toml(name: str = "deepeval_argument_correctness") -> str:
    """The judge file `name` as the installed package's templates make it."""
    if name == "deepeval_task_completion":
        return _file(task_completion_header(), task_completion_stages()) + controls_block(
            "deepeval_actual_output", no_last_turn=NO_LAST_TURN[name]
        )
    lines = [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);",
        "# written by scripts/catalog/make_deepeval_agentic_judges.py from the installed deepeval package.",
        'name = "deepeval_argument_correctness"',
        "description = "
        + q(
            "DeepEval's ArgumentCorrectnessMetric: a yes/no verdict per tool call on whether its arguments address the "
            "user's input; score = the fraction of yes (1 with no tool calls). Per call with --granularity tool_call."
        ),
        'version = "1"',
        'kind = "deepeval_agentic"',
        'template_style = "mustache"',
        "pass_threshold = 0.5",
        'deepeval_agentic = "argument_correctness"',
        "[source]",
        'project = "DeepEval"',
        'license = "Apache-2.0"',
        f'url = "{URL}generate_verdicts.txt"',
        "notes = "
        + q(
            "DeepEval 4.3.1 ArgumentCorrectnessMetric: the generate_verdicts and generate_reason templates verbatim "
            "(multimodal off); score = fraction of 'yes' verdicts (score_qag_verdicts), no tool calls: 1.0 and no call."
        ),
        "[[variables]]",
        'name = "deepeval_input"',
        "description = "
        + q("the test case's input: the user turns before the (last) tool call (localjudge.conversations.deepeval_case)"),
        "[[variables]]",
        'name = "deepeval_tools_called"',
        "description = " + q("the tool calls as DeepEval prints a list of ToolCall (repr), [] when none"),
    ]
    return _file(lines, stages())


def _file(header: list[str], stage_list: list[dict[str, Any]]) -> str:
    lines = list(header)
    for s in stage_list:
        assert "'''" not in s["template"]
        lines += [
            "[[stages]]",
            f'name = "{s["name"]}"',
            "[[stages.messages]]",
            'role = "user"',
            "template = " + q(s["template"]),
            "[stages.output]",
        ]
        lines += [f"{k} = {q(v) if isinstance(v, str) else v}" for k, v in s["output"].items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    for name in ("deepeval_argument_correctness", "deepeval_task_completion"):
        path = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        path.write_text(toml(name), encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
