"""Agent evaluation: MLflow's trace-based instructions judge, with tools, on a local model.

    from localjudge.agent import judge_trace
    r = judge_trace("examples/traces/rag_agent.mlflow.json", "Is the answer grounded in the retrieved documents?")

`TraceJudge` holds a configured judge (instructions, result type, iteration cap, limits) and judges
one trace (`judge`), one row's trace value (`judge_value`, bad traces become unscored results) or a
whole column (`judge_column`). It implements the judge
contract, so `localjudge.evaluate(data, judges=[TraceJudge(...)])` judges a `trace` column.
See docs/traces.md for the two trace formats read.
"""

from .actions import ActionFormat, RatingAction, RatingType, ToolAction
from .loop import INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE, TraceJudge, judge_trace, render_trace_prompt
from .tools import TOOL_SPECS, ToolLimits, TraceTools, clip
from .trace import Span, SpanEvent, Trace, load_trace, parse_trace

__all__ = [
    "ActionFormat",
    "INSTRUCTIONS_JUDGE_TRACE_PROMPT_TEMPLATE",
    "RatingAction",
    "RatingType",
    "Span",
    "SpanEvent",
    "TOOL_SPECS",
    "ToolAction",
    "ToolLimits",
    "Trace",
    "TraceJudge",
    "TraceTools",
    "clip",
    "judge_trace",
    "load_trace",
    "parse_trace",
    "render_trace_prompt",
]
