"""Copies of MLflow's own prompt helpers and its v1 metrics' few-shot examples, for scripts/golden/make_golden.py.

`format_prompt`, `PromptTemplate`, `EvaluationExample.__str__`, `format_args_string` and `v1_prompt` render prompts
the way MLflow's source does (Apache-2.0, see NOTICE); `V1_EXAMPLES` holds the v1.py few-shot examples the MLflow
source text elides, verbatim. `serialise` writes messages in the golden files' form.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any


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
