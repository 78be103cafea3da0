"""Calibrated pass rates (Rogan–Gladen): the estimator, its bootstrap interval's coverage over seeded trials of a
judge with known bias, the refusal when the judge carries no information, and `agree` printing both rates."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import cli

from localjudge import evaluate
from localjudge.engine.base import ScriptedEngine
from localjudge.labels.agreement import agree
from localjudge.labels.calibration import binary_pairs, calibrate, rogan_gladen
from localjudge.store.results import JudgeResult, ResultRow

PREFIX = '{"rationale": "scripted", "result": "'


def biased_verdicts(rng: random.Random, truth: list[bool], tpr: float, tnr: float) -> list[bool]:
    """A judge that says pass on a truly passing row with probability `tpr` and on a failing one with 1 - `tnr`."""
    return [rng.random() < tpr if t else rng.random() >= tnr for t in truth]


def test_rogan_gladen_inverts_the_judges_error_rates_and_clips():
    # p = 0.3, TPR 0.8, TNR 0.9: observed = 0.8 * 0.3 + 0.1 * 0.7 = 0.31
    assert rogan_gladen(0.31, 0.8, 0.9) == pytest.approx(0.3)
    assert rogan_gladen(0.05, 0.8, 0.9) == 0.0 and rogan_gladen(0.99, 0.8, 0.9) == 1.0
    assert rogan_gladen(0.5, 0.5, 0.5) is None and rogan_gladen(0.5, 0.3, 0.4) is None


def test_corrected_interval_covers_the_true_rate_in_about_95_percent_of_200_seeded_trials():
    """A judge with TPR 0.80 and TNR 0.85 over 400 rows whose true pass rate is 0.30, 100 of them labelled: the
    observed rate is biased (0.345 expected), the corrected interval covers 0.30 in ~95 % of trials."""
    true_p, tpr, tnr = 0.30, 0.80, 0.85
    covered = observed_covered = 0
    errors = []
    for trial in range(200):
        rng = random.Random(trial)
        truth = [rng.random() < true_p for _ in range(400)]
        verdicts = biased_verdicts(rng, truth, tpr, tnr)
        cal = calibrate(verdicts, list(zip(truth[:100], verdicts[:100], strict=True)), n_boot=1000, seed=trial)
        assert cal.refused is None and cal.corrected is not None and cal.corrected_ci is not None
        lo, hi = cal.corrected_ci
        covered += lo <= true_p <= hi
        errors.append(cal.corrected - true_p)
        observed_covered += abs((cal.observed or 0) - true_p) < 0.02
    coverage = covered / 200
    print(f"coverage of the corrected 95 % interval: {coverage:.3f} over 200 trials")
    assert 0.91 <= coverage <= 0.99
    assert abs(sum(errors) / len(errors)) < 0.02  # the corrected rate is centred on the truth; the observed is not
    assert observed_covered < 60


def test_a_judge_at_chance_gets_a_one_line_refusal_and_no_number():
    rng = random.Random(0)
    truth = [rng.random() < 0.5 for _ in range(200)]
    verdicts = [rng.random() < 0.5 for _ in truth]
    labels = [(True, True), (True, False), (False, True), (False, False), (False, True), (True, False)]
    cal = calibrate(verdicts, labels)
    assert cal.corrected is None and cal.corrected_ci is None
    assert cal.refused is not None and "TPR + TNR" in cal.refused and "\n" not in cal.refused
    no_neg = calibrate(verdicts, [(True, True), (True, False)])
    assert no_neg.corrected is None and "no failing row" in (no_neg.refused or "")


def test_binary_pairs_reads_labels_through_the_judges_own_pass_mapping():
    assert binary_pairs([("yes", "yes", True), ("no", "yes", True), ("no", "no", False)]) == [
        (True, True),
        (False, True),
        (False, False),
    ]
    assert binary_pairs([("A", "A", True), ("A", "A", False)]) is None  # a value that passes both ways: no mapping


def _rows(verdicts: list[bool]) -> list[ResultRow]:
    return [
        ResultRow(
            row_index=i,
            row_id=f"r{i}",
            judge="j",
            result=JudgeResult(
                judge="j", judge_version="1", format="yes_no_json", value="yes" if v else "no", passed=v, score=float(v)
            ),
        )
        for i, v in enumerate(verdicts)
    ]


def test_agree_reports_the_corrected_pass_rate_over_every_scored_row_of_the_run():
    rng = random.Random(3)
    truth = [rng.random() < 0.4 for _ in range(300)]
    verdicts = biased_verdicts(rng, truth, 0.9, 0.8)
    labels = [{"id": f"r{i}", "h": "yes" if truth[i] else "no"} for i in range(120)]
    rep = agree(_rows(verdicts), labels, "h")
    cal = rep.calibrated
    assert cal is not None and cal.n_verdicts == 300 and cal.n_labelled == 120
    assert cal.observed == pytest.approx(sum(verdicts) / 300)
    assert cal.corrected_ci is not None and cal.corrected_ci[0] <= 0.4 <= cal.corrected_ci[1]


@pytest.mark.system
def test_agree_and_report_print_the_corrected_rate_with_its_interval_or_refuse(tmp_path: Path):
    """A real run (a scripted judge that says yes when the answer carries `say=yes`) then `localjudge agree`."""
    rng = random.Random(5)
    truth = [rng.random() < 0.4 for _ in range(200)]
    verdicts = biased_verdicts(rng, truth, 0.9, 0.8)
    data = [{"id": f"r{i}", "input": f"Q{i}?", "output": f"say={'yes' if v else 'no'}"} for i, v in enumerate(verdicts)]
    engine = ScriptedEngine(lambda m, f: PREFIX + ("yes" if "say=yes" in m[-1].content else "no") + '"}', model_id="says")
    evaluate(data, ["relevance_to_query"], engine=engine, out=tmp_path / "run")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": f"r{i}", "h": "yes" if truth[i] else "no"}) + "\n" for i in range(100)))
    cmd = ["agree", str(tmp_path / "run"), "--label-column", "h"]
    out = cli(*cmd, "--labels", str(labels), "-o", str(tmp_path / "a.json"))
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if "corrected pass rate" in x)
    assert "[" in line and "TPR" in line, out.stdout
    assert json.loads((tmp_path / "a.json").read_text())["calibrated"]["corrected"] is not None
    report = ["report", str(tmp_path / "run"), "--labels", str(labels)]
    out = cli(*report, "--label-column", "h", "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "r.html").read_text()
    assert "corrected pass rate" in html and "Rogan–Gladen" in html
    chance = tmp_path / "chance.jsonl"  # labels that contradict the verdicts: TPR + TNR = 0
    chance.write_text("".join(json.dumps({"id": f"r{i}", "h": "no" if verdicts[i] else "yes"}) + "\n" for i in range(100)))
    out = cli(*cmd, "--labels", str(chance), "-o", str(tmp_path / "b.json"))
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if "corrected pass rate" in x)
    assert "refused" in line and "[" not in line, out.stdout


@pytest.mark.system
def test_run_with_labels_adds_the_corrected_pass_rate_to_the_summary(tmp_path: Path):
    rng = random.Random(8)
    truth = [rng.random() < 0.3 for _ in range(120)]
    verdicts = biased_verdicts(rng, truth, 0.85, 0.8)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "input": f"Q{i}?", "output": "A."}) + "\n" for i in range(120)))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([PREFIX + ("yes" if v else "no") + '"}' for v in verdicts]))
    labels = tmp_path / "labels.csv"
    labels.write_text("id,human\n" + "".join(f"r{i},{'yes' if truth[i] else 'no'}\n" for i in range(60)))
    out = cli(
        *["run", str(data), "-j", "relevance_to_query", "--model", f"scripted:{answers}"],
        *["--out", str(tmp_path / "run"), "--labels", str(labels), "--label-column", "human"],
    )
    assert out.returncode == 0, out.stderr
    assert "relevance_to_query: observed pass rate" in out.stdout and "corrected" in out.stdout
    cal = json.loads((tmp_path / "run" / "summary.json").read_text())["calibrated"]["relevance_to_query"]
    assert (
        cal["n_labelled"] == 60
        and cal["n_verdicts"] == 120
        and cal["corrected_ci"][0] <= cal["corrected"] <= cal["corrected_ci"][1]
    )


def test_a_judge_that_always_passes_is_refused_not_skipped():
    """Every verdict yes: TPR 1, TNR 0, so TPR + TNR = 1 and the corrected rate is refused."""
    rep = agree(_rows([True] * 20), [{"id": f"r{i}", "h": "yes" if i % 2 else "no"} for i in range(20)], "h")
    assert rep.calibrated is not None and rep.calibrated.tnr == 0 and rep.calibrated.refused is not None
