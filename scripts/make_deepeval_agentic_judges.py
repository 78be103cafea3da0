"""Dev script: write DeepEval's LLM-judged agentic metric ArgumentCorrectnessMetric as a localjudge judge file
(localjudge/judges/builtin/deepeval_argument_correctness.toml, kind `deepeval_agentic`) from the installed deepeval
package: each prompt is the package's own template rendered with `{{...}}` placeholders where DeepEval prints its
values (multimodal off). Run it again after a DeepEval upgrade; tests/test_deepeval_agentic_judges.py checks the
file against the installed package's prompts, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
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


def q(s: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(s, ensure_ascii=False)


def toml() -> str:
    lines = [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);",
        "# written by scripts/make_deepeval_agentic_judges.py from the installed deepeval package.",
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
    for s in stages():
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
    path = ROOT / "localjudge" / "judges" / "builtin" / "deepeval_argument_correctness.toml"
    path.write_text(toml(), encoding="utf-8")
    print(path)


if __name__ == "__main__":
    main()
