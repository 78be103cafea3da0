"""`localjudge serve`: an OpenAI-compatible judge server whose structured outputs are valid by construction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from .options import ModelChoice, http_limit_options, model_options

if TYPE_CHECKING:  # the serve extra's modules load only when a server is set up
    from ..engine.base import Engine, ModelIdentity
    from ..serve import ServeConfig


@click.command(name="serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; beyond loopback needs --api-key.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option(
    "--api-key", envvar="LOCALJUDGE_API_KEY", default=None, help="Bearer key clients must send (env LOCALJUDGE_API_KEY)."
)
@click.option("--model-name", default=None, help="The name clients send as `model` (default: the model's id).")
@click.option(
    "--max-pending", default=256, show_default=True, type=click.IntRange(1), help="Requests queued or decoding; more get 429."
)
@click.option("--max-body-mb", default=4.0, show_default=True, type=click.FloatRange(0.001), help="Largest request body.")
@click.option(
    "--field-tokens",
    default=80,
    show_default=True,
    type=click.IntRange(1),
    help="Token budget of each free-text field of a schema.",
)
@click.option(
    "--text-tokens",
    default=512,
    show_default=True,
    type=click.IntRange(1),
    help="Longest free-text answer when a request gives no max_tokens.",
)
@click.option(
    "--compile-timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(1),
    help="Seconds a client schema's automaton may take to build.",
)
@click.option(
    "--compile-memory-mb",
    default=2048,
    show_default=True,
    type=click.IntRange(256),
    help="Memory a client schema's automaton build may use.",
)
@click.option(
    "--no-precompile", is_flag=True, help="Do not build the json_object automaton at start (built on first use instead)."
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="A Host name the server answers to besides the loopback names (repeatable; '*': any).",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    help="A web origin (https://app.example) allowed to call the server from a browser (repeatable; default: none).",
)
@http_limit_options
@click.option(
    "--shutdown-timeout",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds SIGTERM waits for generations in flight before cancelling them.",
)
@click.option(
    "--cache-max-mb",
    default=1024.0,
    show_default=True,
    type=click.FloatRange(0.001),
    help="Size cap of the on-disk automaton cache (least recently used out).",
)
@click.option(
    "--schema-constraint",
    default="llguidance",
    show_default=True,
    type=click.Choice(["llguidance", "automaton"]),
    help="The engine that constrains client JSON schemas: llguidance (lazy, millisecond compiles), or "
    "outlines-core's automaton (the judges' engine; built out of process under --compile-timeout, cached on disk).",
)
@click.option(
    "--alias",
    "aliases",
    multiple=True,
    metavar="NAME=MODEL",
    help="One more served name for the model, with the output contract of the --format at the same position "
    "(repeatable): applied when a request sends no response_format.",
)
@click.option(
    "--format",
    "alias_formats",
    multiple=True,
    metavar="FORMAT",
    help="The default output contract of the matching --alias: a format kind (yes_no_json, score_json, ...), "
    "a JSON schema file (*.json) or a Lark grammar file (*.lark).",
)
@click.option(
    "--no-catalog-formats",
    is_flag=True,
    help="Answer known judge prompts (docs/serve.md, the catalog list) under the client's schema only, not "
    "tightened to their judge's own output contract.",
)
@click.option("--log-level", default="warning", show_default=True, type=click.Choice(["debug", "info", "warning", "error"]))
@model_options(parallel=True)
def serve_cmd(
    host: str,
    port: int,
    api_key: str | None,
    model_name: str | None,
    max_pending: int,
    max_body_mb: float,
    field_tokens: int,
    text_tokens: int,
    compile_timeout: float,
    compile_memory_mb: int,
    no_precompile: bool,
    allowed_hosts: tuple[str, ...],
    cors_origins: tuple[str, ...],
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    shutdown_timeout: float,
    cache_max_mb: float,
    schema_constraint: str,
    aliases: tuple[str, ...],
    alias_formats: tuple[str, ...],
    no_catalog_formats: bool,
    log_level: str,
    model: ModelChoice,
) -> None:
    """Serve one model through the OpenAI chat-completions API (MLflow, DeepEval, RAGAS, the openai client):
    `response_format` json_schema / json_object and tool calls are constrained by construction."""
    params = dict(locals())  # the parsed flags, as `configure` takes them (first: nothing else is local yet)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise InputError("localjudge serve needs the serve extra: pip install 'localjudge[serve]'") from None
    from ..serve import serve

    setup = configure(params)
    serve(setup.engine, host, port, setup.config, identity=setup.identity, log_level=log_level)


@dataclass
class Setup:
    """What `localjudge serve` serves, decided from its flags: the engine, its `ServeConfig` and identity."""

    engine: Engine
    config: ServeConfig
    identity: ModelIdentity


def configure(params: dict[str, Any], engine: Engine | None = None) -> Setup:
    """The engine and `ServeConfig` that `localjudge serve` with these flags (`serve_cmd`'s parameters, as it receives
    them: `options.model_choice` of click's parsed ones) serves:
    refused flags raise before anything loads. `engine` given: served instead of loading --model (the flags still
    checked; its identity is the engine's own). The CLI and the in-process test app (tests/serve_support.py `serve_inprocess`) both
    build their server here."""
    from ..serve import ServeConfig
    from ..serve.core.aliases import check_models, parse_aliases
    from ..serve.server import is_loopback

    p = params
    if not is_loopback(p["host"]) and not p["api_key"]:  # refuse before loading anything
        raise InputError(
            f"--host {p['host']} would expose the judge beyond this machine; give --api-key KEY (or set LOCALJUDGE_API_KEY), "
            "or bind 127.0.0.1"
        )
    served = parse_aliases(p["aliases"], p["alias_formats"], p["field_tokens"])  # an AliasError (exit 2) before loading
    model: ModelChoice = p["model"]
    ref = None
    if engine is None:
        ref = model.ref()
        engine = ref.engine()
    check_models(served, p["model_name"] or engine.model_id)
    config = ServeConfig(
        model_name=p["model_name"],
        api_key=p["api_key"],
        max_pending=p["max_pending"],
        max_body_bytes=int(p["max_body_mb"] * (1 << 20)),
        field_tokens=p["field_tokens"],
        text_tokens=p["text_tokens"],
        compile_seconds=p["compile_timeout"],
        compile_memory_mb=p["compile_memory_mb"],
        precompile=not p["no_precompile"],
        allowed_hosts=p["allowed_hosts"],
        cors_origins=p["cors_origins"],
        header_timeout=p["header_timeout"],
        body_timeout=p["body_timeout"],
        max_connections=p["max_connections"],
        shutdown_timeout=p["shutdown_timeout"],
        cache_max_mb=p["cache_max_mb"],
        schema_constraint=p["schema_constraint"],
        aliases=served,
        catalog_formats=not p["no_catalog_formats"],
    )
    return Setup(engine, config, ref.identity() if ref is not None else engine.identity())
