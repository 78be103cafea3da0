"""Dev script: write MLflow's built-in session-level judges as localjudge judge files
(localjudge/judges/builtin/<name>.toml) and their golden prompts (tests/golden/<name>.txt), both from the
installed mlflow package: the system and user messages its own `InstructionsJudge` builds
(`_build_system_message`, `_build_user_message`) for each built-in scorer. Run it again after an MLflow
upgrade; tests/test_conversation_judges_golden.py checks the files against the installed package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scripts.catalog import last_turn_block

ROOT = Path(__file__).resolve().parents[2]
SENTINEL = "@@GUIDELINE@@"
# a conversation with a tool call, as MLflow's resolve_conversation_from_session lists it
GOLDEN_CONVERSATION = [
    {"role": "user", "content": "What's the weather in Paris? Answer in °C."},
    {"role": "tool", "content": "Tool: get_weather\nInputs: {'city': 'Paris'}\nOutputs: 18°C, cloudy"},
    {"role": "assistant", "content": "It is 18 °C and cloudy in Paris."},
    {"role": "user", "content": "Thanks! And tomorrow?"},
    {"role": "assistant", "content": "I can't see tomorrow's forecast, sorry."},
]
GOLDEN_GUIDELINES = ["Answer in the user's units.", "Never promise what you cannot check."]


def scorers() -> dict:
    """name -> (MLflow scorer, url of its prompt file, the [output] table)."""
    from mlflow.genai.scorers import builtin_scorers as b

    yes_no = {"kind": "yes_no_json", "field_tokens": 96}
    base = "https://github.com/mlflow/mlflow/blob/master/mlflow/genai/judges/prompts/"
    return {
        "conversation_completeness": (b.ConversationCompleteness(), base + "conversation_completeness.py", yes_no),
        "conversational_guidelines": (
            b.ConversationalGuidelines(guidelines=[SENTINEL]),
            base + "conversational_guidelines.py",
            yes_no,
        ),
        "conversational_role_adherence": (b.ConversationalRoleAdherence(), base + "conversational_role_adherence.py", yes_no),
        "conversational_safety": (b.ConversationalSafety(), base + "conversational_safety.py", yes_no),
        "conversational_tool_call_efficiency": (
            b.ConversationalToolCallEfficiency(),
            base + "conversational_tool_call_efficiency.py",
            yes_no,
        ),
        "knowledge_retention": (b._LastTurnKnowledgeRetention(), base + "knowledge_retention.py", yes_no),
        "user_frustration": (
            b.UserFrustration(),
            base + "user_frustration.py",
            {"kind": "choice", "labels": ["none", "resolved", "unresolved"], "rationale": True, "field_tokens": 96},
        ),
    }


def mlflow_messages(scorer, conversation: list[dict], guidelines: list[str] | None = None) -> list[tuple[str, str]]:
    """The (role, content) messages MLflow's judge for `scorer` sends for `conversation`."""
    if guidelines is not None:
        scorer = type(scorer)(guidelines=guidelines)
    judge = scorer._create_judge()
    return [("system", judge._build_system_message(False)), ("user", judge._build_user_message(None, None, None, conversation))]


def serialise(messages: list[tuple[str, str]]) -> str:
    """Messages as tests/golden/ stores them (tests/test_judges_golden.py `serialise`)."""
    return "".join(f"===== {role} =====\n{content}\n" for role, content in messages)


def toml_file(name: str, scorer, url: str, output: dict) -> str:
    system = mlflow_messages(scorer, [])[0][1].replace("{", "{{").replace("}", "}}")
    system = system.replace(f"<guideline>{SENTINEL}</guideline>", "{guidelines}")
    assert "'''" not in system
    out = [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);",
        "# written by scripts/catalog/make_conversation_judges.py from the installed mlflow package. Format-style",
        "# template: {{ and }} are literal braces, so MLflow's '{{ conversation }}' stays literal in the",
        "# instructions as MLflow sends it, and the conversation itself goes in the user message.",
        f"name = {name!r}",
        f"description = {json.dumps(scorer.description + ' Session-level, on a conversation (MLflow).')}",
        'version = "1"',
        "kind = 'single'",
        "template_style = 'format'",
        "pass_threshold = 0.5",
        "[source]",
        'project = "MLflow"',
        'license = "Apache-2.0"',
        f"url = {url!r}",
        f'notes = "{type(scorer).__name__} (mlflow.genai.scorers): its InstructionsJudge system and user messages, byte for byte."',
    ]
    if "{guidelines}" in system:
        out += [
            "[[variables]]",
            "name = 'guidelines'",
            "description = 'one guideline or a list of guidelines'",
            "list_format = 'tag_lines'",
            "item_tag = 'guideline'",
        ]
    out += [
        "[[variables]]",
        "name = 'conversation'",
        "description = 'the conversation as MLflow renders it (localjudge.conversations.conversation_text)'",
    ]
    if scorer._create_judge()._include_tool_calls_in_conversation:  # MLflow renders its tool calls for this judge
        out.append("from_conversation = 'conversation_with_tool_calls'")
    out += [
        "[[messages]]",
        "role = 'system'",
        "template = '''",
        system + "'''",
        "[[messages]]",
        "role = 'user'",
        "template = 'conversation: {conversation}'",
        "[output]",
    ]
    for k, v in output.items():
        out.append(f"{k} = {json.dumps(v)}")
    if output["kind"] == "choice":
        out += ["[output.values]", "none = 1.0", "resolved = 0.5", "unresolved = 0.0"]
    return "\n".join(out) + "\n" + last_turn_block(name)  # the last-turn control, or why none (scripts/catalog)


def main() -> int:
    for name, (scorer, url, output) in scorers().items():
        (ROOT / "localjudge/judges/builtin" / f"{name}.toml").write_text(toml_file(name, scorer, url, output), encoding="utf-8")
        guidelines = GOLDEN_GUIDELINES if name == "conversational_guidelines" else None
        golden = serialise(mlflow_messages(scorer, GOLDEN_CONVERSATION, guidelines))
        (ROOT / "tests/golden" / f"{name}.txt").write_text(golden, encoding="utf-8")
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
