"""scripts/benchmarks/bench_clients.py (`bench.py clients`, issue 32) without a model: its ROWS measure every client
path the issue's acceptance names, docs/serve.md's measured table has exactly those rows, the aliases our
server starts with are the docs recipes' formats, and a row needing an API llama-cpp-python's server lacks
is "n/a", not 0."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scripts.benchmarks import bench_clients as bc

ROOT = Path(__file__).resolve().parent.parent

# issue 32 "Acceptance": client x path, each a (client word, path word) that some row must name
ACCEPTANCE = [
    ("MLflow", "openai:/"),
    ("MLflow", "ollama_chat"),
    ("DeepEval", "LocalModel"),
    ("DeepEval", "OllamaModel"),
    ("RAGAS", "AsyncOpenAI"),
    ("RAGAS", "litellm"),
    ("LangChain", "ChatOpenAI"),
    ("LangChain", "ChatOllama"),
    ("openai-agents", "OpenAIResponsesModel"),
    ("promptfoo", "openai:chat"),
    ("Inspect", "openai-api"),
]


# issue 48's table: each framework's default judge and local path, nothing configured
UNCONFIGURED = [
    ("MLflow", "is_grounded", "openai:/"),
    ("MLflow", "make_judge", "openai:/"),
    ("DeepEval", "FaithfulnessMetric", "LocalModel"),
    ("DeepEval", "G-Eval", "LocalModel"),
    ("RAGAS", "collections", "llm_factory"),
    ("RAGAS", "legacy", "LangchainLLMWrapper"),
    ("promptfoo", "llm-rubric", "openai:chat"),
    ("Inspect", "model_graded_qa", "openai-api"),
]
NOTHING = "### With nothing configured (measured)"


def _docs_table() -> list[tuple[str, str]]:
    text = (ROOT / "docs/serve.md").read_text(encoding="utf-8")
    section = text.split("### Evaluation clients against serve (measured)", 1)[1]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [(c.strip(), p.strip()) for c, p in rows[1:]]  # the header row is not a client


def test_rows_cover_every_client_path_of_the_issues_acceptance():
    for client, path in ACCEPTANCE:
        assert any(client in r.client and path in r.path for r in bc.ROWS), (client, path)


def test_the_docs_measured_table_lists_exactly_the_rows_in_order():
    assert _docs_table() == [(r.client, r.path) for r in bc.ROWS]


def test_the_nothing_configured_rows_are_issue_48s_table_and_use_no_alias():
    assert [(r.client, r.path) for r in bc.UNCONFIGURED] == [
        next((r.client, r.path) for r in bc.UNCONFIGURED if a in r.client and b in r.client and c in r.path)
        for a, b, c in UNCONFIGURED
    ]
    assert all(r.alias is None for r in bc.UNCONFIGURED)


def test_the_docs_nothing_configured_table_lists_exactly_those_rows_with_a_cell_per_server():
    text = (ROOT / "docs/serve.md").read_text(encoding="utf-8")
    section = text.split(NOTHING, 1)[1].split("\n### ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert [h.strip() for h in lines[0].strip("|").split("|")] == ["client", "path", *bc.SERVERS]
    assert [tuple(x.strip() for x in line.split("|")[1:3]) for line in lines[1:]] == [(r.client, r.path) for r in bc.UNCONFIGURED]
    for line in lines[1:]:
        for got in line.strip("|").split("|")[2:]:
            assert re.fullmatch(r" (\d/5( \(\w+\))?|not measured: \w[\w ]*) ", got), line


def test_every_row_on_each_server_has_a_cell_in_the_docs_table():
    text = (ROOT / "docs/serve.md").read_text(encoding="utf-8")
    section = text.split("### Evaluation clients against serve (measured)", 1)[1]
    header = next(line for line in section.splitlines() if line.startswith("| client | path |"))
    assert [h.strip() for h in header.strip("|").split("|")][2:] == list(bc.SERVERS)
    for line in section.splitlines():
        if line.startswith("| ") and line.count("|") == 6 and "---" not in line and line != header:
            for got in line.strip("|").split("|")[2:]:
                assert re.fullmatch(r" (\d/5( \(\w+\))?|n/a \(no (Ollama|Responses) API\)|not finished) ", got), line


def test_rows_needing_an_api_the_llama_cpp_server_lacks_are_na_there_without_calling_the_client():
    def boom(base_url: str, model: str) -> int:
        raise AssertionError("called")

    ollama = bc.Row("X", "ollama", boom, "ollama")
    responses = bc.Row("X", "responses", boom, "responses")
    assert bc.cell(ollama, "llama-cpp-python server", "http://127.0.0.1:9/v1", "judge") == "n/a (no Ollama API)"
    assert bc.cell(responses, "llama-cpp-python server", "http://127.0.0.1:9/v1", "judge") == "n/a (no Responses API)"


def test_an_alias_row_gets_its_alias_on_our_server_and_the_plain_model_on_llama_cpps():
    seen: list[str] = []
    row = bc.Row("X", "alias", lambda url, model: seen.append(model) or 5, alias="geval")
    assert bc.cell(row, "localjudge serve", "u", "judge") == "5/5"
    assert bc.cell(row, "llama-cpp-python server", "u", "judge") == "5/5"
    assert seen == ["geval", "judge"]


def test_a_row_that_raises_is_zero_with_the_error_type():
    def fails(base_url: str, model: str) -> int:
        raise ConnectionError("refused")

    assert bc.cell(bc.Row("X", "p", fails), "localjudge serve", "u", "judge") == "0/5 (ConnectionError)"


def test_the_aliases_are_the_docs_recipes_formats():
    docs = (ROOT / "docs/serve.md").read_text(encoding="utf-8")
    assert {r.alias for r in bc.ROWS if r.alias} == set(bc.ALIASES)
    for name, (_, text) in bc.ALIASES.items():
        assert text in docs and f"--alias {name}=judge" in docs, name
    assert json.loads(bc.ALIASES["geval"][1]) == bc.GEVAL_SCHEMA
