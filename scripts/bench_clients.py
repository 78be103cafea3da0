"""Evaluation clients pointed at a local server, with their own defaults: usable verdicts per client x path x server.

    python scripts/bench.py clients [--threads 1]
    python scripts/bench_clients.py [--threads 1]

Each server is a real process on a loopback port with the default GGUF model and `--threads` llama.cpp
threads, run one after the other in the same run: `localjudge serve`, `localjudge serve
--no-catalog-formats` (the client's schema only) and llama-cpp-python's own server (`python -m
llama_cpp.server`). Every row (`ROWS`) asks its client's default judge on the same 5 RAG cases
(`CASES`) and counts the verdicts the client can use (parsed, no error, a value of the judge's form).

A row is one function appended to `ROWS`: `Row(client, path, fn)` where `fn(base_url, model)` runs the
client on every case and returns how many of its verdicts were usable.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

CASES = [  # (question, answer, retrieved context): the same 5 RAG cases as tests/test_serve_catalog.py
    ("What is the capital of France?", "Paris.", "Paris is the capital and largest city of France."),
    ("How many legs has a spider?", "Six.", "Spiders have eight legs and two body parts."),
    ("When was the Eiffel Tower completed?", "In 1889.", "The Eiffel Tower was completed in 1889 for the World's Fair."),
    ("What do bees make?", "Honey and wax.", "Honey bees produce honey and beeswax in their hives."),
    ("Who wrote Hamlet?", "Charles Dickens.", "Hamlet is a tragedy written by William Shakespeare."),
]
N_CTX = 2048


@dataclass(frozen=True)
class Row:
    """One client x path: `fn(base_url, model)` -> usable verdicts out of len(CASES)."""

    client: str
    path: str
    fn: Callable[[str, str], int]


def _mlflow_env(base_url: str) -> None:
    import mlflow

    os.environ.update(OPENAI_API_BASE=base_url, OPENAI_API_KEY="unused", MLFLOW_DISABLE_TELEMETRY="true")
    mlflow.set_tracking_uri(f"sqlite:///{tempfile.mkdtemp(prefix='bench-clients-')}/mlflow.db")


def _yes_no(fb: object) -> bool:
    value = getattr(fb, "value", None)
    return getattr(fb, "error", None) is None and str(getattr(value, "value", value)) in ("yes", "no")


def mlflow_is_grounded(base_url: str, model: str) -> int:
    """MLflow's built-in `is_grounded` (the RetrievalGroundedness scorer's judge) via `openai:/`."""
    from mlflow.genai.judges import is_grounded

    _mlflow_env(base_url)
    return sum(_yes_no(is_grounded(request=q, response=a, context=c, model=f"openai:/{model}")) for q, a, c in CASES)


def mlflow_is_correct(base_url: str, model: str) -> int:
    """MLflow's built-in `is_correct` (the Correctness scorer's judge) via `openai:/`."""
    from mlflow.genai.judges import is_correct

    _mlflow_env(base_url)
    return sum(_yes_no(is_correct(request=q, response=a, expected_response=c, model=f"openai:/{model}")) for q, a, c in CASES)


def mlflow_make_judge(base_url: str, model: str) -> int:
    """MLflow's `make_judge` with a yes/no feedback type via `openai:/`."""
    from mlflow.genai.judges import make_judge

    _mlflow_env(base_url)
    judge = make_judge(
        name="concise",
        instructions="Is the answer in {{ outputs }} a concise reply to the question in {{ inputs }}? Answer yes or no.",
        model=f"openai:/{model}",
        feedback_value_type=Literal["yes", "no"],
    )
    return sum(_yes_no(judge(inputs={"question": q}, outputs=a)) for q, a, _ in CASES)


ROWS: list[Row] = [
    Row("MLflow 3.17 is_grounded", "openai:/ + OPENAI_API_BASE", mlflow_is_grounded),
    Row("MLflow 3.17 is_correct", "openai:/ + OPENAI_API_BASE", mlflow_is_correct),
    Row("MLflow 3.17 make_judge", "openai:/ + OPENAI_API_BASE", mlflow_make_judge),
]
SERVERS = ("localjudge serve", "localjudge serve --no-catalog-formats", "llama-cpp-python server")


def start(server: str, threads: int, home: str):
    """(process, base URL, model name) of `server` on a free loopback port."""
    from bench_constraints import free_port, start_server

    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    if server.startswith("localjudge"):
        cli = str(Path(sys.executable).parent / "localjudge")
        cmd = [cli, "serve", "--port", str(port), "--threads", str(threads), "--n-ctx", str(N_CTX), "--model-name", "judge"]
        cmd += server.split()[2:]
        return start_server(cmd, url, {**os.environ, "LOCALJUDGE_HOME": home}), url, "judge"
    from localjudge.models.registry import resolve_model

    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", resolve_model(None).path, "--n_ctx", str(N_CTX)]
    cmd += ["--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads), "--model_alias", "judge"]
    return start_server(cmd, url), url, "judge"


def section_clients(threads: int = 1, servers: tuple[str, ...] = SERVERS, rows: list[Row] | None = None) -> None:
    """Print the markdown table: client x path, usable verdicts per server."""
    rows = ROWS if rows is None else rows
    got: dict[tuple[str, str], str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-clients-home-") as home:
        for server in servers:
            proc, url, model = start(server, threads, home)
            try:
                for r in rows:
                    try:
                        got[(r.client, server)] = f"{r.fn(url, model)}/{len(CASES)}"
                    except Exception as e:  # a client that raises counts as no usable verdict, with why
                        got[(r.client, server)] = f"0/{len(CASES)} ({type(e).__name__})"
                    print(f"  {r.client} on {server}: {got[(r.client, server)]}", file=sys.stderr, flush=True)
            finally:
                proc.terminate()
                proc.wait(60)
    print(f"\nUsable verdicts, {len(CASES)} RAG cases, default model, --threads {threads}\n")
    print("| client | path | " + " | ".join(servers) + " |")
    print("|---|---|" + "---|" * len(servers))
    for r in rows:
        print(f"| {r.client} | {r.path} | " + " | ".join(got[(r.client, s)] for s in servers) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads of every server (default 1)")
    section_clients(ap.parse_args().threads)


if __name__ == "__main__":
    main()
