"""`localjudge judge` (one judgement, typed JSON out) and `localjudge parse` (any text, the same parser)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .. import jsonio
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
                p[k] = jsonio.loads(v)
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
@click.option(
    "--conversation",
    "conversation_file",
    default=None,
    metavar="FILE",
    help="Judge a conversation: a JSON file (- reads stdin) holding an OpenAI messages list, or an object with "
    "`messages` and other columns (id, expected_tool_calls, judge variables), as `run` reads a row.",
)
@click.option(
    "--granularity",
    type=click.Choice(["session", "turn", "tool_call"]),
    default=None,
    help="With --conversation: one result for the conversation (session, the default, printed as `judge` prints one), "
    "or one per turn with the turns before it (--window), or one per assistant tool call (JSON lines, one per row).",
)
@click.option("--window", type=click.IntRange(1), default=10, show_default=True, help="With --granularity turn: turns each sees.")
@click.option(
    "--truncate-conversation",
    is_flag=True,
    help="With --conversation: a prompt that does not fit the context keeps its last turns that fit; default: it is "
    "an unscored prompt_too_long result naming the tokens needed.",
)
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
    conversation_file: str | None,
    granularity: str | None,
    window: int,
    truncate_conversation: bool,
    trace: TraceChoice,
    model: ModelChoice,
    trust: TrustChoice,
) -> None:
    """Judge one example with NAME (a catalog judge, or an output format with --prompt); prints JSON.

    `judge instructions --trace FILE --instructions TEXT [--result TYPE]` judges an agent trace with tools
    (the same as `localjudge trace`). `judge NAME --conversation FILE [--granularity turn]` judges a conversation
    as `run` judges one. Exit 0 when scored, 1 when unscored."""
    from ..api import run_format
    from ..formats import format_kinds
    from ..judges import get_judge

    if conversation_file is None and (granularity is not None or window != 10 or truncate_conversation):
        raise click.UsageError("--granularity, --window and --truncate-conversation go with --conversation FILE")
    if conversation_file is not None:
        if fields or prompt or params or trace.path or trace.instructions or trust.kwargs():
            raise click.UsageError(
                "--field, --prompt, --param, --trace and the trust options do not apply to --conversation; "
                "put other judge variables in the file's object beside `messages`"
            )
        opts = decode.model_copy(update={"constrained": not unconstrained})
        _judge_conversation_file(
            name, conversation_file, granularity or "session", window, truncate_conversation, judges_dir, opts, model
        )
        return
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


def _judge_conversation_file(
    name: str,
    path: str,
    granularity: str,
    window: int,
    truncate: bool,
    judges_dir: str | None,
    opts: DecodeOptions,
    model: ModelChoice,
) -> None:
    """Prints a session result as `judge` prints one (indented JSON), per-turn / per-tool-call results as JSON lines
    (each what `run` writes to results.jsonl for the row: position, inputs, result); exit 1 when any is unscored."""
    from ..conversations.readers import DEFAULT_BOUNDS
    from ..run.single import judge_conversation

    label = "stdin" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read(DEFAULT_BOUNDS.max_bytes + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(DEFAULT_BOUNDS.max_bytes + 1)
    except OSError as e:
        raise InputError(f"--conversation {path}: cannot read it ({e.strerror or e}); give a JSON file or - for stdin") from None
    rows = judge_conversation(
        name,
        data,
        granularity=granularity,  # type: ignore[arg-type]  # click.Choice checked it
        window=window,
        truncate=truncate,
        model=model.ref(),
        options=opts,
        judges_dir=judges_dir,
        source=label,
    )
    if granularity == "session":
        click.echo(rows[0].result.model_dump_json(indent=2))
    else:
        for r in rows:
            click.echo(r.model_dump_json())
    if not all(r.result.scored for r in rows):
        sys.exit(1)


def _judge_trusted(j: Any, variables: dict[str, Any], ref: Any, opts: DecodeOptions, trust: TrustChoice) -> None:
    """`judge --panel` / `judge --escalate-to`: prints the panel's or cascade's JSON; exit 1 when unscored."""
    from ..ensembles.single import judge_cascade, judge_panel, judge_panel_cascade

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
