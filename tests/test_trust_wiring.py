"""The trust estimators wired into the commands: `agree` prints PPI++ beside Rogan–Gladen and labels-only and answers
`--target-width`, `run`'s summary carries the estimates, `report` shows them with the bias report and, with `--compare`,
the PPI++ difference of two runs; scripted judges that prefer the first position or longer answers are flagged."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import cli

from localjudge import evaluate
from localjudge.engine.base import ScriptedEngine
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders
from localjudge.report import build_report, load_run
from localjudge.trust.judge_trust import judge_trust

PREFIX = '{"rationale": "scripted", "result": "'


def _truth_and_verdicts(seed: int, n: int, rate: float = 0.4) -> tuple[list[bool], list[bool]]:
    """True pass/fail and a judge with TPR 0.9 / TNR 0.85 on them."""
    rng = random.Random(seed)
    truth = [rng.random() < rate for _ in range(n)]
    return truth, [rng.random() < 0.9 if t else rng.random() >= 0.85 for t in truth]


def _run(tmp: Path, name: str, verdicts: list[bool]) -> Path:
    """A real run of a yes/no judge that says yes when the answer carries `say=yes`."""
    data = [{"id": f"r{i}", "input": f"Q{i}?", "output": f"say={'yes' if v else 'no'}"} for i, v in enumerate(verdicts)]
    engine = ScriptedEngine(lambda m, f: PREFIX + ("yes" if "say=yes" in m[-1].content else "no") + '"}', model_id="says")
    evaluate(data, ["relevance_to_query"], engine=engine, out=tmp / name)
    return tmp / name


def _labels(path: Path, truth: list[bool], rows: range, **extra: str) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"r{i}", "h": "yes" if truth[i] else "no", **extra}) + "\n" for i in rows), encoding="utf-8"
    )
    return path


@pytest.mark.system
def test_agree_prints_ppi_beside_rogan_gladen_and_labels_only_and_the_labels_to_reach_a_width(tmp_path: Path) -> None:
    truth, verdicts = _truth_and_verdicts(5, 400)
    run = _run(tmp_path, "run", verdicts)
    labels = _labels(tmp_path / "labels.jsonl", truth, range(80))
    out = cli(
        "agree",
        str(run),
        "--labels",
        str(labels),
        "--label-column",
        "h",
        "--target-width",
        "0.06",
        "-o",
        str(tmp_path / "a.json"),
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    ppi = next(x for x in lines if "pass rate by PPI++" in x)
    assert "[" in ppi and "n=80 labels" in ppi and "verdict" in ppi
    assert any("pass rate by labels only" in x for x in lines) and any("pass rate by Rogan–Gladen" in x for x in lines)
    budget = next(x for x in lines if "label budget" in x)
    assert "more labels to reach ±0.06" in budget and "labels alone" in budget, budget
    doc = json.loads((tmp_path / "a.json").read_text())
    est = doc["trust"]["estimates"]
    width = {k: est[k]["interval"][1] - est[k]["interval"][0] for k in ("ppi", "labels_only")}
    assert width["ppi"] <= width["labels_only"] and est["ppi"]["n_predictions"] == 400
    more = {k: doc["trust"]["budget"][k]["more"] for k in ("ppi", "labels_only")}
    assert 0 < more["ppi"] < more["labels_only"], more  # an informative judge needs fewer labels than labels alone
    assert doc["calibrated"]["corrected"] is not None  # the agreement report is unchanged beside it


@pytest.mark.system
def test_run_summary_carries_the_ppi_estimate_where_labels_exist(tmp_path: Path) -> None:
    truth, verdicts = _truth_and_verdicts(8, 150, 0.3)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "input": f"Q{i}?", "output": "A."}) + "\n" for i in range(150)))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([PREFIX + ("yes" if v else "no") + '"}' for v in verdicts]))
    labels = _labels(tmp_path / "labels.jsonl", truth, range(60))
    out = cli(
        *["run", str(data), "-j", "relevance_to_query", "--model", f"scripted:{answers}"],
        *["--out", str(tmp_path / "run"), "--labels", str(labels), "--label-column", "h"],
    )
    assert out.returncode == 0, out.stderr
    assert "relevance_to_query: pass rate by PPI++" in out.stdout, out.stdout
    est = json.loads((tmp_path / "run" / "summary.json").read_text())["estimates"]["relevance_to_query"]
    assert est["ppi"]["n_labels"] == 60 and est["ppi"]["n_predictions"] == 150
    assert est["labels_only"]["estimate"] == sum(truth[:60]) / 60


@pytest.mark.system
def test_report_shows_the_estimates_and_the_ppi_difference_of_two_runs(tmp_path: Path) -> None:
    truth, verdicts = _truth_and_verdicts(3, 300, 0.35)
    better = [t or v for t, v in zip([random.Random(i).random() < 0.5 for i in range(300)], truth, strict=True)]
    base = _run(tmp_path, "base", verdicts)
    cur = _run(tmp_path, "cur", [v or b for v, b in zip(verdicts, better, strict=True)])
    for run, lab in ((base, truth), (cur, [t or b for t, b in zip(truth, better, strict=True)])):
        f = _labels(tmp_path / f"{run.name}.jsonl", lab, range(120), sample="random")
        rows = [{**json.loads(x), "label": json.loads(x)["h"], "judge": "relevance_to_query"} for x in f.read_text().splitlines()]
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert cli("labels", "import", str(run), str(f)).returncode == 0
    out = cli("report", str(cur), "--compare", str(base), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    diff = next(x for x in out.stdout.splitlines() if "this run − base" in x)
    assert "points [" in diff and "paired" in diff, diff
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="trust"' in html and "pass rate by PPI++" in html and "this run − base" in html


def _pairs(n: int) -> list[dict[str, str]]:
    return [{"question": f"q{i}", "context": "c", "answer_1": f"answer a{i}", "answer_2": f"answer b{i}"} for i in range(n)]


@pytest.mark.system
def test_report_flags_a_pairwise_judge_scripted_to_prefer_the_first_position(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    engine = ScriptedEngine(lambda m, f: '{"better_response": ' + ("1" if rng.random() < 0.85 else "2") + ', "explanation": "x"}')
    evaluate(_pairs(60), [BothOrders(get_judge("pairwise"))], engine=engine, out=tmp_path / "run")
    run = load_run(tmp_path / "run")
    trust = judge_trust(run.rows, run.judges()[0])
    assert trust.position is not None and trust.position.flagged and trust.position.interval[0] > 0.5
    html = build_report(run, tmp_path / "r.html", trust=[trust.section()]).read_text(encoding="utf-8")
    assert f'<li class="warn">{trust.position.sentence[:40]}' in html
    out = cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "r2.html"))
    assert out.returncode == 0, out.stderr
    assert "Position bias: the judge picks the answer shown first in" in out.stdout, out.stdout


@pytest.mark.system
def test_report_flags_a_judge_scripted_to_prefer_longer_answers_with_its_length_coefficient(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    lengths = rng.integers(5, 80, 120)
    data = [{"id": f"r{i}", "input": "q", "output": " ".join(["word"] * int(k))} for i, k in enumerate(lengths)]
    engine = ScriptedEngine(lambda m, f: PREFIX + ("yes" if m[-1].content.count("word") > 40 else "no") + '"}')
    evaluate(data, ["relevance_to_query"], engine=engine, out=tmp_path / "run")
    out = cli("report", str(tmp_path / "run"), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if "Length bias" in x)
    assert "coefficient" in line and "length-controlled pass rate" in line, line
    assert "Length bias" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_the_estimators_are_public_names_of_localjudge(tmp_path: Path) -> None:
    import localjudge

    truth, verdicts = _truth_and_verdicts(9, 200)
    run = load_run(_run(tmp_path, "run", verdicts))
    labels = {r.row_index: float(truth[r.row_index]) for r in run.rows if r.row_index < 60}
    trust = localjudge.judge_trust(run.rows, "relevance_to_query", labels, target_half_width=0.05)
    assert isinstance(trust, localjudge.JudgeTrust) and trust.estimates is not None
    same = localjudge.estimates([float(v) for v in verdicts], labels)
    assert trust.estimates.ppi == same.ppi and isinstance(same, localjudge.Estimates)
    assert {"estimates", "judge_trust", "label_budget", "ppi_difference"} <= set(localjudge.__all__)


@pytest.mark.system
def test_bench_py_runs_the_trust_estimators_section() -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parent.parent / "scripts" / "bench.py"
    out = subprocess.run(
        [sys.executable, str(script), "trust-estimators", "--trials", "3", "--seed", "7"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "3 trials per cell, seed 7" in out.stdout and "Active vs random labelling" in out.stdout
