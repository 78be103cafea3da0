"""`localjudge judges list | show NAME`: the judge catalog on the command line (parse, call, print)."""

from __future__ import annotations

import json

import click

_DIR = click.option(
    "--judges-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="A folder of your own judge .toml files (same validation as the built-ins).",
)


@click.group(name="judges")
def judges_group() -> None:
    """The judge catalog: built-in judges and your own judge files."""


@judges_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_DIR
def judges_list(as_json: bool, judges_dir: str | None) -> None:
    """List every judge: name, kind, output format, variables, source."""
    from ..judges import list_judges
    from ..judges.registry import plugin_problems

    judges = list_judges(judges_dir)
    for problem in plugin_problems():  # a broken plugin adds no judge; the others are listed
        click.echo(f"warning: {problem}", err=True)
    if as_json:
        click.echo(json.dumps([j.info() for j in judges], indent=2, ensure_ascii=False))
        return
    rows = [("NAME", "KIND", "FORMAT", "VARIABLES (optional in [])", "SOURCE")]
    for j in judges:
        fmt = j.format.kind if j.format is not None else "statements+verdict_list"
        variables = ", ".join(j.required_variables + [f"[{v}]" for v in j.optional_variables])
        src = j.spec.source.project if j.spec.source else "user"
        rows.append((j.name, j.kind, fmt, variables, src))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1])


@judges_group.command(name="show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (description, variables, formats, prompt templates).")
@_DIR
def judges_show(name: str, as_json: bool, judges_dir: str | None) -> None:
    """Show one judge: description, variables, output format and its prompt templates."""
    from ..judges import get_judge

    j = get_judge(name, judges_dir=judges_dir)
    info = j.info()
    templates = j.prompt_templates()
    if as_json:
        info["prompt"] = [[{"role": r, "template": t} for r, t in stage] for stage in templates]
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    click.echo(f"{j.name}  ({j.kind}, version {j.version[:15]}…)")
    click.echo(f"  {j.description}")
    if j.spec.source:
        s = j.spec.source
        click.echo(f"  source: {s.project}, licence {s.license or 'unknown'}" + (f"\n  {s.url}" if s.url else ""))
    click.echo("variables:")
    for v in info["variables"]:
        extra = f" (also: {', '.join(v['aliases'])})" if v["aliases"] else ""
        if "choices" in v:
            extra += f" one of {v['choices']}"
        click.echo(f"  {v['name']}{'' if v['required'] else ' [optional]'}{extra}: {v['description']}")
    click.echo("output format:")
    for f in j.formats:
        click.echo(f"  {f.describe() if f is not None else 'verdict_list(n = number of statements)'}")
    click.echo(f"pass threshold: score >= {j.pass_threshold}")
    for i, stage in enumerate(templates):
        title = f"prompt (call {i + 1} of {len(templates)})" if len(templates) > 1 else "prompt"
        click.echo(f"\n--- {title} ---")
        for role, text in stage:
            click.echo(f"[{role}]\n{text}")
