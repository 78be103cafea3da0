"""Dev script: write DeepEval's LLM-judged conversational metric prompts as localjudge judge files
(localjudge/judges/builtin/deepeval_<name>.toml), from the installed deepeval package: the text its own
template bundle renders (`deepeval.templates.resolver.resolve_template`, multimodal off) with the turns left as
the judge's `{{deepeval_turns}}` variable. Run it again after a DeepEval upgrade;
tests/test_deepeval_conversation_judges_golden.py checks the files against the installed package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SENTINEL = "@@DEEPEVAL_TURNS@@"
URL = "https://github.com/confident-ai/deepeval/tree/main/deepeval/metrics/"

# name -> (DeepEval metric class, template method, the variable its turns fill, its description, source path)
PORTS = {
    "deepeval_turn_relevancy": (
        "TurnRelevancyMetric",
        "generate_verdicts",
        "sliding_window",
        "Whether the LAST assistant message is relevant to the messages before it. Per turn (--granularity turn, "
        "DeepEval's sliding window); DeepEval's score is the fraction of turns passing (DeepEval TurnRelevancyMetric).",
        "turn_relevancy/templates/generate_verdicts.txt",
    ),
}


def deepeval_prompt(metric: str, method: str, turns_var: str, turns: object) -> str:
    """The prompt DeepEval's `metric` sends from its `method` template with `turns` as the turns."""
    from deepeval.templates.resolver import resolve_template

    return resolve_template("metrics", metric, method, **{turns_var: turns, "multimodal": False, "strict": True})


# a window of turns as DeepEval's convert_turn_to_dict gives them: the golden prompt's input (tests/golden/<name>.txt)
GOLDEN_TURNS = [
    {"content": "Hi! I'm Léa — what's the {weather} in \"Lyon\"?", "role": "user"},
    {"content": "Sunny, 24 °C.", "role": "assistant"},
    {"content": "And tomorrow?", "role": "user"},
    {"content": "Isn't blue a nice colour?", "role": "assistant"},
]


def golden(name: str) -> str:
    """DeepEval's own prompt for `GOLDEN_TURNS`, as tests/golden/ stores messages (one user message)."""
    metric, method, turns_var, _, _ = PORTS[name]
    return f"===== user =====\n{deepeval_prompt(metric, method, turns_var, GOLDEN_TURNS)}\n"


def judge_file(name: str) -> str:
    metric, method, turns_var, description, path = PORTS[name]
    text = deepeval_prompt(metric, method, turns_var, SENTINEL)
    if text.count(SENTINEL) != 1 or "{{" in text:
        raise SystemExit(f"{name}: the rendered template cannot be held as a mustache template")
    template = text.replace(SENTINEL, "{{deepeval_turns}}")
    q = json.dumps  # TOML basic strings: JSON's escapes are TOML's
    return (
        "# localjudge judge file. Prompt text reproduced verbatim from its source (see [source] and NOTICE);\n"
        "# written by scripts/make_deepeval_conversation_judges.py from the installed deepeval package: the text\n"
        f"# DeepEval's {metric}.{method} renders (multimodal off), its turns as {{{{deepeval_turns}}}}.\n"
        f"name = {q(name)}\n"
        f"description = {q(description)}\n"
        'version = "1"\n'
        "kind = 'single'\n"
        "pass_threshold = 0.5\n"
        "[source]\n"
        'project = "DeepEval"\n'
        'license = "Apache-2.0"\n'
        f"url = {q(URL + path)}\n"
        f"notes = {q(f'{metric} ({method}): its prompt byte for byte. The answer is decoded as yes_no_json: result is DeepEval verdict, rationale its reason.')}\n"
        "[[variables]]\n"
        "name = 'deepeval_turns'\n"
        "description = 'the turns as DeepEval prints them (localjudge.conversations.render.deepeval_turns_text)'\n"
        "[[messages]]\n"
        "role = 'user'\n"
        f"template = {q(template)}\n"
        "[output]\n"
        'kind = "yes_no_json"\n'
        "field_tokens = 96\n"
    )


def main() -> None:
    for name in PORTS:
        out = ROOT / "localjudge" / "judges" / "builtin" / f"{name}.toml"
        out.write_text(judge_file(name), encoding="utf-8")
        (ROOT / "tests" / "golden" / f"{name}.txt").write_text(golden(name), encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)} and tests/golden/{name}.txt", file=sys.stderr)


if __name__ == "__main__":
    main()
