"""scripts/benchmarks/bench_trust_models.py's arithmetic on a stored run of scripted judges over the real TruthfulQA rows: a
judge equal to the labels makes PPI++ narrower than labels-only, never falling back; a judge at chance makes
PPI++ fall back to labels-only and say so, and Rogan–Gladen refuse. The truth is the full labelled set's rate."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from localjudge.engine.base import ScriptedEngine
from scripts.benchmarks import bench_trust_models as btm

N_ROWS = 120


def _rows() -> list[dict[str, Any]]:
    """The first N_ROWS TruthfulQA rows, each naming its index in the judge's context so a scripted judge can see it."""
    rows = btm.truthfulqa_rows(N_ROWS)
    for i, r in enumerate(rows):
        r["guidelines_context"] += f"\n<row>{i}</row>"
    return rows


def _judge(rows: list[dict[str, Any]], verdict: Any, out: Path) -> btm.Judged:
    def answer(messages: Sequence[Any], fmt: Any) -> str:
        i = int(re.findall(r"<row>(\d+)</row>", messages[-1].content)[-1])
        return '{"rationale": "scripted", "result": "%s"}' % ("yes" if verdict(i, rows[i]["label"]) else "no")

    return btm.judge_rows(rows, out, engine=ScriptedEngine(answer))


def _cells(table_rows: list[list[str]]) -> list[dict[str, str]]:
    return [dict(zip(btm.HEAD, r, strict=True)) for r in table_rows]


def _pm(cell: str) -> float:
    return float(cell.lstrip("±"))


def test_a_judge_equal_to_the_labels_makes_ppi_narrower_than_labels_only_and_never_fall_back(tmp_path: Path) -> None:
    rows = _rows()
    judged = _judge(rows, lambda i, label: label == "yes", tmp_path / "run")
    assert len(judged.pass_labels) == N_ROWS
    assert judged.truth == pytest.approx(sum(r["label"] == "yes" for r in rows) / N_ROWS)  # the full set's rate
    table, notes = btm.table(judged, (20, 50), draws=40, seed=1)
    for c in _cells(table):
        assert c["Rogan–Gladen cover"] == "100.0%" and float(c["PPI++ cover"].rstrip("%")) >= 95
        assert _pm(c["PPI++ ±"]) < 0.8 * _pm(c["labels-only ±"])
        assert float(c["mean λ"]) > 0.5  # PPI++ tunes λ = 1 / (1 + n / (N - n)) for a perfect judge, not 1
        assert c["PPI++ fell back"] == "0/40" and c["PPI++ ≤ labels-only"] == "40/40" and c["RG"] == ""
    assert not any("labels-only estimate" in n or "refused" in n for n in notes)


def test_a_judge_at_chance_falls_back_to_labels_only_and_says_so(tmp_path: Path) -> None:
    judged = _judge(_rows(), lambda i, label: True, tmp_path / "run")  # passes everything, like SmolLM2-135M's verdicts
    table, notes = btm.table(judged, (20, 50, 200), draws=30, seed=1)
    cells = _cells(table)
    for c in cells[:2]:
        assert c["PPI++ fell back"] == "30/30" and c["RG"] == "30 of 30 refused"
        assert c["PPI++ ±"] == c["labels-only ±"] and c["PPI++ cover"] == c["labels-only cover"]
        assert c["Rogan–Gladen cover"] == "refused"
    assert cells[2]["RG"] == f"skipped: n ≥ {N_ROWS} labelled rows"
    assert notes[0].startswith("PPI++: the judge carries no information here; this is the labels-only estimate (60 draws)")
    assert any(n.startswith("Rogan–Gladen refused: TPR + TNR = … + … <= 1") and n.endswith("(60 draws)") for n in notes)


def test_the_run_resumes_without_judging_again(tmp_path: Path) -> None:
    rows = _rows()[:10]
    first = _judge(rows, lambda i, label: label == "yes", tmp_path / "run")
    engine = ScriptedEngine([])  # any call would raise: it has no answer to give
    again = btm.judge_rows(rows, tmp_path / "run", engine=engine)
    assert engine.calls == 0 and again.pass_labels == first.pass_labels


def test_bad_label_counts_get_a_one_line_error() -> None:
    with pytest.raises(SystemExit, match="--labels '50,x': give label counts as integers"):
        btm.parse_counts("50,x")


def test_a_model_that_is_not_installed_gets_a_one_line_error_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = btm.main(["--model", str(tmp_path / "missing.gguf"), "--rows", "4", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and "missing.gguf" in err[0]


@pytest.mark.system
def test_bench_py_runs_the_trust_models_section_and_passes_its_options(tmp_path: Path) -> None:
    import subprocess

    script = Path(__file__).resolve().parents[1] / "scripts" / "bench.py"
    cmd = [sys.executable, str(script), "trust-models", "--model", str(tmp_path / "missing.gguf"), "--rows", "4"]
    out = subprocess.run([*cmd, "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert [x for x in out.stderr.splitlines() if x.startswith("error: ")] and "missing.gguf" in out.stderr
