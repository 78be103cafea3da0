"""Dev script: write RAGAS's agent metrics as localjudge judge files (localjudge/judges/builtin/<name>.toml) and
their golden first prompts (tests/golden/<name>.txt, the package's own `to_string` for GOLDEN_SAMPLE), from the
installed ragas package: each PydanticPrompt's text as its own `to_string` prints it (instruction, output
schema, examples) up to the input, and its output model's JSON schema. Run it again after a RAGAS upgrade;
tests/test_ragas_agent_judges.py checks the files against the installed package."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scripts.catalog import last_turn_block

ROOT = Path(__file__).resolve().parents[2]
TAIL = "Input: (None)\nOutput: "  # what to_string() prints without data; the judge renders the input there
URL = "https://github.com/explodinggradients/ragas/blob/v0.4.3/src/ragas/metrics/"
CONVERSATION = {
    "name": "ragas_conversation",
    "description": "the conversation as RAGAS prints it (MultiTurnSample.pretty_repr; localjudge.conversations.ragas_text)",
    "aliases": ["workflow"],
}


def stage(name: str, prompt: Any, output: dict[str, Any]) -> dict[str, Any]:
    """One call: the prompt's text with `{{stage_input}}` where RAGAS prints the input's JSON."""
    text = prompt.to_string()
    assert text.endswith(TAIL) and "{{" not in text and "'''" not in text, name
    template = text[: -len(TAIL)] + "input: {{stage_input}}\nOutput: "
    schema = prompt.output_model.model_json_schema()
    return {"name": name, "template": template, "output": {"kind": "json_schema", "schema": schema, **output}}


def judges() -> dict[str, dict[str, Any]]:
    """name -> the judge file's content."""
    from ragas.metrics._goal_accuracy import CompareOutcomePrompt, InferGoalOutcomePrompt
    from ragas.metrics._topic_adherence import TopicClassificationPrompt, TopicExtractionPrompt, TopicRefusedPrompt

    goal = [
        stage("infer_goal_outcome", InferGoalOutcomePrompt(), {"field_tokens": 64}),
        stage("compare_outcome", CompareOutcomePrompt(), {"field_tokens": 64}),
    ]
    ref = {"name": "reference", "description": "the desired outcome (MultiTurnSample.reference)", "aliases": ["expected_outcome"]}
    topics = {"name": "reference_topics", "description": "the topics the agent may talk about (a list, or its JSON text)"}
    src = "RAGAS 0.4.3 ({}): the PydanticPrompts {} verbatim as `to_string` renders them, output schemas from their output models; {}"
    return {
        "agent_goal_accuracy": {
            "description": "RAGAS's AgentGoalAccuracyWithReference: the conversation's end state is inferred, then compared with the reference outcome; 1 when the same, else 0.",
            "ragas_agent": {"metric": "goal_accuracy_with_reference"},
            "variables": [CONVERSATION, ref],
            "stages": goal,
            "url": URL + "_goal_accuracy.py",
            "notes": src.format(
                "metrics/_goal_accuracy.py", "InferGoalOutcomePrompt and CompareOutcomePrompt", "score = float(verdict)."
            ),
        },
        "agent_goal_accuracy_without_reference": {
            "description": "RAGAS's AgentGoalAccuracyWithoutReference: the user's goal and the end state are inferred from the conversation, then compared; 1 when the same, else 0.",
            "ragas_agent": {"metric": "goal_accuracy_without_reference"},
            "variables": [CONVERSATION],
            "stages": goal,
            "url": URL + "_goal_accuracy.py",
            "notes": src.format(
                "metrics/_goal_accuracy.py", "InferGoalOutcomePrompt and CompareOutcomePrompt", "score = float(verdict)."
            ),
        },
        "topic_adherence": {
            "description": "RAGAS's TopicAdherenceScore: the user's topics are extracted, each is checked for a refusal and classified against the reference topics; F1 of answered on-topic topics (precision / recall with ragas_agent.mode).",
            "ragas_agent": {"metric": "topic_adherence", "mode": "f1"},
            "variables": [CONVERSATION, topics],
            "stages": [
                stage("topic_extraction", TopicExtractionPrompt(), {"field_tokens": 24, "max_tokens": 256}),
                stage("topic_refused", TopicRefusedPrompt(), {"field_tokens": 8}),
                stage("topic_classification", TopicClassificationPrompt(), {"field_tokens": 8, "max_tokens": 128}),
            ],
            "url": URL + "_topic_adherence.py",
            "notes": src.format(
                "metrics/_topic_adherence.py",
                "TopicExtractionPrompt, TopicRefusedPrompt (one call per topic) and TopicClassificationPrompt",
                "precision / recall / F1 over the topics as TopicAdherenceScore computes them (+1e-10 in each denominator).",
            ),
        },
    }


def golden_sample() -> Any:
    """A fixed conversation with tool calls and non-ASCII text, for the golden prompts."""
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

    return MultiTurnSample(
        user_input=[
            HumanMessage(content="What's the weather in Paris? Answer in °C."),
            AIMessage(content="", tool_calls=[ToolCall(name="get_weather", args={"city": "Paris"})]),
            ToolMessage(content="18°C, cloudy"),
            AIMessage(content="It is 18 °C and cloudy in Paris."),
        ],
        reference="The user knows Paris's weather in °C.",
        reference_topics=["weather"],
    )


def golden(name: str) -> str:
    """The judge's first prompt for `golden_sample()` as the package renders it, as tests/golden/ serialises it."""
    from ragas.metrics._goal_accuracy import InferGoalOutcomePrompt, WorkflowInput
    from ragas.metrics._topic_adherence import TopicExtractionInput, TopicExtractionPrompt

    text = golden_sample().pretty_repr()
    if name == "topic_adherence":
        prompt = TopicExtractionPrompt().to_string(TopicExtractionInput(user_input=text))
    else:
        prompt = InferGoalOutcomePrompt().to_string(WorkflowInput(workflow=text))
    return f"===== user =====\n{prompt}\n"


def q(s: str) -> str:
    """A TOML string: JSON's escaping is valid TOML basic-string escaping."""
    return json.dumps(s, ensure_ascii=False)


def toml(name: str, j: dict[str, Any]) -> str:
    """The judge file's text."""
    out = [
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);",
        "# written by scripts/catalog/make_ragas_agent_judges.py from the installed ragas package.",
        f"name = {q(name)}",
        f"description = {q(j['description'])}",
        'version = "1"',
        'kind = "ragas_agent"',
        'template_style = "mustache"',
        "pass_threshold = 0.5",
        "[ragas_agent]",
        *[f"{k} = {q(v)}" for k, v in j["ragas_agent"].items()],
        "[source]",
        'project = "RAGAS"',
        'license = "Apache-2.0"',
        f"url = {q(j['url'])}",
        f"notes = {q(j['notes'])}",
    ]
    for v in j["variables"]:
        out += ["[[variables]]", f"name = {q(v['name'])}", f"description = {q(v['description'])}"]
        if v.get("aliases"):
            out.append(f"aliases = {json.dumps(v['aliases'])}")
    for s in j["stages"]:
        out += ["[[stages]]", f"name = {q(s['name'])}", "[[stages.messages]]", 'role = "user"']
        out.append("template = '''\n" + s["template"] + "'''")
        o = s["output"]
        out += ["[stages.output]", f"kind = {q(o['kind'])}", f"schema = {q(json.dumps(o['schema'], ensure_ascii=False))}"]
        out += [f"{k} = {v}" for k, v in o.items() if k not in ("kind", "schema")]
    return "\n".join(out) + "\n" + last_turn_block(name)  # the last-turn control, or why none (scripts/catalog)


def main() -> None:
    for name, j in judges().items():
        path = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        path.write_text(toml(name, j), encoding="utf-8")
        (ROOT / "tests" / "golden" / f"{name}.txt").write_text(golden(name), encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
