"""Command line: a thin click group over the Python API.

    localjudge judge NAME --field input=... [--model M]   one judgement, typed JSON out
    localjudge parse FORMAT < text                         parse any text with the same layer
    localjudge models list | verify NAME                   the model registry
    localjudge judges list | show NAME                     the judge catalog
    localjudge run DATA --judge NAME ...                   batch evaluation (resumable)
    localjudge report RUN / agree RUN                      HTML report, agreement with labels

Errors print one line and exit with the code of their class (see errors.py); --debug shows tracebacks.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .cli_options import decode_options, engine_kwargs, model_options
from .errors import LocalJudgeError


class _Group(click.Group):
    """Turns library errors into one-line messages with documented exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LocalJudgeError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"Error: {e}", err=True)
            ctx.exit(e.exit_code)


@click.group(cls=_Group)
@click.version_option(package_name="localjudge")
@click.option("--debug", is_flag=True, help="Show full tracebacks.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """localjudge: LLM-as-a-judge on your own machine, outputs valid by construction."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def parse_assignments(pairs: tuple[str, ...], what: str) -> dict[str, Any]:
    """`name=value` pairs; a value that starts with [ or { is read as JSON (lists stay lists)."""
    from .errors import InputError

    out: dict[str, Any] = {}
    for p in pairs:
        if "=" not in p:
            raise InputError(f"{what} {p!r} must look like name=value")
        k, v = p.split("=", 1)
        if v[:1] in "[{":
            try:
                v = json.loads(v)
            except json.JSONDecodeError as e:
                raise InputError(f"{what} {k!r} starts like JSON but is not valid JSON ({e.msg}); quote it as text") from None
        elif v.startswith("@"):
            try:
                with open(v[1:], encoding="utf-8") as f:
                    v = f.read()
            except OSError as e:
                raise InputError(f"{what} {k!r}: cannot read file {v[1:]!r} ({e.strerror})") from None
        out[k.strip()] = v
    return out


def _format_from(kind: str, params: tuple[str, ...]):
    from .formats import make_format

    p = parse_assignments(params, "--param")
    for k, v in list(p.items()):
        if isinstance(v, str):
            try:
                p[k] = json.loads(v)
            except json.JSONDecodeError:
                pass
    return make_format(kind, **p)


@main.command(name="judge")
@click.argument("name")
@click.option("--field", "-f", "fields", multiple=True, help="Judge variable as name=value (value @file reads a file; [..] is JSON).")
@click.option("--prompt", default=None, help="With a FORMAT name instead of a judge: the prompt to answer.")
@click.option("--param", "params", multiple=True, help="With a FORMAT name: format parameter name=value (e.g. min=1).")
@click.option("--judges-dir", default=None, type=click.Path(exists=True, file_okay=False), help="Extra judge files.")
@decode_options
@click.option("--unconstrained", is_flag=True, help="Decode without the format constraint (for comparison only).")
@click.option("--trace", "trace_path", default=None, help="With NAME 'instructions': an agent trace (MLflow or OpenTelemetry JSON).")
@click.option("--instructions", default=None, help="With --trace: what to check.")
@click.option("--result", "result_type", default="yes/no", show_default=True,
              help="With --trace: yes/no, bool, int:1-5, float:0-1[:decimals], labels:a,b,c.")
@click.option("--max-iterations", default=10, show_default=True, type=int, help="With --trace: actions before giving up.")
@click.option("--max-tool-calls", default=None, type=int, help="With --trace: after this many tool calls only the rating may follow.")
@model_options
def judge_cmd(name, fields, prompt, params, judges_dir, temperature, seed, field_tokens, fast, probs, unconstrained,
              trace_path, instructions, result_type, max_iterations, max_tool_calls,
              model, gpu_layers, n_ctx, threads, chat_template, n_batch):
    """Judge one example with NAME (a catalog judge, or an output format with --prompt); prints JSON.

    `judge instructions --trace T --instructions "..." --result yes/no` runs the trace judge with tools."""
    from .api import judge, run_format
    from .engine.base import DecodeOptions
    from .formats import FORMATS

    if trace_path:
        if name != "instructions" or not instructions:
            raise click.UsageError("--trace goes with: judge instructions --trace FILE --instructions TEXT [--result TYPE]")
        from .agent_cli import run_trace_cli

        r = run_trace_cli(trace_path, instructions, result_type, max_iterations, max_tool_calls, field_tokens or 48,
                          model, n_ctx, as_json=True)
        sys.exit(0 if r.scored else 1)

    opts = DecodeOptions(temperature=temperature, seed=seed, field_tokens=field_tokens, constrained=not unconstrained,
                         fast=fast, probs=probs)
    ekw = engine_kwargs(gpu_layers, n_ctx, threads, chat_template, n_batch)
    if name in FORMATS:
        if fields:
            raise click.UsageError("a format takes --prompt, not --field; use a judge name for judge variables")
        res = run_format(_format_from(name, params), prompt or "", model=model, options=opts, engine_kwargs=ekw)
    else:
        res = judge(name, model=model, options=opts, judges_dir=judges_dir, engine_kwargs=ekw,
                    **parse_assignments(fields, "--field"))
    click.echo(res.model_dump_json(indent=2))
    if not res.scored:
        sys.exit(1)


@main.command(name="parse")
@click.argument("format_name", metavar="FORMAT")
@click.option("--param", "params", multiple=True, help="Format parameter name=value (e.g. min=0, labels='[\"A\",\"B\"]').")
def parse_cmd(format_name, params):
    """Parse text from stdin with FORMAT's parser; prints the typed verdict (exit 2 on a parse error)."""
    fmt = _format_from(format_name, params)
    text = sys.stdin.read()
    v = fmt.parse(text)
    click.echo(json.dumps({"format": fmt.describe(), "verdict": v.model_dump(), "value": fmt.value(v),
                           "score": fmt.normalise(v), "rationale": fmt.rationale(v)}, indent=2, ensure_ascii=False))


@main.group(name="models")
def models_group():
    """The model registry (models/models.toml)."""


@models_group.command(name="list")
@click.option("--json", "as_json", is_flag=True)
def models_list(as_json):
    """Known models: name, licence, where the file comes from, chat template."""
    from .models import registry

    reg = registry()
    rows = []
    for name, e in reg.get("models", {}).items():
        where = f"package {e['package']}" if "package" in e else ("parts of " + e["parts"][0][0].rsplit("_part", 1)[0]) if "parts" in e else f"models/{e['file']}"
        rows.append({"name": name, "default": name == reg.get("default"), "license": e.get("license"), "from": where,
                     "chat_template": e.get("chat_template"), "sha256": e.get("sha256"), "description": e.get("description")})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        star = "*" if r["default"] else " "
        click.echo(f"{star} {r['name']:<16} {r['license']:<20} {r['chat_template']:<5} {r['from']}")
        click.echo(f"    {r['description']}")


@models_group.command(name="verify")
@click.argument("name")
def models_verify(name):
    """Recompute NAME's sha256 and compare it with the registry (exit 3 on mismatch)."""
    from .models import verify_model

    info, digest = verify_model(name)
    state = "OK" if info.sha256 else "not in registry (no expected checksum)"
    click.echo(f"{info.name}: sha256 {digest} {state}\n  {info.path}")


def _register() -> None:
    """Commands that live next to the library code they drive (each imports its heavy parts lazily)."""
    from .agent_cli import judge_trace_cmd
    from .judge_cli import judges_group
    from .report_cli import agree_cmd, report_cmd
    from .run_cli import run_cmd

    for cmd in (judges_group, run_cmd, report_cmd, agree_cmd, judge_trace_cmd):
        main.add_command(cmd)


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
