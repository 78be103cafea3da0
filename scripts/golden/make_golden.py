"""Write tests/golden/: the judge prompts as their sources render them, for a fixed set of inputs.

    python -m scripts.golden.make_golden --seeds DIR

A maintainer's tool, never imported by the package and not needed by the tests (the golden files are
committed). DIR holds the prompt source texts as the project received them: 000_*.txt (MLflow's
judge prompts and v1 metrics), 001_*.txt (the RAG metric set), 002_*.txt (LangChain OpenTutorial's
advanced relevance evaluator), 004_*.txt (Mastra's answer relevancy). It does NOT use localjudge's
renderer: prompt strings are taken from those texts themselves (MLflow's Python code blocks are
exec'd; the RAG metric assignments are exec'd and `.format`ted; the evaluator's SYSTEM block is
de-indented; Mastra's template literals are filled by plain string replacement) and rendered with
copies of the source libraries' own helpers (MLflow's `format_prompt`, `PromptTemplate`,
`EvaluationExample.__str__`, `_format_args_string`, guidelines / expected-facts rendering,
instructions-judge and custom-prompt judge message building; Apache-2.0, see NOTICE). Texts the
sources do not contain are copied here verbatim with their source: MLflow v1.py's few-shot
examples, autoevals' factuality.yaml (MIT). localjudge's own texts (the advanced relevance human
message, the factuality answer suffix) are restated here.

Output: tests/golden/cases.json (case name, judge, variables, how to render) and one
tests/golden/<case>.txt per case: every message as "===== <role> =====\\n<content>\\n".
tests/test_judges_golden.py renders the same cases with the library and compares bytes.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.golden.golden_mlflow import V1_EXAMPLES, EvaluationExample, PromptTemplate, serialise
from scripts.golden.golden_mlflow_cases import CTX, A, Q, mlflow_cases

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"

# autoevals templates/factuality.yaml `prompt` (verbatim, MIT, Copyright (c) 2023 BrainTrust Data).
FACTUALITY_YAML_PROMPT = """You are comparing a submitted answer to an expert answer on a given question. Here is the data:
[BEGIN DATA]
************
[Question]: {{{input}}}
************
[Expert]: {{{expected}}}
************
[Submission]: {{{output}}}
************
[END DATA]

Compare the factual content of the submitted answer with the expert answer. Ignore any differences in style, grammar, or punctuation.
The submitted answer may either be a subset or superset of the expert answer, or it may conflict with it. Determine which case applies. Answer the question by selecting one of the following options:
(A) The submitted answer is a subset of the expert answer and is fully consistent with it.
(B) The submitted answer is a superset of the expert answer and is fully consistent with it.
(C) The submitted answer contains all the same details as the expert answer.
(D) There is a disagreement between the submitted answer and the expert answer.
(E) The answers differ, but these differences don't matter from the perspective of factuality."""

# localjudge's own texts, restated: the factuality answer instruction and the advanced relevance human message.
FACTUALITY_SUFFIX = """

Answer in JSON only: first your reasoning, step by step, then the letter of the one option that applies.
{"rationale": "...", "result": "A|B|C|D|E"}"""
ADVANCED_HUMAN = (
    "Evaluate the LLM's answer to the question below.\n\n<question>{question}</question>\n\n"
    "<answer>{answer}</answer>\n\n<context>{context}</context>\n\n{context_type}"
)
ADVANCED_CHOICES = {
    "reference": "The provided context is reference material: treat it as authoritative. Any inconsistencies or "
    "omissions in the LLM's answer should lower accuracy and context precision.",
    "supplementary": "The provided context is supplementary information: some flexibility is allowed. However, "
    "significant misinterpretations or key omissions still result in point deductions.",
}


def seed_namespace(seeds: Path) -> dict[str, Any]:
    """Seed 000's Python blocks exec'd, with the few names they assume supplied."""
    text = (seeds / "000_ad59c3e73b620131.txt").read_text()
    ns: dict[str, Any] = {
        "PromptTemplate": PromptTemplate,
        "dataclass": dataclass,
        "EvaluationExample": EvaluationExample,
        "default_parameters": {},
        "default_model": "",
    }
    extra: dict[str, Any] = {"EvaluationExample": EvaluationExample}
    exec(V1_EXAMPLES, extra)
    per_class = {
        "FaithfulnessMetric": extra["FAITHFULNESS"],
        "AnswerCorrectnessMetric": extra["ANSWER_CORRECTNESS"],
        "AnswerRelevanceMetric": extra["ANSWER_RELEVANCE"],
        "RelevanceMetric": extra["RELEVANCE"],
    }
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        m = re.match(r"@dataclass\nclass (\w+)", block)
        if m:
            g = dict(ns)
            g.update(per_class.get(m.group(1), {}))
            exec(block, g)
            ns[m.group(1)] = g[m.group(1)]
        else:
            exec(block, ns)
    return ns


def rag_cases(seeds: Path) -> list[dict[str, Any]]:
    text = (seeds / "001_e2c89861bd68a9dc.txt").read_text()
    ns: dict[str, Any] = {}
    for name, body in re.findall(r'(\w+) ?= ?"""(.*?)"""', text, re.S):
        exec(f'{name} = """{body}"""', ns)
    row = {"question": Q, "answer": A, "context": CTX}
    cases = []
    for judge, var in (
        ("diversity", "diversity_metrics"),
        ("creativity", "creativity_metric"),
        ("rag_groundedness", "groundedness_metric"),
        ("coherence", "coherence_metric"),
        ("pointwise", "pointwise_metric"),
    ):
        cases.append(
            {"case": judge, "judge": judge, "variables": row, "call": "render", "messages": [("user", ns[var].format(**row))]}
        )
    pair = {"question": Q, "context": CTX, "answer_1": A, "answer_2": "Lyon."}
    cases.append(
        {
            "case": "pairwise",
            "judge": "pairwise",
            "variables": pair,
            "call": "render",
            "messages": [("user", ns["pairwise_metric"].format(**pair))],
        }
    )
    return cases


def advanced_cases(seeds: Path) -> list[dict[str, Any]]:
    text = (seeds / "002_11650c844be0c280.txt").read_text()
    body = re.search(r"- \*\*SYSTEM:\*\*  \n  ```\n(.*?)\n  ```", text, re.S).group(1)
    system = "\n".join(line[2:] if line.startswith("  ") else line for line in body.split("\n"))
    cases = []
    for case, variables, context, ctype in (
        ("advanced_relevance", {"question": Q, "answer": A, "context": CTX}, CTX, "reference"),
        (
            "advanced_relevance__supplementary",
            {"question": Q, "answer": A, "context": CTX, "context_type": "supplementary"},
            CTX,
            "supplementary",
        ),
        ("advanced_relevance__no_context", {"question": Q, "answer": A}, "No context provided.", "reference"),
    ):
        human = ADVANCED_HUMAN.format(question=Q, answer=A, context=context, context_type=ADVANCED_CHOICES[ctype])
        cases.append(
            {
                "case": case,
                "judge": "advanced_relevance",
                "variables": variables,
                "call": "render",
                "messages": [("system", system), ("user", human)],
            }
        )
    return cases


def mastra_cases(seeds: Path) -> list[dict[str, Any]]:
    text = (seeds / "004_3a122a04a69c0b35.txt").read_text()
    ts = re.findall(r"```ts\n(.*?)```", text, re.S)
    statements_prompt = re.search(r"return `(.*?)`;\n}", ts[0], re.S).group(1)
    agent = re.search(r"= `(.*?)`;", ts[1], re.S).group(1)
    evaluate_prompt = re.search(r"return `(.*?)`;\n}", ts[2], re.S).group(1)

    def stage2(inp: str, statements: list[str]) -> str:  # a JS template literal, filled by hand
        n = "1" if len(statements) == 0 else str(len(statements))
        return (
            evaluate_prompt.replace("${input}", inp)
            .replace('${statements.length === 0 ? "1" : statements.length}', n)
            .replace("${statements}", ",".join(statements))
        )

    out = []
    out.append(
        {
            "case": "answer_relevancy",
            "judge": "answer_relevancy",
            "variables": {"input": Q, "output": A},
            "call": "render",
            "messages": [("system", agent), ("user", statements_prompt.replace("${output}", A))],
        }
    )
    out.append(
        {
            "case": "answer_relevancy__empty_output",
            "judge": "answer_relevancy",
            "variables": {"input": Q, "output": ""},
            "call": "render",
            "messages": [("system", agent), ("user", statements_prompt.replace("${output}", ""))],
        }
    )
    st = ["The capital of France is Paris.", "Paris is a city on the Seine."]
    out.append(
        {
            "case": "answer_relevancy__verdicts",
            "judge": "answer_relevancy",
            "variables": {"input": Q, "output": A},
            "call": "stage2",
            "statements": st,
            "messages": [("system", agent), ("user", stage2(Q, st))],
        }
    )
    out.append(
        {
            "case": "answer_relevancy__verdicts_empty",
            "judge": "answer_relevancy",
            "variables": {"input": Q, "output": ""},
            "call": "stage2",
            "statements": [],
            "messages": [("system", agent), ("user", stage2(Q, []))],
        }
    )
    return out


def factuality_cases() -> list[dict[str, Any]]:
    row = {"input": Q, "expected": "Paris", "output": A}
    prompt = FACTUALITY_YAML_PROMPT
    for k, v in row.items():  # mustache triple braces: inserted unescaped
        prompt = prompt.replace("{{{" + k + "}}}", v)
    return [
        {
            "case": "factuality",
            "judge": "factuality",
            "variables": row,
            "call": "render",
            "messages": [("user", prompt + FACTUALITY_SUFFIX)],
        }
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", required=True, help="directory of the prompt source texts (see the module docstring)")
    args = ap.parse_args()
    seeds = Path(args.seeds)
    cases = (
        mlflow_cases(seed_namespace(seeds)) + rag_cases(seeds) + advanced_cases(seeds) + mastra_cases(seeds) + factuality_cases()
    )
    GOLDEN.mkdir(parents=True, exist_ok=True)
    index = []
    for c in cases:
        msgs = c.pop("messages")
        if c["call"] == "requests":
            text = "".join(serialise(m) for m in msgs)
        else:
            text = serialise(msgs)
        (GOLDEN / f"{c['case']}.txt").write_text(text, encoding="utf-8", newline="")
        index.append(c)
    (GOLDEN / "cases.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(index)} golden cases to {GOLDEN}")


if __name__ == "__main__":
    main()
