"""Write the golden prompts of the dedicated-judge-model judges (Prometheus 2, Flow-Judge, Atla Selene).

    python scripts/golden/make_golden_judge_models.py --prometheus-eval DIR --flow-judge DIR --selene-mini DIR

A maintainer's tool, never imported by the package and not needed by the tests (the golden files are
committed). Each DIR is a checkout of the source repository (the goldens were written from
prometheus-eval/prometheus-eval dcfb4427, flowaicom/flow-judge 9865fc05, atla-ai/selene-mini 1425d208).
It does NOT use localjudge's renderer: it executes the sources' own code on the same inputs —
prometheus-eval's prompts.py (its constants, SCORE_RUBRIC_TEMPLATE and load_rubric; the message is
the system prompt, a blank line and the filled template, as train/recipes/prometheus-v2.0/
prepare_dataset.py builds Prometheus 2's training data), flow-judge's utils/prompt_formatter.py
(format_vars, format_rubric, format_user_prompt, as FlowJudge._format_prompt calls them) and
selene-mini's prompt-templates/*.yaml (`user_template`, filled with str.format).

Output: tests/golden/judge_models_cases.json (case, judge, variables) and tests/golden/<case>.txt, each
message as "===== <role> =====\\n<content>\\n". tests/test_judge_models.py compares bytes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"

INSTRUCTION = "Explain why the sky is blue to a ten-year-old."
RESPONSE = (
    "Sunlight is made of many colours. When it passes through the air, the blue light bumps into tiny bits of air "
    "and bounces all over the sky, so blue comes at us from every direction."
)
RESPONSE_B = "The sky is blue because it reflects the ocean."
REFERENCE = (
    "Sunlight contains all colours. Air molecules scatter short (blue) wavelengths much more than long (red) ones "
    "(Rayleigh scattering), so scattered blue light reaches our eyes from all over the sky."
)
CRITERIA = "Is the explanation scientifically accurate and pitched at a child's level?"
SCORES = {
    1: "The explanation is wrong or incomprehensible to a child.",
    2: "The explanation has a major error or is far too technical.",
    3: "The explanation is roughly right but vague or partly too technical.",
    4: "The explanation is accurate and mostly suitable for a child.",
    5: "The explanation is accurate, clear and perfectly suited to a child.",
}


def serialise(messages: list[tuple[str, str]]) -> str:
    return "".join(f"===== {role} =====\n{content}\n" for role, content in messages)


def prometheus_cases(repo: Path) -> list[dict[str, Any]]:
    ns: dict[str, Any] = {}
    exec((repo / "libs/prometheus-eval/prometheus_eval/prompts.py").read_text(encoding="utf-8"), ns)
    rubric = ns["SCORE_RUBRIC_TEMPLATE"].format(criteria=CRITERIA, **{f"score{i}_description": d for i, d in SCORES.items()})
    rel_rubric = ns["load_rubric"]("helpfulness", "relative")
    cases = []

    def add(case: str, system: str, template: str, variables: dict[str, Any], fill: dict[str, Any]) -> None:
        content = system + "\n\n" + template.format(**fill)
        cases.append({"case": case, "judge": case, "variables": variables, "messages": [("user", content)]})

    add(
        "prometheus_absolute",
        ns["ABS_SYSTEM_PROMPT"],
        ns["ABSOLUTE_PROMPT_WO_REF"],
        {"instruction": INSTRUCTION, "response": RESPONSE, "rubric": rubric},
        {"instruction": INSTRUCTION, "response": RESPONSE, "rubric": rubric, "reference_answer": None},
    )
    add(
        "prometheus_absolute_ref",
        ns["ABS_SYSTEM_PROMPT"],
        ns["ABSOLUTE_PROMPT"],
        {"instruction": INSTRUCTION, "response": RESPONSE, "rubric": rubric, "reference_answer": REFERENCE},
        {"instruction": INSTRUCTION, "response": RESPONSE, "rubric": rubric, "reference_answer": REFERENCE},
    )
    add(
        "prometheus_relative",
        ns["REL_SYSTEM_PROMPT"],
        ns["RELATIVE_PROMPT_WO_REF"],
        {"instruction": INSTRUCTION, "answer_1": RESPONSE, "answer_2": RESPONSE_B, "rubric": rel_rubric},
        {
            "instruction": INSTRUCTION,
            "response_A": RESPONSE,
            "response_B": RESPONSE_B,
            "rubric": rel_rubric,
            "reference_answer": None,
        },
    )
    add(
        "prometheus_relative_ref",
        ns["REL_SYSTEM_PROMPT"],
        ns["RELATIVE_PROMPT"],
        {
            "instruction": INSTRUCTION,
            "response_A": RESPONSE,
            "response_B": RESPONSE_B,
            "rubric": rel_rubric,
            "reference_answer": REFERENCE,
        },
        {
            "instruction": INSTRUCTION,
            "response_A": RESPONSE,
            "response_B": RESPONSE_B,
            "rubric": rel_rubric,
            "reference_answer": REFERENCE,
        },
    )
    return cases


class RubricItem:
    """Stand-in for flow_judge.metrics.metric.RubricItem (a pydantic model with score and description)."""

    def __init__(self, score: int, description: str):
        self.score, self.description = score, description


def flow_cases(repo: Path) -> list[dict[str, Any]]:
    src = (repo / "flow_judge/utils/prompt_formatter.py").read_text(encoding="utf-8")
    src = src.replace("from flow_judge.metrics.metric import RubricItem\n", "")
    ns: dict[str, Any] = {"RubricItem": RubricItem}
    exec(src, ns)
    items = [RubricItem(s, d) for s, d in reversed(SCORES.items())]  # format_rubric sorts them itself
    rubric = ns["format_rubric"](items)
    cases = []
    for case, inputs, variables in (
        ("flow_judge_rubric", [{"query": INSTRUCTION}], {"input": INSTRUCTION}),
        (  # a dict of inputs; keys become lower-case tags with '_' for spaces, as format_vars writes them
            "flow_judge_rubric__inputs",
            [{"query": INSTRUCTION}, {"Reference Answer": REFERENCE}],
            {"inputs": {"query": INSTRUCTION, "Reference Answer": REFERENCE}},
        ),
    ):
        prompt = ns["format_user_prompt"](
            {
                "INPUTS": ns["format_vars"](inputs),
                "OUTPUT": ns["format_vars"]([{"response": RESPONSE}]),
                "EVALUATION_CRITERIA": CRITERIA,
                "RUBRIC": rubric,
            }
        )
        variables = {**variables, "output": RESPONSE, "criteria": CRITERIA, "rubric": rubric}
        cases.append({"case": case, "judge": "flow_judge_rubric", "variables": variables, "messages": [("user", prompt)]})
    return cases


def selene_cases(repo: Path) -> list[dict[str, Any]]:
    import yaml

    absolute = yaml.safe_load((repo / "prompt-templates/absolute-scoring.yaml").read_text(encoding="utf-8"))["user_template"]
    pairwise = yaml.safe_load((repo / "prompt-templates/pairwise.yaml").read_text(encoding="utf-8"))["user_template"]
    scores = {f"rubric_score_{i}_description": d for i, d in SCORES.items()}
    fill = {"user_input": INSTRUCTION, "assistant_response": RESPONSE, "rubric_objective": CRITERIA, **scores}
    pw = {
        "user_input": INSTRUCTION,
        "assistant_response_a": RESPONSE,
        "assistant_response_b": RESPONSE_B,
        "rubric_objective": CRITERIA,
    }
    return [
        {
            "case": "selene_absolute",
            "judge": "selene_absolute",
            "variables": fill,
            "messages": [("user", absolute.format(**fill))],
        },
        {
            "case": "selene_pairwise",
            "judge": "selene_pairwise",
            "variables": {"user_input": INSTRUCTION, "answer_1": RESPONSE, "answer_2": RESPONSE_B, "rubric_objective": CRITERIA},
            "messages": [("user", pairwise.format(**pw))],
        },
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prometheus-eval", type=Path, required=True, help="checkout of prometheus-eval/prometheus-eval")
    ap.add_argument("--flow-judge", type=Path, required=True, help="checkout of flowaicom/flow-judge")
    ap.add_argument("--selene-mini", type=Path, required=True, help="checkout of atla-ai/selene-mini")
    a = ap.parse_args()
    cases = prometheus_cases(a.prometheus_eval) + flow_cases(a.flow_judge) + selene_cases(a.selene_mini)
    index = []
    for c in cases:
        (GOLDEN / f"{c['case']}.txt").write_text(serialise(c["messages"]), encoding="utf-8")
        index.append({k: c[k] for k in ("case", "judge", "variables")})
    (GOLDEN / "judge_models_cases.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(index)} golden cases to {GOLDEN}")


if __name__ == "__main__":
    main()
