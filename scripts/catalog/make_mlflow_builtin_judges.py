"""Dev script: write MLflow 3.17's remaining built-in judges as localjudge judge files
(localjudge/judges/builtin/<name>.toml), from the installed mlflow package:

* `tool_call_correctness` (ground-truth-free mode, MLflow's default) and `tool_call_efficiency`: the one user
  message `mlflow.genai.judges.prompts.<name>.get_prompt` builds, with `{{request}}`, `{{available_tools}}`,
  `{{tools_called}}` left for localjudge to fill (rendered as MLflow renders them:
  localjudge.conversations.render.tool_calls_text / available_tools_text);
* `tool_call_correctness_expected`: ToolCallCorrectness given expected calls with arguments (fuzzy mode, order
  ignored: MLflow's defaults), the same `get_prompt` with `{{expected_calls}}` too (rendered as MLflow renders it:
  localjudge.conversations.render.expected_calls_text);
* `completeness`, `fluency`, `summarization`: the system and user messages of the `InstructionsJudge` each
  scorer builds (`_build_system_message`, `_build_user_message`), values JSON-dumped as MLflow dumps them.

Run it again after an MLflow upgrade; tests/test_mlflow_builtin_judges_golden.py checks the files against the
installed package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scripts.catalog import controls_block

ROOT = Path(__file__).resolve().parents[2]
BASE = "https://github.com/mlflow/mlflow/blob/master/mlflow/genai/judges/prompts/"
YES_NO = {"kind": "yes_no_json", "field_tokens": 96}
TOOL_VARIABLES = [
    ("request", "the user's request", ["input", "question", "inputs"]),
    ("tools_called", "the calls made, as MLflow formats them (localjudge.conversations.tool_calls_text)", []),
    ("available_tools", "the tools offered, as MLflow formats them (localjudge.conversations.available_tools_text)", []),
]
FIELD_ALIASES = {"inputs": ["input", "question", "request"], "outputs": ["output", "answer", "response"]}
SENTINELS = {"request": "@@REQUEST@@", "tools_called": "@@TOOLS_CALLED@@", "available_tools": "@@AVAILABLE_TOOLS@@"}
EXPECTED_VARIABLE = (
    "expected_calls",
    "the expected calls, as MLflow formats them (localjudge.conversations.expected_calls_text)",
    [],
)


def tool_prompt(name: str, expected: bool = False) -> str:
    """The package's prompt for `name` with its values as mustache placeholders; with `expected`, the prompt
    ToolCallCorrectness builds given expected calls with arguments (`{{expected_calls}}` too)."""
    import importlib
    from unittest import mock

    mod = importlib.import_module(f"mlflow.genai.judges.prompts.{name}")
    sentinels = dict(SENTINELS, **({"expected_calls": "@@EXPECTED_CALLS@@"} if expected else {}))
    # get_prompt formats the lists with format_tools_called / format_available_tools (and _format_expected_calls):
    # stand in the sentinels
    with (
        mock.patch.object(mod, "format_tools_called", lambda _: SENTINELS["tools_called"]),
        mock.patch.object(mod, "format_available_tools", lambda _: SENTINELS["available_tools"]),
    ):
        if expected:
            with mock.patch.object(mod, "_format_expected_calls", lambda *_: sentinels["expected_calls"]):
                text = mod.get_prompt(
                    request=SENTINELS["request"], tools_called=[], available_tools=[], expected_calls=[], include_arguments=True
                )
        else:
            text = mod.get_prompt(request=SENTINELS["request"], tools_called=[], available_tools=[])
    for var, s in sentinels.items():
        assert text.count(s) == 1, (name, var)
        text = text.replace(s, "{{" + var + "}}")
    return text


def instructions_judge(scorer_cls: type):
    """MLflow's InstructionsJudge for a field-based built-in scorer (an OpenAI model: the plain instructions)."""
    return scorer_cls(model="openai:/gpt-4o-mini")._get_judge()


def header(name: str, description: str, style: str, url: str, notes: str) -> list[str]:
    return [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);",
        "# written by scripts/catalog/make_mlflow_builtin_judges.py from the installed mlflow package.",
        f"name = {name!r}",
        f"description = {json.dumps(description)}",
        'version = "1"',
        "kind = 'single'",
        f"template_style = {style!r}",
        "pass_threshold = 0.5",
        "[source]",
        'project = "MLflow"',
        'license = "Apache-2.0"',
        f"url = {url!r}",
        f"notes = {json.dumps(notes)}",
    ]


def tool_file(name: str, cls_name: str, description: str, expected: bool = False) -> str:
    text = tool_prompt(name, expected)
    assert "'''" not in text
    how = " given expected calls with arguments (fuzzy mode, order ignored)" if expected else ""
    out = header(
        name + ("_expected" if expected else ""),
        description + (" Against the expected calls." if expected else "") + " On one trace's tool calls (MLflow).",
        "mustache",
        BASE + f"{name}.py",
        f"{cls_name} (mlflow.genai.scorers): the user message get_prompt builds{how}, byte for byte.",
    )
    for var, desc, aliases in TOOL_VARIABLES + ([EXPECTED_VARIABLE] if expected else []):
        out += ["[[variables]]", f"name = {var!r}", f"description = {desc!r}"]
        if aliases:
            out.append(f"aliases = {json.dumps(aliases)}")
    out += ["[[messages]]", "role = 'user'", "template = '''", text + "'''", "[output]"]
    out += [f"{k} = {json.dumps(v)}" for k, v in YES_NO.items()]
    return "\n".join(out) + "\n" + controls_block("tools_called", reference="expected_calls" if expected else None)


def fields_file(name: str, scorer_cls: type) -> str:
    judge = instructions_judge(scorer_cls)
    system = judge._build_system_message(False).replace("{", "{{").replace("}", "}}")
    assert "'''" not in system
    fields = [v for v in judge._ordered_template_variables if v in ("inputs", "outputs")]
    out = header(
        name,
        scorer_cls.model_fields["description"].default + " Single-turn (MLflow).",
        "format",
        BASE + f"{name}.py",
        f"{scorer_cls.__name__} (mlflow.genai.scorers): its InstructionsJudge system and user messages, byte for byte.",
    )
    for f in fields:
        out += [
            "[[variables]]",
            f"name = {f!r}",
            f"description = 'the {f} to evaluate, JSON-dumped as MLflow dumps them'",
            f"aliases = {json.dumps(FIELD_ALIASES[f])}",
            "list_format = 'json_utf8'",
            "dict_format = 'json_utf8'",
        ]
    user = "\n".join(f"{f}: {{{f}}}" for f in fields)
    out += ["[[messages]]", "role = 'system'", "template = '''", system + "'''", "[[messages]]", "role = 'user'"]
    out += [f"template = {json.dumps(user)}", "[output]"]
    out += [f"{k} = {json.dumps(v)}" for k, v in YES_NO.items()]
    return "\n".join(out) + "\n" + controls_block("outputs")


def files() -> dict[str, str]:
    """name -> judge file text."""
    from mlflow.genai.scorers import builtin_scorers as b

    out = {
        "tool_call_correctness": tool_file("tool_call_correctness", "ToolCallCorrectness", b.ToolCallCorrectness().description),
        "tool_call_efficiency": tool_file("tool_call_efficiency", "ToolCallEfficiency", b.ToolCallEfficiency().description),
    }
    desc = b.ToolCallCorrectness().description
    out["tool_call_correctness_expected"] = tool_file("tool_call_correctness", "ToolCallCorrectness", desc, expected=True)
    for name, cls in (("completeness", b.Completeness), ("fluency", b.Fluency), ("summarization", b.Summarization)):
        out[name] = fields_file(name, cls)
    return out


def main() -> int:
    for name, text in files().items():
        (ROOT / "localjudge/judges/builtin" / f"{name}.toml").write_text(text, encoding="utf-8")
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
