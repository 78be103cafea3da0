"""`localjudge models list | verify NAME | options`: the model registry and the model backends."""

from __future__ import annotations

import json

import click


@click.group(name="models")
def models_group() -> None:
    """The model registry (models/models.toml) and the model backends."""


@models_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def models_list(as_json: bool) -> None:
    """Known models: name, licence, where the file comes from, chat template."""
    from ..models import registry

    reg = registry()
    rows = []
    for name, e in reg.get("models", {}).items():
        if "package" in e:
            where = f"package {e['package']}"
        elif "parts" in e:
            where = "parts of " + e["parts"][0][0].rsplit("_part", 1)[0]
        else:
            where = f"models/{e['file']}"
        rows.append(
            {
                "name": name,
                "default": name == reg.get("default"),
                "license": e.get("license"),
                "from": where,
                "chat_template": e.get("chat_template"),
                "sha256": e.get("sha256"),
                "description": e.get("description"),
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        star = "*" if r["default"] else " "
        click.echo(f"{star} {r['name']:<16} {r['license']:<20} {r['chat_template']:<5} {r['from']}")
        click.echo(f"    {r['description']}")


@models_group.command(name="verify")
@click.argument("name")
def models_verify(name: str) -> None:
    """Recompute NAME's sha256 and compare it with the registry (exit 3 on mismatch)."""
    from ..models import verify_model

    info, digest = verify_model(name)
    state = "OK" if info.sha256 else "not in registry (no expected checksum)"
    click.echo(f"{info.name}: sha256 {digest} {state}\n  {info.path}")


@models_group.command(name="options")
@click.argument("scheme", required=False)
def models_options(scheme: str | None) -> None:
    """The model backends (the scheme of --model) and the options each takes with --option KEY=VALUE."""
    from ..engine.backends import backend_schemes, get_backend
    from ..errors import InputError

    for s in [scheme] if scheme else backend_schemes():
        try:
            b = get_backend(s)
        except InputError as e:
            if scheme:
                raise
            click.echo(f"{s}:  (unavailable: {e})\n")
            continue
        click.echo(f"{s}:  {b.summary}")
        for key, ann, desc in b.describe_options():
            click.echo(f"  {key:<15} {ann:<12} {desc}")
        click.echo("")
