"""scripts/benchmarks/bench_clients.py `--row "CLIENT | PATH"` (issue 32's re-measure): only the named rows are measured,
named as docs/serve.md's table shows them; a name that is no row stops before any server starts, with one line
naming it and the rows there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.benchmarks import bench_clients as bc

ROOT = Path(__file__).resolve().parent.parent

OLLAMA_GROUNDED = "MLflow 3.17 is_grounded | LiteLLM ollama_chat:/ + OLLAMA_API_BASE"
RAGAS_LITELLM = "RAGAS Faithfulness | llm_factory(adapter=litellm) + ollama_chat/"


def test_every_row_has_a_name_no_other_row_has():
    names = [bc.row_name(r) for r in bc.ROWS]
    assert len(set(names)) == len(names)


def test_a_row_name_is_its_client_and_path_cells_as_the_docs_table_shows_them():
    docs = (ROOT / "docs/serve.md").read_text(encoding="utf-8")
    for r in bc.ROWS:
        assert f"| {bc.row_name(r)} |" in docs, r


def test_named_rows_are_selected_in_the_tables_order_whatever_the_order_given():
    got = bc.select_rows([RAGAS_LITELLM, OLLAMA_GROUNDED])
    assert [bc.row_name(r) for r in got] == [OLLAMA_GROUNDED, RAGAS_LITELLM]
    assert got[0].fn is bc.mlflow_is_grounded_ollama and got[1].fn is bc.ragas_litellm_ollama


def test_a_client_name_alone_selects_nothing_it_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"--row 'RAGAS Faithfulness' is no row; the rows are: .*ollama_chat/"):
        bc.select_rows(["RAGAS Faithfulness"])


def test_an_unknown_row_on_the_command_line_exits_2_with_one_line_before_any_server(capsys):
    with pytest.raises(SystemExit) as e:
        bc.main(["--row", "MLflow 3.17 is_grounded | nope"])
    assert e.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(err) == 1 and "--row 'MLflow 3.17 is_grounded | nope' is no row" in err[0]  # after argparse's usage
