"""Command line for the trace judge: `localjudge judge instructions --trace trace.json ...`.

Click only: parsing and printing. The work is `localjudge.agent.judge_trace` / `TraceJudge`; errors
become `click.ClickException` (with the error's exit code) here and nowhere else. The lead wires
`trace_options` + `run_trace_cli` into the `judge` command, or registers `judge_trace_cmd` as is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from .agent.loop import judge_trace  # re-exported: the library entry point
from .results import JudgeResult

__all__ = ["format_trace_result", "judge_trace", "judge_trace_cmd", "run_trace_cli", "trace_options"]


def trace_options(f: Callable) -> Callable:
    """The trace judge's options, for reuse on another command."""
    opts = [
        click.option("--trace", "trace_path", required=True, help="MLflow trace export or OpenTelemetry span JSON file."),
        click.option("--instructions", required=True, help="What to check; may refer to {{ trace }}."),
        click.option("--result", "result_type", default="yes/no", show_default=True,
                     help="Rating type: yes/no, bool, int:1-5, float:0-1[:decimals], labels:a,b,c (labels:good=1,bad=0)."),
        click.option("--max-iterations", default=10, show_default=True, type=int, help="Actions before giving up (unscored)."),
        click.option("--max-tool-calls", default=None, type=int,
                     help="After this many tool calls only the rating may follow (default: the model decides)."),
        click.option("--field-tokens", default=48, show_default=True, type=int, help="Token budget of each free-text field."),
        click.option("--model", default=None, help="Registry name or GGUF path (default: the embedded model)."),
        click.option("--n-ctx", default=None, type=int, help="Context window in tokens."),
        click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def format_trace_result(r: JudgeResult) -> str:
    """A short human summary of a trace judgement."""
    d = r.details
    calls = ", ".join(f"{c['name']}({', '.join(f'{k}={v!r}' for k, v in c['arguments'].items())})" for c in d.get("tool_calls", []))
    lines = [f"result: {json.dumps(r.value)} (score {r.score})" if r.scored else f"unscored: {r.unscored_reason} ({r.error})"]
    if r.rationale:
        lines.append(f"rationale: {r.rationale}")
    lines.append(f"tool calls: {calls or 'none'}")
    spa = d.get("seconds_per_action")
    lines.append(f"actions: {d.get('actions', 0)}" + (f", {spa:.2f} s/action" if spa is not None else "")
                 + f", trace {d.get('trace_id', '?')} ({d.get('n_spans', '?')} spans, {d.get('trace_format', '?')})")
    return "\n".join(lines)


def run_trace_cli(trace_path: str, instructions: str, result_type: str = "yes/no", max_iterations: int = 10,
                  max_tool_calls: int | None = None, field_tokens: int = 48, model: str | None = None,
                  n_ctx: int | None = None, as_json: bool = False, engine: Any = None) -> JudgeResult:
    """Judge, print, return the result; a `LocalJudgeError` becomes a `ClickException` with its exit code."""
    from .agent import TraceJudge, load_trace
    from .errors import LocalJudgeError

    try:
        judge = TraceJudge(instructions, result_type, max_iterations=max_iterations, max_tool_calls=max_tool_calls,
                           field_tokens=field_tokens)
        trace = load_trace(trace_path)  # a bad file fails before the model loads
        if engine is None:
            from .engine import load_engine

            engine = load_engine(model, **({"n_ctx": n_ctx} if n_ctx else {}))
        r = judge.judge(trace, engine)
    except LocalJudgeError as e:
        exc = click.ClickException(str(e))
        exc.exit_code = e.exit_code
        raise exc from None
    click.echo(r.model_dump_json(indent=2) if as_json else format_trace_result(r))
    return r


@click.command(name="trace")
@trace_options
def judge_trace_cmd(trace_path: str, instructions: str, result_type: str, max_iterations: int, max_tool_calls: int | None,
                    field_tokens: int, model: str | None, n_ctx: int | None, as_json: bool) -> None:
    """Judge an agent trace against instructions, reading it with tools (MLflow's trace judge)."""
    run_trace_cli(trace_path, instructions, result_type, max_iterations, max_tool_calls, field_tokens, model, n_ctx, as_json)
