"""Options shared by the commands that load a model or judge (kept apart from cli.py so the command
modules can import them without importing the command group)."""

from __future__ import annotations

from typing import Any

import click


def model_options(f):
    """--model, --gpu-layers, --n-ctx, --threads, --n-batch, --chat-template: every command that loads a model."""
    opts = [
        click.option("--model", "-m", default=None, help="Registry name, path to a .gguf, or empty for the default."),
        click.option("--gpu-layers", type=int, default=0, show_default=True, help="Layers to offload to the GPU (-1: all)."),
        click.option("--n-ctx", type=int, default=None, help="Context window (default: min(4096, model's))."),
        click.option("--threads", type=int, default=None, help="CPU threads (default: all cores this process may use)."),
        click.option("--n-batch", type=int, default=None, help="Tokens per llama.cpp batch (default 512)."),
        click.option("--chat-template", default=None, help="'gguf' (from the model), 'raw' (plain text), or a Jinja template."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def decode_options(f):
    """--temperature, --seed, --field-tokens, --fast, --probs: shared by every command that judges."""
    opts = [
        click.option("--temperature", type=float, default=0.0, show_default=True),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--field-tokens", type=int, default=None, help="Token budget per free-text field (default: each format's)."),
        click.option("--fast", is_flag=True, help="Verdict only: skip rationales (yes/no, score and choice formats)."),
        click.option("--probs", is_flag=True, help="Also report the expected score under the model's distribution at the verdict."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def engine_kwargs(gpu_layers: int, n_ctx: int | None, threads: int | None, chat_template: str | None,
                  n_batch: int | None = None) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    if n_batch:
        kw["n_batch"] = n_batch
    if gpu_layers:
        kw["n_gpu_layers"] = gpu_layers
    if n_ctx:
        kw["n_ctx"] = n_ctx
    if threads:
        kw["n_threads"] = threads
    if chat_template:
        kw["chat_template"] = chat_template
    return kw
