"""Write tests/golden/: the judge prompts as their sources render them, for a fixed set of inputs.

    python scripts/make_golden.py --seeds DIR

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
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"


def serialise(messages: list[tuple[str, str]]) -> str:
    return "".join(f"===== {role} =====\n{content}\n" for role, content in messages)


# ----------------------------------------------------------------------- copies of MLflow helpers
# From mlflow/genai/prompts/utils.py (Apache-2.0).
def format_prompt(prompt: str, **values: Any) -> str:
    for key, value in values.items():
        replacement = str(value).replace("\\", "\\\\")
        prompt = re.sub(r"\{\{\s*" + key + r"\s*\}\}", replacement, prompt)
    return prompt


# From mlflow/metrics/genai/prompt_template.py (Apache-2.0).
class PromptTemplate:
    def __init__(self, template_str):
        self.template_strs = [template_str] if isinstance(template_str, str) else template_str

    def format(self, **kwargs: Any) -> str:
        safe_kwargs = {k: v for k, v in kwargs.items() if v is not None}
        formatted_strs = []
        for template_str in self.template_strs:
            extracted_variables = [fname for _, fname, _, _ in string.Formatter().parse(template_str) if fname]
            if all(item in safe_kwargs.keys() for item in extracted_variables):
                formatted_strs.append(template_str.format(**safe_kwargs))
        return "".join(formatted_strs)

    def partial_fill(self, **kwargs: Any) -> PromptTemplate:
        safe_kwargs = {k: v for k, v in kwargs.items() if v is not None}
        new_template_strs = []
        for template_str in self.template_strs:
            extracted_variables = [fname for _, fname, _, _ in string.Formatter().parse(template_str) if fname]
            safe_available_kwargs = {k: safe_kwargs.get(k, "{" + k + "}") for k in extracted_variables}
            new_template_strs.append(template_str.format_map(safe_available_kwargs))
        return PromptTemplate(template_str=new_template_strs)


# From mlflow/metrics/genai/base.py (Apache-2.0).
@dataclass
class EvaluationExample:
    output: str
    score: float
    justification: str
    input: str | None = None
    grading_context: dict[str, str] | str | None = None

    def _format_grading_context(self):
        if isinstance(self.grading_context, dict):
            return "\n".join([f"key: {key}\nvalue:\n{value}" for key, value in self.grading_context.items()])
        else:
            return self.grading_context

    def __str__(self) -> str:
        return PromptTemplate(
            [
                """
Example Input:
{input}
""",
                """
Example Output:
{output}
""",
                """
Additional information used by the model:
{grading_context}
""",
                """
Example score: {score}
Example justification: {justification}
        """,
            ]
        ).format(
            input=self.input,
            output=self.output,
            grading_context=self._format_grading_context(),
            score=self.score,
            justification=self.justification,
        )


# From mlflow/metrics/genai/genai_metric.py _format_args_string (Apache-2.0), for one row.
def format_args_string(grading_context_columns: list[str], row: dict[str, Any]) -> str:
    args_dict = {arg: row[arg] for arg in grading_context_columns}
    return (
        ""
        if args_dict is None or len(args_dict) == 0
        else (
            "Additional information used by the model:\n"
            + "\n".join([f"key: {arg}\nvalue:\n{arg_value}" for arg, arg_value in args_dict.items()])
        )
    )


# From mlflow/metrics/genai/prompts/v1.py EvaluationModel.to_dict + genai_metric.py eval_fn (Apache-2.0).
def v1_prompt(
    template: PromptTemplate,
    name: str,
    definition: str,
    grading_prompt: str,
    examples: list,
    columns: list[str],
    include_input: bool,
    row: dict[str, Any],
) -> str:
    if not include_input:
        examples = [
            EvaluationExample(output=e.output, score=e.score, justification=e.justification, grading_context=e.grading_context)
            for e in examples
        ]
    examples_str = "" if not examples else "Examples:\n" + "\n".join(map(str, examples))
    eval_prompt = template.partial_fill(name=name, definition=definition, grading_prompt=grading_prompt, examples=examples_str)
    return eval_prompt.format(
        input=row.get("input") if include_input else None,
        output=row["output"],
        grading_context_columns=format_args_string(columns, row),
    )


# MLflow v1.py few-shot examples that the MLflow source text elides (verbatim, Apache-2.0).
V1_EXAMPLES = """
FAITHFULNESS = dict(
    example_score_2=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="Databricks is a company that specializes in big data and machine learning "
        "solutions. MLflow has nothing to do with Databricks. MLflow is an open-source platform "
        "for managing the end-to-end machine learning (ML) lifecycle.",
        score=2,
        justification='The output claims that "MLflow has nothing to do with Databricks" which is '
        'contradictory to the provided context that states "It was developed by Databricks". This '
        'is a major inconsistency. However, the output correctly identifies that "MLflow is an '
        'open-source platform for managing the end-to-end machine learning (ML) lifecycle" and '
        '"Databricks is a company that specializes in big data and machine learning solutions", '
        "which are both supported by the context. Therefore, some of the claims in the output can "
        "be inferred from the provided context, but the majority of the output is inconsistent "
        "with the provided context, leading to a faithfulness score of 2.",
        grading_context={
            "context": "MLflow is an open-source platform for managing the end-to-end machine "
            "learning (ML) lifecycle. It was developed by Databricks, a company that specializes "
            "in big data and machine learning solutions. MLflow is designed to address the "
            "challenges that data scientists and machine learning engineers face when developing, "
            "training, and deploying machine learning models."
        },
    ),
    example_score_5=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="Databricks is a company that specializes in big data and machine learning "
        "solutions.",
        score=5,
        justification='The output states that "Databricks is a company that specializes in big data'
        ' and machine learning solutions." This claim is directly supported by the context, which '
        'states "It was developed by Databricks, a company that specializes in big data and '
        'machine learning solutions." Therefore, the faithfulness score is 5 as all the claims in '
        'the output are directly supported by the provided context."',
        grading_context={
            "context": "MLflow is an open-source platform for managing the end-to-end "
            "machine learning (ML) lifecycle. It was developed by Databricks, a company "
            "that specializes in big data and machine learning solutions. MLflow is "
            "designed to address the challenges that data scientists and machine learning "
            "engineers face when developing, training, and deploying machine learning "
            "models."
        },
    ),
)
ANSWER_CORRECTNESS = dict(
    example_score_2=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="Databricks is a data engineering and analytics platform designed to help "
        "organizations process and analyze large amounts of data. Databricks is a company "
        "specializing in big data and machine learning solutions.",
        score=2,
        justification="The output provided by the model does demonstrate some degree of semantic "
        "similarity to the targets, as it correctly identifies Databricks as a company "
        "specializing in big data and machine learning solutions. However, it fails to address "
        "the main point of the input question, which is the relationship between MLflow and "
        "Databricks. The output does not mention MLflow at all, which is a significant discrepancy "
        "with the provided targets. Therefore, the model's answer_correctness score is 2.",
        grading_context={
            "targets": "MLflow is an open-source platform for managing the end-to-end machine "
            "learning (ML) lifecycle. It was developed by Databricks, a company that specializes "
            "in big data and machine learning solutions. MLflow is designed to address the "
            "challenges that data scientists and machine learning engineers face when developing, "
            "training, and deploying machine learning models."
        },
    ),
    example_score_4=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="MLflow is a product created by Databricks to enhance the efficiency of machine "
        "learning processes.",
        score=4,
        justification="The output provided by the model is mostly correct. It correctly identifies "
        "that MLflow is a product created by Databricks. However, it does not mention that MLflow "
        "is an open-source platform for managing the end-to-end machine learning lifecycle, which "
        "is a significant part of its function. Therefore, while the output is mostly accurate, "
        "it has a minor omission, which is why it gets a score of 4 according to the grading "
        "rubric.",
        grading_context={
            "targets": "MLflow is an open-source platform for managing the end-to-end machine "
            "learning (ML) lifecycle. It was developed by Databricks, a company that specializes "
            "in big data and machine learning solutions. MLflow is designed to address the "
            "challenges that data scientists and machine learning engineers face when developing, "
            "training, and deploying machine learning models."
        },
    ),
)
ANSWER_RELEVANCE = dict(
    example_score_2=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="Databricks is a company that specializes in big data and machine learning "
        "solutions.",
        score=2,
        justification="The output provided by the model does give some information about "
        "Databricks, which is part of the input question. However, it does not address the main "
        "point of the question, which is the relationship between MLflow and Databricks. "
        "Therefore, while the output is not completely irrelevant, it does not fully answer the "
        "question, leading to a lower score.",
    ),
    example_score_5=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="MLflow is a product created by Databricks to enhance the efficiency of machine "
        "learning processes.",
        score=5,
        justification="The output directly addresses the input question by explaining the "
        "relationship between MLflow and Databricks. It provides a clear and concise answer that "
        "MLflow is a product created by Databricks, and also adds relevant information about the "
        "purpose of MLflow, which is to enhance the efficiency of machine learning processes. "
        "Therefore, the output is highly relevant to the input and deserves a full score.",
    ),
)
RELEVANCE = dict(
    example_score_2=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="Databricks is a data engineering and analytics platform designed to help "
        "organizations process and analyze large amounts of data. Databricks is a company "
        "specializing in big data and machine learning solutions.",
        score=2,
        justification="The output provides relevant information about Databricks, mentioning it "
        "as a company specializing in big data and machine learning solutions. However, it doesn't "
        "directly address how MLflow is related to Databricks, which is the specific question "
        "asked in the input. Therefore, the output is only somewhat related to the provided "
        "context.",
        grading_context={
            "context": "MLflow is an open-source platform for managing the end-to-end machine "
            "learning (ML) lifecycle. It was developed by Databricks, a company that specializes "
            "in big data and machine learning solutions. MLflow is designed to address the "
            "challenges that data scientists and machine learning engineers face when developing, "
            "training, and deploying machine learning models."
        },
    ),
    example_score_4=EvaluationExample(
        input="How is MLflow related to Databricks?",
        output="MLflow is a product created by Databricks to enhance the efficiency of machine "
        "learning processes.",
        score=4,
        justification="The output provides a relevant and accurate statement about the "
        "relationship between MLflow and Databricks. While it doesn't provide extensive detail, "
        "it still offers a substantial and meaningful response. To achieve a score of 5, the "
        "response could be further improved by providing additional context or details about "
        "how MLflow specifically functions within the Databricks ecosystem.",
        grading_context={
            "context": "MLflow is an open-source platform for managing the end-to-end machine "
            "learning (ML) lifecycle. It was developed by Databricks, a company that specializes "
            "in big data and machine learning solutions. MLflow is designed to address the "
            "challenges that data scientists and machine learning engineers face when developing, "
            "training, and deploying machine learning models."
        },
    ),
)
"""

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

# ------------------------------------------------------------------------------------- fixed inputs
Q = "What is the capital of France?"
A = "The capital of France is Paris, a city on the Seine."
CTX = "Paris is the capital and most populous city of France. It lies on the river Seine."
MLQ = "What is MLflow?"
MLA = "MLflow is an open-source platform for the machine learning lifecycle."
MLT = "MLflow is an open-source platform, developed by Databricks, for managing the end-to-end machine learning lifecycle."


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


def mlflow_cases(ns: dict[str, Any]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []

    def add(
        case: str,
        judge: str,
        variables: dict[str, Any],
        messages: list[tuple[str, str]] | list[list[tuple[str, str]]],
        call: str = "render",
        **extra: Any,
    ) -> None:
        cases.append({"case": case, "judge": judge, "variables": variables, "call": call, "messages": messages, **extra})

    # correctness.py get_prompt: expected_response, or expected_facts -> "\n- " list + suffix
    p = format_prompt(ns["CORRECTNESS_PROMPT"], input=Q, output=A, ground_truth="Paris is the capital of France.")
    add("correctness", "correctness", {"input": Q, "output": A, "ground_truth": "Paris is the capital of France."}, [("user", p)])
    facts = ["Paris is the capital of France.", "Paris lies on the Seine."]
    p = (
        format_prompt(ns["CORRECTNESS_PROMPT"], input=Q, output=A, ground_truth="\n- ".join([""] + facts))
        + ns["CORRECTNESS_PROMPT_SUFFIX"]
    )
    add("correctness__facts", "correctness", {"input": Q, "output": A, "ground_truth": facts}, [("user", p)])
    p = format_prompt(ns["GROUNDEDNESS_PROMPT"], input=Q, output=A, retrieval_context=str(CTX))
    add("groundedness", "groundedness", {"input": Q, "output": A, "retrieval_context": CTX}, [("user", p)])
    docs = [CTX, "Lyon is a city in France."]
    p = format_prompt(ns["GROUNDEDNESS_PROMPT"], input=Q, output=A, retrieval_context=str(docs))
    add("groundedness__list", "groundedness", {"input": Q, "output": A, "retrieval_context": docs}, [("user", p)])
    p = format_prompt(ns["RELEVANCE_TO_QUERY_PROMPT"], input=Q, output=A)
    add("relevance_to_query", "relevance_to_query", {"input": Q, "output": A}, [("user", p)])
    # retrieval_relevance.py get_prompt(request, context) per retrieved chunk
    p = format_prompt(ns["RETRIEVAL_RELEVANCE_PROMPT"], input=Q, doc=CTX)
    add("retrieval_relevance", "retrieval_relevance", {"input": Q, "doc": CTX}, [("user", p)])
    per_doc = [[("user", format_prompt(ns["RETRIEVAL_RELEVANCE_PROMPT"], input=Q, doc=d))] for d in docs]
    add("retrieval_relevance__list", "retrieval_relevance", {"input": Q, "doc": docs}, per_doc, call="requests")
    p = format_prompt(ns["SAFETY_PROMPT"], content=A)
    add("safety", "safety", {"content": A}, [("user", p)])
    # guidelines.py get_prompt: a str guideline becomes a one-item list; <guideline>..</guideline> lines;
    # context dict -> <key>value</key> lines; the Guidelines scorer passes {request, response}.
    g = ["The response must be in English.", "The response must name the city."]
    guidelines = "\n".join(f"<guideline>{x}</guideline>" for x in g)
    gctx = {"request": Q, "response": A}
    p = format_prompt(
        ns["GUIDELINES_PROMPT"], guidelines=guidelines, guidelines_context="\n".join(f"<{k}>{v}</{k}>" for k, v in gctx.items())
    )
    add("guidelines", "guidelines", {"guidelines": g, "input": Q, "output": A}, [("user", p)])
    one = {"tool_call_result": "{'country': 'France', 'capital': 'Paris'}", "retrieved_context": CTX}
    p = format_prompt(
        ns["GUIDELINES_PROMPT"],
        guidelines="<guideline>The response must be in English.</guideline>",
        guidelines_context="\n".join(f"<{k}>{v}</{k}>" for k, v in one.items()),
    )
    add(
        "guidelines__context",
        "guidelines",
        {"guidelines": "The response must be in English.", "guidelines_context": one},
        [("user", p)],
    )
    # context_sufficiency.py: expected facts -> "  " + "\n    - ".join([""] + facts).strip()
    p = format_prompt(ns["CONTEXT_SUFFICIENCY_PROMPT"], input=Q, ground_truth="Paris", retrieval_context=str(CTX))
    add(
        "context_sufficiency",
        "context_sufficiency",
        {"input": Q, "ground_truth": "Paris", "retrieval_context": CTX},
        [("user", p)],
    )
    rendered = "\n    - ".join([""] + facts)
    p = format_prompt(ns["CONTEXT_SUFFICIENCY_PROMPT"], input=Q, ground_truth=f"  {rendered.strip()}", retrieval_context=str(CTX))
    add(
        "context_sufficiency__facts",
        "context_sufficiency",
        {"input": Q, "ground_truth": facts, "retrieval_context": CTX},
        [("user", p)],
    )
    p = format_prompt(ns["EQUIVALENCE_PROMPT"], output=A, expected_output="Paris is the capital of France.")
    add("equivalence", "equivalence", {"output": A, "expected_output": "Paris is the capital of France."}, [("user", p)])

    # v1 metrics: MLflow's grading template (with input), each metric's definition/rubric/examples
    tmpl = ns["_build_grading_prompt_template"](include_input=True)
    for judge, cls, cols, row in (
        ("answer_similarity", "AnswerSimilarityMetric", ["targets"], {"input": MLQ, "output": MLA, "targets": MLT}),
        ("faithfulness", "FaithfulnessMetric", ["context"], {"input": MLQ, "output": MLA, "context": MLT}),
        ("answer_correctness", "AnswerCorrectnessMetric", ["targets"], {"input": MLQ, "output": MLA, "targets": MLT}),
        ("answer_relevance", "AnswerRelevanceMetric", [], {"input": MLQ, "output": MLA}),
        ("relevance", "RelevanceMetric", ["context"], {"input": MLQ, "output": MLA, "context": MLT}),
    ):
        c = ns[cls]
        p = v1_prompt(tmpl, judge, c.definition, c.grading_prompt, c.default_examples, cols, True, row)
        add(judge, judge, row, [("user", p)])

    # make_genai_metric-style metric, both modes (without input: MLflow drops the examples' input too)
    metric = {
        "name": "conciseness",
        "definition": "Conciseness is how briefly the output answers.",
        "grading_prompt": "Conciseness: Below are the details for different scores:\n- Score 1: rambling.\n- Score 5: terse.",
        "grading_context_columns": ["targets"],
        "examples": [
            {"input": MLQ, "output": MLA, "score": 4, "justification": "Short and complete.", "grading_context": {"targets": MLT}}
        ],
    }
    exs = [EvaluationExample(**e) for e in metric["examples"]]
    for include_input in (True, False):
        t = ns["_build_grading_prompt_template"](include_input=include_input)
        row = {"input": MLQ, "output": MLA, "targets": MLT} if include_input else {"output": MLA, "targets": MLT}
        p = v1_prompt(t, "conciseness", metric["definition"], metric["grading_prompt"], exs, ["targets"], include_input, row)
        add(
            f"make_metric__{'with' if include_input else 'without'}_input",
            "",
            row,
            [("user", p)],
            factory={"fn": "make_metric", "args": {**metric, "include_input": include_input}},
        )

    # instructions judge (instructions_judge/__init__.py _build_system_message / _build_user_message;
    # add_output_format_instructions with the rationale field first)
    for case, instructions, variables, result in (
        (
            "instructions__yes_no",
            "Does the response in {{ outputs }} answer the question in {{ inputs }}?",
            {"inputs": {"question": Q}, "outputs": A},
            {"result_type": "yes_no"},
        ),
        (
            "instructions__int",
            "Rate from 1 to 5 how well {{ outputs }} matches {{ expectations }}.",
            {"outputs": A, "expectations": {"expected_response": "Paris"}},
            {"result_type": "int", "min": 1, "max": 5},
        ),
        (
            "instructions__labels",
            "Classify the tone of {{ outputs }}.",
            {"outputs": A},
            {"result_type": "labels", "labels": ["formal", "casual"]},
        ),
    ):
        base = format_prompt(ns["INSTRUCTIONS_JUDGE_SYSTEM_PROMPT"], instructions=instructions)
        fields = [("rationale", "Detailed explanation for the evaluation"), ("result", "The evaluation rating/result")]
        json_format = "{\n" + ",\n".join(f'    "{n}": "{d}"' for n, d in fields) + "\n}"
        system = (
            base
            + f"""

Please provide your assessment in the following JSON format only (no markdown):

{json_format}"""
        )
        order = []
        for v in re.findall(r"\{\{\s*(\w+)\s*\}\}", instructions):
            if v not in order:
                order.append(v)
        user = "\n".join(f"{v}: {json.dumps(variables[v], default=str, indent=2)}" for v in order if v in variables)
        add(
            case,
            "",
            variables,
            [("system", system), ("user", user)],
            factory={"fn": "make_instructions_judge", "args": {"name": case, "instructions": instructions, **result}},
        )

    # custom_prompt_judge.py: format_prompt, remove [[ ]], strip, append the JSON suffix
    template = (
        "You will look at the response and determine the formality of the response.\n\n"
        "<request>{{request}}</request>\n<response>{{response}}</response>\n\n"
        "You must choose one of the following categories.\n\n"
        "[[formal]]: The response is very formal.\n[[semi_formal]]: The response is somewhat formal.\n"
        "[[not_formal]]: The response is not formal.\n"
    )
    prompt = format_prompt(template, request=Q, response=A)
    prompt = re.sub(r"\[\[([\w ]+)\]\]", r"\1", prompt)
    suffix = """
Answer ONLY in JSON and NOT in markdown, following the format:

{
    "rationale": "Reason for the decision. Start each rationale with `Let's think step by step`.",
    "result": "The category chosen."
}
"""
    add(
        "custom_prompt",
        "",
        {"request": Q, "response": A},
        [("user", f"{prompt.strip()}\n\n{suffix}")],
        factory={
            "fn": "make_custom_prompt_judge",
            "args": {
                "name": "formality",
                "prompt_template": template,
                "numeric_values": {"formal": 1.0, "semi_formal": 0.5, "not_formal": 0.0},
            },
        },
    )
    return cases


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
