"""`localjudge models list | info NAME | verify NAME | pull NAME | add PATH | optimize NAME | options`: the model registry, the
models pulled from a hub, added by hand or converted to a faster weight layout, and the model backends."""

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
    from ..models.files import printable
    from ..models.manifest import entry_exists, read_manifest
    from ..models.registry import registry

    reg = registry()
    local = read_manifest()
    rows = []
    for name, e in reg.get("models", {}).items():
        if "package" in e:
            where = f"package {e['package']}"
        elif "parts" in e:
            where = "parts of " + e["parts"][0][0].rsplit("_part", 1)[0]
        elif "hub" in e:
            got = entry_exists(local.get(name))
            where = f"hub {e['hub']} ({e.get('size', 'size unknown')}, {'downloaded' if got else 'not downloaded: models pull ' + name}"
            # unpinned: no published digest was checked, so the first pull's sha256 is recorded, not verified
            where += ")" if e.get("sha256") else "; unverified: no published sha256 pinned, the first pull records its digest)"
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
                "verified": bool(e.get("sha256")),  # the file is checked against a pinned, published digest
                "description": e.get("description"),
            }
        )
    for name, e in local.items():
        if name in reg.get("models", {}):
            continue
        if e.get("source") == "optimize":
            src = e.get("optimized_from") or {}
            how = f"converted from {src.get('model')} ({src.get('type')} to {e.get('type')})"
        else:
            how = f"hub {e.get('repo')}" if e.get("source") == "hub" else f"added from {e.get('added_from')}"
        rows.append(
            {
                "name": name,
                "default": False,
                "license": (e.get("gguf") or {}).get("license"),
                "from": f"{how} (local)",
                "chat_template": "gguf",
                "sha256": e.get("sha256"),
                "verified": False,
                "description": f"{(e.get('gguf') or {}).get('architecture')} GGUF, sha256 recorded on first "
                f"{'conversion' if e.get('source') == 'optimize' else e.get('source')} (unpinned)",
            }
        )
    rows = printable(rows, keep="\n\t")  # license and architecture come from model files
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    rows = printable(rows)
    for r in rows:
        star = "*" if r["default"] else " "
        click.echo(f"{star} {r['name']:<22} {str(r['license']):<20} {str(r['chat_template']):<5} {r['from']}")
        click.echo(f"    {r['description']}")


@models_group.command(name="verify")
@click.argument("name")
def models_verify(name: str) -> None:
    """Recompute NAME's sha256 and compare it with the registry (exit 3 on mismatch)."""
    from ..models.registry import verify_model

    info, digest = verify_model(name)
    if not info.sha256:
        state = "not in registry (no expected checksum)"
    elif info.digest_source == "models.toml":
        state = "OK (pinned in models.toml)"
    else:
        state = (
            f"OK, unpinned: matches the digest {info.digest_source.removesuffix(' (unpinned)')}; no public pin to compare with"
        )
    click.echo(f"{info.name}: sha256 {digest} {state}\n  {info.path}")


@models_group.command(name="pull")
@click.argument("spec")
@click.option("--name", default=None, help="Local name for an hf: pull (default: from the file name).")
@click.option("--force", is_flag=True, help="Download again even if the model is present (discards a partial transfer).")
def models_pull(spec: str, name: str | None, force: bool) -> None:
    """Download a model: a curated NAME (see `models list`) or hf:OWNER/REPO/FILE.gguf[@REVISION].

    Only when asked; resumable after an interruption (run it again); the sha256 is checked against the
    registry's pin, or recorded (unpinned). Honours HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE."""
    from ..models.hub import pull

    try:
        got = pull(spec, name=name, force=force, say=lambda m: click.echo(m, err=True))
    except KeyboardInterrupt:
        click.echo("Interrupted; the partial download is kept: run the same command again to resume.", err=True)
        raise SystemExit(130) from None
    if got["status"] == "present":
        click.echo(f"{got['name']}: already present at {got['path']} (sha256 {got['sha256'][:16]}…); --force pulls again")
        return
    pinned = "matches the registry's pin" if got["pinned"] else "recorded (unpinned: no public pin)"
    click.echo(
        f"{got['name']}: pulled {got['size'] / 1e6:,.1f} MB, sha256 {got['sha256']} {pinned}\n  use it: --model {got['name']}"
    )


@models_group.command(name="add")
@click.argument("path", type=click.Path(dir_okay=False, path_type=str))
@click.option("--name", default=None, help="Local name (default: from the file name); a curated name checks its pin.")
@click.option("--link", is_flag=True, help="Use the file where it lies instead of copying it (it must stay there).")
@click.option("--force", is_flag=True, help="Replace a model of the same name.")
def models_add(path: str, name: str | None, link: bool, force: bool) -> None:
    """Bring a GGUF file that arrived some other way (air-gapped sites) into the models home."""
    from ..models.files import add_model, printable

    got = add_model(path, name=name, link=link, force=force)
    g = printable(got["gguf"])
    how = "linked" if link else "copied"
    click.echo(
        f"{got['name']}: {how} {got['size'] / 1e6:,.1f} MB, sha256 {got['sha256']}"
        f"{' (matches the pin)' if got['pinned'] else ' (recorded)'}\n"
        f"  {g.get('architecture')}, context {g.get('context_length')}, {g.get('quantisation')}, "
        f"chat template {'yes' if g.get('chat_template') else 'none'}; use it: --model {got['name']}"
    )


@models_group.command(name="optimize")
@click.argument("name")
@click.option(
    "--type",
    "type_name",
    default=None,
    help="Weight type to write (BF16, F16, Q4_0, Q8_0, IQ4_NL); default: the rule for this CPU.",
)
@click.option("--name", "new_name", default=None, help="Name of the converted model (default: NAME-TYPE).")
@click.option("--force", is_flag=True, help="Convert again when the converted model exists.")
@click.option("--threads", type=click.IntRange(1, 256), default=None, help="CPU threads (default: the physical cores).")
@click.option("--no-measure", is_flag=True, help="Skip measuring prompt and decode speed of both files.")
def models_optimize(
    name: str, type_name: str | None, new_name: str | None, force: bool, threads: int | None, no_measure: bool
) -> None:
    """Convert NAME's weights to a type this CPU's llama.cpp computes faster, as a new local model (the original
    stays as it is); prints prompt and decode speed before and after. Only when asked, never for a user's file."""
    from ..engine.layout import optimize

    got = optimize(name, type_name=type_name, name=new_name, force=force, threads=threads, speeds=not no_measure)
    click.echo(
        f"{got.name}: {got.source} converted from {got.source_type} to {got.type} by {got.chose}, "
        f"{got.size / 1e6:,.1f} MB, sha256 {got.sha256}\n  use it: --model {got.name}"
    )
    if got.before is not None and got.after is not None:
        b, a = got.before, got.after
        click.echo(
            f"  prompt {b.prompt_tok_s:,.0f} -> {a.prompt_tok_s:,.0f} tok/s ({a.prompt_tok_s / b.prompt_tok_s:.2f}x), "
            f"decode {b.decode_tok_s:,.0f} -> {a.decode_tok_s:,.0f} tok/s ({a.decode_tok_s / b.decode_tok_s:.2f}x), "
            f"{a.threads} thread{'s' if a.threads > 1 else ''}; verdicts can differ from the original's: compare on your rows"
        )
        if a.prompt_tok_s < b.prompt_tok_s:
            click.echo(f"  {got.type} was not faster here; the original stays the better choice (remove it: delete {got.path})")


@models_group.command(name="info")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def models_info(name: str, as_json: bool) -> None:
    """What is known about NAME: file, size, licence, digest (pinned or not), GGUF metadata."""
    from ..engine.layout import layout_status
    from ..models.files import model_info, printable
    from ..models.registry import resolve_model

    facts = model_info(name)
    if facts.get("downloaded") and (status := layout_status(resolve_model(name))) is not None:
        facts["layout"] = status  # the default model: the file it loads on this CPU (engine/layout.py)
    info = printable(facts, keep="\n\t")  # GGUF metadata is untrusted: no escape reaches the terminal
    if as_json:
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    info = printable(info)
    w = max(len(k) for k in info)
    for k, v in info.items():
        if v is None or v == [] or v == "":
            continue
        click.echo(f"{k.ljust(w)}  {', '.join(map(str, v)) if isinstance(v, list) else v}")


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
