"""`localjudge trace`: judge an agent trace with tools (MLflow's trace-based instructions judge).

    localjudge trace --trace examples/traces/rag_agent.mlflow.json --instructions "Is the answer grounded?"

The same as `localjudge judge instructions --trace FILE --instructions TEXT`. Parsing and printing
only; the work is `localjudge.agent.TraceJudge`.
"""

from __future__ import annotations

import json
import sys

import click

from ..engine.base import DecodeOptions
from ..store.results import JudgeResult
from .options import ModelChoice, TraceChoice, decode_options, model_options, trace_options

TRACE_FIELD_TOKENS = 48  # the trace judge's default budget per free-text field


def format_trace_result(r: JudgeResult) -> str:
    """A short human summary of a trace judgement."""
    d = r.details
    calls = ", ".join(
        f"{c['name']}({', '.join(f'{k}={v!r}' for k, v in c['arguments'].items())})" for c in d.get("tool_calls", [])
    )
    lines = [f"result: {json.dumps(r.value)} (score {r.score})" if r.scored else f"unscored: {r.unscored_reason} ({r.error})"]
    if r.rationale:
        lines.append(f"rationale: {r.rationale}")
    lines.append(f"tool calls: {calls or 'none'}")
    spa = d.get("seconds_per_action")
    lines.append(
        f"actions: {d.get('actions', 0)}"
        + (f", {spa:.2f} s/action" if spa is not None else "")
        + f", trace {d.get('trace_id', '?')} ({d.get('n_spans', '?')} spans, {d.get('trace_format', '?')})"
    )
    return "\n".join(lines)


def judge_trace_file(trace: TraceChoice, model: ModelChoice, decode: DecodeOptions) -> JudgeResult:
    """Build the trace judge, read the trace (a bad file fails before the model loads), judge it."""
    from ..agent import TraceJudge, load_trace

    assert trace.path is not None and trace.instructions is not None
    judge = TraceJudge(
        trace.instructions,
        trace.result_type,
        max_iterations=trace.max_iterations,
        max_tool_calls=trace.max_tool_calls,
        field_tokens=decode.field_tokens or TRACE_FIELD_TOKENS,
    )
    tr = load_trace(trace.path)
    engine = model.ref().engine()
    return judge.judge(tr, engine, decode.model_copy(update={"field_tokens": None}))


@click.command(name="trace")
@trace_options(required=True)
@decode_options(verdict=False, field_tokens_default=TRACE_FIELD_TOKENS)
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@model_options()
def trace_cmd(trace: TraceChoice, decode: DecodeOptions, as_json: bool, model: ModelChoice) -> None:
    """Judge an agent trace against instructions, reading it with tools (MLflow's trace judge).

    Exit 0 when scored, 1 when unscored (no rating within --max-iterations)."""
    r = judge_trace_file(trace, model, decode)
    click.echo(r.model_dump_json(indent=2) if as_json else format_trace_result(r))
    sys.exit(0 if r.scored else 1)
