"""The trace judge's prompt: MLflow's system prompt (verbatim) with the rating fields and instructions
filled in, and localjudge's own user message listing the tools and the JSON action shapes."""

from __future__ import annotations

from .actions import RatingType
from .tools import TOOL_SPECS

# Verbatim from MLflow, mlflow/genai/judges/instructions_judge/constants.py (JUDGE_BASE_PROMPT and
# INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE).
# Copyright the MLflow authors, licensed under the Apache License, Version 2.0.
JUDGE_BASE_PROMPT = """You are an expert judge tasked with evaluating the performance of an AI
agent on a particular query. You will be given instructions that describe the criteria and
methodology for evaluating the agent's performance on the query."""

INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE = (
    JUDGE_BASE_PROMPT
    + """ Your job is to analyze a trace of the agent's execution on the
query and provide an evaluation rating in accordance with the instructions.

A *trace* is a step-by-step record of how the agent processed the query, including the input query
itself, all intermediate steps, decisions, and outputs. Each step in a trace is represented as a
*span*, which includes the inputs and outputs of that step, as well as latency information and
metadata.

The instructions containing the evaluation criteria and methodology are provided below, and they
refer to a placeholder called {{{{ trace }}}}. To read the actual trace, you will need to use the
tools provided to you. These tools enable you to 1. fetch trace metadata, timing, & execution
details, 2. list all spans in the trace with inputs and outputs, 3. search for specific text or
patterns across the entire trace, and much more. These tools do *not* require you to specify a
particular trace; the tools will select the relevant trace automatically (however, you *will* need
to specify *span* IDs when retrieving specific spans).

In order to follow the instructions precisely and correctly, you must think methodically and act
step-by-step:

1. Thoroughly read the instructions to understand what information you need to gather from the trace
   in order to perform the evaluation, according to the criteria and methodology specified.
2. Look at the tools available to you, and use as many of them as necessary in order to gather the
   information you need from the trace.
3. Carefully read and analyze the information you gathered.
4. Think critically about whether you have enough information to produce an evaluation rating in
   accordance with the instructions. If you do not have enough information, or if you suspect that
   there is additional relevant information in the trace that you haven't gathered, then go back
   to steps 2 and 3.
5. Once you have gathered enough information, provide your evaluation rating in accordance with the
   instructions.

You *must* format your evaluation rating as a JSON object with the following fields. Pay close
attention to the field type of the evaluation rating (string, boolean, numeric, etc.), and ensure
that it conforms to the instructions.

Evaluation Rating Fields
------------------------
{evaluation_rating_fields}

Instructions
------------------------
{instructions}
"""
)

RATIONALE_DESCRIPTION = "a concise explanation of the rating, citing what the tools showed you in the trace"


def rating_fields(rating: RatingType, rationale_first: bool = False) -> str:
    """`{evaluation_rating_fields}`: one `- name (type): description` line per field (MLflow's layout;
    result first unless `rationale_first`, as in MLflow)."""
    lines = [f"- result ({rating.type_name()}): {rating.describe()}", f"- rationale (str): {RATIONALE_DESCRIPTION}"]
    return "\n".join(reversed(lines) if rationale_first else lines)


def render_trace_prompt(instructions: str, rating: RatingType, rationale_first: bool = False) -> str:
    """MLflow's trace-judge system prompt with the instructions and the rating fields filled in."""
    return INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE.format(
        evaluation_rating_fields=rating_fields(rating, rationale_first), instructions=instructions
    )


def rating_example(rating: RatingType, rationale_first: bool = False) -> str:
    """An example rating object in the order the action format writes its fields."""
    if rationale_first:
        return f'{{"rationale": "<rationale>", "result": {rating.example()}}}'
    return f'{{"result": {rating.example()}, "rationale": "<rationale>"}}'


def tools_message(
    rating: RatingType, max_iterations: int, rationale_first: bool = False, max_tool_calls: int | None = None
) -> str:
    """The tool catalogue and the action shapes (localjudge's own text, not MLflow's)."""
    lines = [
        "Tools",
        "------------------------",
        "Reply with exactly one JSON object per turn: one tool call, or your final evaluation rating.",
    ]
    for t in TOOL_SPECS:
        lines.append(f"- {t.name}: {t.description}. Call: {t.example()}")
    lines.append(f"- final evaluation rating: {rating_example(rating, rationale_first)}")
    budget = f" ({max_tool_calls} of them tool calls at most)" if max_tool_calls is not None else ""
    lines.append(f"You may take at most {max_iterations} actions{budget}. Start with a tool call.")
    return "\n".join(lines)
