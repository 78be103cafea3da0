"""`localjudge judge` (one judgement, typed JSON out) and `localjudge parse` (any text, the same parser)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..datasets import unencodable
from ..engine.base import DecodeOptions
from ..errors import InputError
from ..formats import OutputFormat
from .options import (
    ModelChoice,
    TraceChoice,
    TrustChoice,
    decode_options,
    model_options,
    parse_assignments,
    trace_options,
    trust_options,
)


def format_from(kind: str, params: tuple[str, ...]) -> OutputFormat:
    """A format from its kind and `--param name=value` pairs (values read as JSON where they parse)."""
    from ..formats import make_format

    p = parse_assignments(params, "--param")
    for k, v in list(p.items()):
        if isinstance(v, str):
            try:
                p[k] = json.loads(v)
            except json.JSONDecodeError:
                pass
    return make_format(kind, **p)


@click.command(name="judge")
@click.argument("name")
@click.option(
    "--field", "-f", "fields", multiple=True, help="Judge variable as name=value (value @file reads a file; [..] is JSON)."
)
@click.option("--prompt", default=None, help="With a FORMAT name instead of a judge: the prompt to answer.")
@click.option("--param", "params", multiple=True, help="With a FORMAT name: format parameter name=value (e.g. min=1).")
@click.option("--judges-dir", default=None, type=click.Path(exists=True, file_okay=False), help="Extra judge files.")
@decode_options()
@click.option("--unconstrained", is_flag=True, help="Decode without the format constraint (for comparison only).")
@trace_options(required=False)
@model_options()
@trust_options()
def judge_cmd(
    name: str,
    fields: tuple[str, ...],
    prompt: str | None,
    params: tuple[str, ...],
    judges_dir: str | None,
    decode: DecodeOptions,
    unconstrained: bool,
    trace: TraceChoice,
    model: ModelChoice,
    trust: TrustChoice,
) -> None:
    """Judge one example with NAME (a catalog judge, or an output format with --prompt); prints JSON.

    `judge instructions --trace FILE --instructions TEXT [--result TYPE]` judges an agent trace with tools
    (the same as `localjudge trace`). Exit 0 when scored, 1 when unscored."""
    from ..api import run_format
    from ..formats import format_kinds
    from ..judges import get_judge

    if trace.path or trace.instructions:
        if name != "instructions" or not (trace.path and trace.instructions):
            raise click.UsageError("--trace goes with: judge instructions --trace FILE --instructions TEXT [--result TYPE]")
        if decode.fast or decode.probs or unconstrained or fields or prompt or params:
            raise click.UsageError("--fast, --probs, --unconstrained, --field, --prompt and --param do not apply to --trace")
        from .trace import TRACE_FIELD_TOKENS, judge_trace_file

        decode = decode if decode.field_tokens else decode.model_copy(update={"field_tokens": TRACE_FIELD_TOKENS})
        res = judge_trace_file(trace, model, decode)
    else:
        opts = decode.model_copy(update={"constrained": not unconstrained})
        ref = model.ref()
        if opts.probs and not trust.kwargs():  # a cascade escalates what has no probabilities (its documented fallback)
            from ..engine.capabilities import Capability, require

            require(ref.backend, Capability.TOKEN_PROBS, for_what="--probs (the expected score at the verdict)")
        if name in format_kinds():  # a built-in or an installed plugin's format
            if fields:
                raise click.UsageError("a format takes --prompt, not --field; use a judge name for judge variables")
            fmt = format_from(name, params)
            if not prompt or not prompt.strip():
                raise InputError("the prompt is empty; pass the text the model should answer")
            bad = unencodable(prompt)
            if bad:
                raise InputError(f"--prompt: {bad} (a byte that is not UTF-8?); pass UTF-8 text")
            res = run_format(fmt, prompt, engine=ref.engine(), options=opts)
        else:
            j = get_judge(name, judges_dir=judges_dir)
            variables: dict[str, Any] = parse_assignments(fields, "--field")
            if trust.kwargs():
                _judge_trusted(j, variables, ref, opts, trust)
                return
            res = j.evaluate(ref.engine(), options=opts, **variables)
    click.echo(res.model_dump_json(indent=2))
    if not res.scored:
        sys.exit(1)


def _judge_trusted(j: Any, variables: dict[str, Any], ref: Any, opts: DecodeOptions, trust: TrustChoice) -> None:
    """`judge --panel` / `judge --escalate-to`: prints the panel's or cascade's JSON; exit 1 when unscored."""
    from ..trust.single import judge_cascade, judge_panel, judge_panel_cascade

    if trust.panel is not None and ref.spec is not None:
        raise InputError("--panel names every judge model; drop --model (or give it as a panel member)")
    if trust.panel is not None and (trust.escalate_to is not None or trust.escalate_below is not None):
        kw = trust.kwargs()
        out = judge_panel_cascade(
            j,
            variables,
            trust.panel,
            kw["escalate_to"],
            kw["escalate_below"],
            options=opts,
            model_options=ref.options,
            aggregation=trust.aggregation,
            weights=trust.weights,
        )
        scored = out["result"]["unscored_reason"] is None
    elif trust.panel is not None:
        out = judge_panel(
            j,
            variables,
            trust.panel,
            options=opts,
            model_options=ref.options,
            aggregation=trust.aggregation,
            weights=trust.weights,
        )
        scored = out["panel"]["unscored_reason"] is None
    else:
        kw = trust.kwargs()
        out = judge_cascade(
            j, variables, ref.spec, kw["escalate_to"], kw["escalate_below"], options=opts, model_options=ref.options
        )
        scored = out["result"]["unscored_reason"] is None
    click.echo(json.dumps(out, indent=2, default=str))
    if not scored:
        sys.exit(1)


@click.command(name="parse")
@click.argument("format_name", metavar="FORMAT")
@click.option("--param", "params", multiple=True, help='Format parameter name=value (e.g. min=0, labels=\'["A","B"]\').')
def parse_cmd(format_name: str, params: tuple[str, ...]) -> None:
    """Parse text from stdin with FORMAT's parser; prints the typed verdict (exit 2 on a parse error)."""
    fmt = format_from(format_name, params)
    text = sys.stdin.read()
    v = fmt.parse(text)
    click.echo(
        json.dumps(
            {
                "format": fmt.describe(),
                "verdict": v.model_dump(),
                "value": fmt.value(v),
                "score": fmt.normalise(v),
                "rationale": fmt.rationale(v),
            },
            indent=2,
            ensure_ascii=False,
        )
    )
