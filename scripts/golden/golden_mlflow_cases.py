"""The golden cases of MLflow's judges (scripts/golden/make_golden.py): its judge prompts, built-in judges, instructions
and custom-prompt judges and v1 metrics, rendered from seed 000's exec'd namespace with golden_mlflow.py's copies of
MLflow's helpers on the fixed inputs below (shared with the other sources' cases).
"""

from __future__ import annotations

import json
import re
from typing import Any

from scripts.golden.golden_mlflow import EvaluationExample, format_prompt, v1_prompt

# ------------------------------------------------------------------------------------- fixed inputs
Q = "What is the capital of France?"
A = "The capital of France is Paris, a city on the Seine."
CTX = "Paris is the capital and most populous city of France. It lies on the river Seine."
MLQ = "What is MLflow?"
MLA = "MLflow is an open-source platform for the machine learning lifecycle."
MLT = "MLflow is an open-source platform, developed by Databricks, for managing the end-to-end machine learning lifecycle."


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
