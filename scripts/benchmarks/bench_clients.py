"""Evaluation clients pointed at a local server, with their own defaults: usable verdicts per client x path x server.

    python scripts/bench.py clients [--threads 1]
    python -m scripts.benchmarks.bench_clients [--threads 1] [--server NAME ...] [--row "CLIENT | PATH" ...]

Each server is a real process on a loopback port with the default GGUF model and `--threads` llama.cpp
threads: `localjudge serve` and `localjudge serve --no-catalog-formats` (the client's schema only), both
with the aliases of docs/serve.md's recipes (`ALIASES`), and llama-cpp-python's own server (`python -m
llama_cpp.server`: no aliases, so alias rows get its plain model; no Ollama or Responses API, so those rows
are "n/a"). Every row (`ROWS`) asks its client's default judge on the same 5 RAG cases (`CASES`) and counts
the verdicts the client can use (parsed, no error, a value of the judge's form).

A row is one function appended to `ROWS`: `Row(client, path, fn, api, alias)` where `fn(base_url, model)`
runs the client on every case and returns how many of its verdicts were usable (the functions and the cases are in
bench_client_calls.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scripts.benchmarks.bench_client_calls import (
    CASES,
    DEEPEVAL_ENV,
    ERRORS,
    deepeval_local_faithfulness,
    deepeval_local_model,
    deepeval_ollama_model,
    inspect_model_graded_qa,
    langchain_ollama,
    langchain_openai,
    mlflow_is_correct,
    mlflow_is_grounded,
    mlflow_is_grounded_ollama,
    mlflow_make_judge,
    openai_agents,
    promptfoo_rubric,
    ragas_legacy_langchain,
    ragas_litellm_ollama,
    ragas_openai,
)

__all__ = [
    "ALIASES",
    "CASES",
    "DEEPEVAL_ENV",
    "ERRORS",
    "GEVAL_SCHEMA",
    "ROWS",
    "SERVERS",
    "UNCONFIGURED",
    "Row",
    "cell",
    "section_clients",
]

N_CTX = 2048


Api = Literal["openai", "ollama", "responses"]
NO_API = {"ollama": "n/a (no Ollama API)", "responses": "n/a (no Responses API)"}


@dataclass(frozen=True)
class Row:
    """One client x path: `fn(base_url, model)` -> usable verdicts out of len(CASES). `api` is the API it
    needs (llama-cpp-python's server has only the OpenAI chat one); `alias` the served name the docs/serve.md
    recipe gives it on our server (llama-cpp-python's server has no aliases: there it gets the plain model)."""

    client: str
    path: str
    fn: Callable[[str, str], int]
    api: Api = "openai"
    alias: str | None = None


# The alias formats of docs/serve.md's "Schema-less clients" recipes (the same as tests/test_serve_clients.py).
GEVAL_SCHEMA = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "score": {"type": "integer", "minimum": 0, "maximum": 10}},
    "required": ["reason", "score"],
    "additionalProperties": False,
}
RUBRIC_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "pass": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["reason", "pass", "score"],
    "additionalProperties": False,
}
GRADE_GRAMMAR = 'start: REASON "\\nGRADE: " GRADE\nREASON: /[A-Za-z0-9 ,.\'-]{1,160}/\nGRADE: /[CPI]/\n'
ALIASES = {"geval": ("geval.json", json.dumps(GEVAL_SCHEMA)), "rubric": ("rubric.json", json.dumps(RUBRIC_SCHEMA))}
ALIASES["grader"] = ("grade.lark", GRADE_GRAMMAR)


ROWS: list[Row] = [
    Row("MLflow 3.17 is_grounded", "openai:/ + OPENAI_API_BASE", mlflow_is_grounded),
    Row("MLflow 3.17 is_correct", "openai:/ + OPENAI_API_BASE", mlflow_is_correct),
    Row("MLflow 3.17 make_judge", "openai:/ + OPENAI_API_BASE", mlflow_make_judge),
    Row("MLflow 3.17 is_grounded", "LiteLLM ollama_chat:/ + OLLAMA_API_BASE", mlflow_is_grounded_ollama, "ollama"),
    Row("DeepEval G-Eval", "LocalModel (set-local-model) + alias geval", deepeval_local_model, alias="geval"),
    Row("DeepEval FaithfulnessMetric", "OllamaModel", deepeval_ollama_model, "ollama"),
    Row("RAGAS Faithfulness", "llm_factory + AsyncOpenAI (json_object)", ragas_openai),
    Row("RAGAS Faithfulness", "llm_factory(adapter=litellm) + ollama_chat/", ragas_litellm_ollama, "ollama"),
    Row("LangChain with_structured_output", "ChatOpenAI (json_schema)", langchain_openai),
    Row("LangChain with_structured_output", "ChatOllama (format)", langchain_ollama, "ollama"),
    Row("openai-agents output_type", "OpenAIResponsesModel (/v1/responses)", openai_agents, "responses"),
    Row("promptfoo 0.121 llm-rubric", "openai:chat provider + alias rubric", promptfoo_rubric, alias="rubric"),
    Row("Inspect AI model_graded_qa", "openai-api provider + alias grader", inspect_model_graded_qa, alias="grader"),
]
SERVERS = ("localjudge serve", "localjudge serve --no-catalog-formats", "llama-cpp-python server")
# Each framework's default judge on its default local path with nothing configured on either side (no alias, no
# format file, no max_tokens: the served model name only), as a new user would first try it (issue 48's table)
UNCONFIGURED: list[Row] = [
    Row("MLflow 3.17 is_grounded", "openai:/ + OPENAI_API_BASE", mlflow_is_grounded),
    Row("MLflow 3.17 make_judge", "openai:/ + OPENAI_API_BASE", mlflow_make_judge),
    Row("DeepEval FaithfulnessMetric", "LocalModel (set-local-model)", deepeval_local_faithfulness),
    Row("DeepEval G-Eval", "LocalModel (set-local-model)", deepeval_local_model),
    Row("RAGAS Faithfulness (collections)", "llm_factory + AsyncOpenAI (json_object)", ragas_openai),
    Row("RAGAS Faithfulness (legacy)", "LangchainLLMWrapper(ChatOpenAI)", ragas_legacy_langchain),
    Row("promptfoo 0.121 llm-rubric", "openai:chat provider", promptfoo_rubric),
    Row("Inspect AI model_graded_qa", "openai-api provider", inspect_model_graded_qa),
]


def start(server: str, threads: int, home: str):
    """(process, base URL, model name) of `server` on a free loopback port; our server with ALIASES."""
    from scripts.benchmarks.bench_constraints import free_port, start_server

    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    if server.startswith("localjudge"):
        cli = str(Path(sys.executable).parent / "localjudge")
        cmd = [cli, "serve", "--port", str(port), "--threads", str(threads), "--n-ctx", str(N_CTX), "--model-name", "judge"]
        for name, (file, text) in ALIASES.items():
            (Path(home) / file).write_text(text)
            cmd += ["--alias", f"{name}=judge", "--format", str(Path(home) / file)]
        cmd += server.split()[2:]
        return start_server(cmd, url, {**os.environ, "LOCALJUDGE_HOME": home}), url, "judge"
    from localjudge.models.registry import resolve_model

    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", resolve_model(None).path, "--n_ctx", str(N_CTX)]
    cmd += ["--port", str(port), "--n_threads", str(threads), "--n_threads_batch", str(threads), "--model_alias", "judge"]
    return start_server(cmd, url), url, "judge"


def cell(r: Row, server: str, url: str, model: str) -> str:
    """One table cell: `usable/5`, with the first error's type when a case raised; n/a for a missing API."""
    if server.startswith("llama") and r.api in NO_API:
        return NO_API[r.api]
    ERRORS.clear()
    try:
        n = r.fn(url, r.alias if r.alias and server.startswith("localjudge") else model)
    except Exception as e:  # a client that raises counts as no usable verdict, with why
        print(f"    {type(e).__name__}: {str(e).strip()[:160]!r}", file=sys.stderr, flush=True)
        n, ERRORS[:] = 0, [type(e).__name__]
    return f"{n}/{len(CASES)}" + (f" ({ERRORS[0]})" if ERRORS and n < len(CASES) else "")


def section_clients(threads: int = 1, servers: tuple[str, ...] = SERVERS, rows: list[Row] | None = None, title: str = "") -> None:
    """Print the markdown table: client x path, usable verdicts per server (each cell also to stderr as it is done)."""
    rows = ROWS if rows is None else rows
    got: dict[tuple[int, str], str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-clients-home-") as home:
        for server in servers:
            proc, url, model = start(server, threads, home)
            try:
                for i, r in enumerate(rows):
                    got[(i, server)] = cell(r, server, url, model)
                    print(f"  | {r.client} | {r.path} | {server}: {got[(i, server)]}", file=sys.stderr, flush=True)
            finally:
                proc.terminate()
                proc.wait(60)
    print(f"\nUsable verdicts{title}, {len(CASES)} RAG cases, default model, --threads {threads}\n")
    print("| client | path | " + " | ".join(servers) + " |")
    print("|---|---|" + "---|" * len(servers))
    for i, r in enumerate(rows):
        print(f"| {r.client} | {r.path} | " + " | ".join(got[(i, s)] for s in servers) + " |")


def row_name(r: Row) -> str:
    """The name `--row` selects a row by: its table cells `client | path`, as docs/serve.md shows them."""
    return f"{r.client} | {r.path}"


def select_rows(names: list[str], rows: list[Row] | None = None) -> list[Row]:
    """The `rows` (default ROWS) named by `names` (each exactly a `row_name`), in their order; an unknown name is a
    ValueError naming it and the names there are, so a typo never measures nothing silently."""
    rows = ROWS if rows is None else rows
    known = {row_name(r) for r in rows}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"--row {unknown[0]!r} is no row; the rows are: " + "; ".join(map(repr, sorted(known))))
    return [r for r in rows if row_name(r) in names]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads of every server (default 1)")
    ap.add_argument("--server", action="append", choices=SERVERS, help="measure only this server (repeatable; default all)")
    ap.add_argument(
        "--row",
        action="append",
        metavar="CLIENT | PATH",
        help="measure only this row, named as in the table: 'client | path' (repeatable; default all)",
    )
    ap.add_argument(
        "--nothing-configured",
        action="store_true",
        help="measure UNCONFIGURED instead: each framework's default judge and path, no alias, the served name only",
    )
    a = ap.parse_args(argv)
    table = UNCONFIGURED if a.nothing_configured else ROWS
    try:
        rows = select_rows(a.row, table) if a.row else table
    except ValueError as e:
        ap.error(str(e))
    section_clients(a.threads, tuple(a.server or SERVERS), rows, ", nothing configured" if a.nothing_configured else "")


if __name__ == "__main__":
    main()
