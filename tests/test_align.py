"""`localjudge align`: calibrate a judge on human labels. Mechanics are shown with scripted engines whose bias is
known (the label says yes when a hidden feature exceeds 0.5; the engine says yes from 0.3), so the threshold it
must recover is known; the default 135M model shows the honest near-chance figures (slow)."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from localjudge import evaluate
from localjudge.align.aligner import align, binary_labels, choose_threshold, stratified_split
from localjudge.engine.base import DecodeOptions, ScriptedEngine
from localjudge.errors import InputError
from localjudge.judges import get_judge
from localjudge.judges.registry import load_judge_file

PREFIX = '{"rationale": "scripted", "result": "'
SLOPE = 20.0


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def feature(messages) -> float:
    return float(re.findall(r"feature=([0-9.]+)", messages[-1].content)[-1])


def biased_engine(bias: float = 0.3, noise: float = 0.0, fixed_by_examples: bool = False) -> ScriptedEngine:
    """Says yes when the hidden feature exceeds `bias`, with P(yes) = sigmoid(20 (x - bias)). With `noise`, it reads
    the feature with a seeded error (so no threshold can fix it fully); with `fixed_by_examples`, few-shot turns in the
    prompt make it read the feature exactly and at 0.5."""

    def read(messages) -> tuple[float, float]:
        x = feature(messages)
        if fixed_by_examples and any(m.role == "assistant" for m in messages):
            return x, 0.5
        err = random.Random(round(x * 1e6)).gauss(0, noise) if noise else 0.0
        return x + err, bias

    def answer(messages, fmt) -> str:
        x, b = read(messages)
        return PREFIX + ("yes" if x > b else "no") + '"}'

    def steps(messages, fmt):
        x, b = read(messages)
        p = sigmoid(SLOPE * (x - b))
        return [(PREFIX, {"yes": p, "no": 1 - p})]

    return ScriptedEngine(answer, model_id="scripted-biased", choice_steps=steps)


def labelled(tmp_path: Path, n: int = 300, seed: int = 7) -> Path:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        x = rng.random()
        rows.append(
            {"input": f"Question {i}?", "output": f"An answer. feature={x:.4f}", "label": "yes" if x > 0.5 else "no", "x": x}
        )
    p = tmp_path / "labels.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_split_is_seeded_and_stratified_and_threshold_maximises_kappa():
    pos = [i % 4 == 0 for i in range(100)]
    a, b = stratified_split(pos, 0.3, seed=1)
    assert stratified_split(pos, 0.3, seed=1) == (a, b) and stratified_split(pos, 0.3, seed=2) != (a, b)
    assert sorted(a + b) == list(range(100)) and sum(pos[i] for i in b) == round(0.3 * 25)
    t, k = choose_threshold([0.1, 0.2, 0.6, 0.7, 0.9], [False, False, False, True, True])
    assert 0.6 < t <= 0.7 and k == 1.0
    assert binary_labels(["pass", "fail", None], None) == ([True, False, None], "pass")
    with pytest.raises(InputError, match="--positive"):
        binary_labels(["a", "b", "c"], None)


def test_align_recovers_the_threshold_of_a_known_bias_and_kappa_rises(tmp_path):
    labels = labelled(tmp_path)
    rep = align("relevance_to_query", labels, engine=biased_engine(), out=tmp_path / "out", seed=0, test_fraction=0.3)
    # P(yes) >= t  <=>  x >= 0.3 + logit(t) / 20: the threshold found maps back to the labels' 0.5
    x_star = 0.3 + math.log(rep.threshold / (1 - rep.threshold)) / SLOPE
    assert abs(x_star - 0.5) < 0.02, (rep.threshold, x_star)
    assert rep.n_train == 210 and rep.n_test == 90 and rep.n_used == 300
    assert 0.45 < rep.before.kappa < 0.75  # saying yes from 0.3 instead of 0.5: about 0.6
    assert rep.after.kappa > 0.9 and rep.after.accuracy > 0.95
    kappa = next(c for c in rep.changes if c.metric == "cohen_kappa")
    assert kappa.ci[0] > 0 and kappa.verdict == "better (CI above 0)"
    auc = next(c for c in rep.changes if c.metric == "auc")
    assert auc.difference == 0.0 and auc.verdict == "no significant change"  # a threshold does not change the ranking
    # the aligned judge is a judge file: provenance recorded, and run like any judge it makes the aligned decisions
    path = Path(rep.aligned_file)
    j = load_judge_file(path)
    assert j.name == "relevance_to_query_aligned" and j.version != get_judge("relevance_to_query").version
    al = j.spec.alignment
    assert al.split_seed == 0 and al.threshold == pytest.approx(rep.threshold, abs=1e-6) and len(al.labels_sha256) == 64
    assert al.based_on.startswith("relevance_to_query v1:") and j.pass_threshold == pytest.approx(rep.threshold, abs=1e-6)
    rows = [json.loads(line) for line in labels.read_text().splitlines()][:60]
    run = evaluate(rows, [j], engine=biased_engine(), out=tmp_path / "rerun")
    got = [r.result for r in run.results]
    assert all(
        r.scored and r.value == ("yes" if row["x"] >= 0.5 else "no")
        for r, row in zip(got, rows, strict=True)
        if abs(row["x"] - 0.5) > 0.01
    )
    assert all(r.details["aligned"]["threshold"] == j.pass_threshold and r.score == r.expected_score for r in got)
    report = json.loads((tmp_path / "out" / "align_report.json").read_text())
    assert report["threshold"] == rep.threshold and report["changes"][1]["verdict"] == "better (CI above 0)"


def test_align_on_an_unbiased_judge_says_no_significant_change(tmp_path):
    labels = labelled(tmp_path, n=120)
    rep = align("relevance_to_query", labels, engine=biased_engine(bias=0.5), out=tmp_path / "out")
    kappa = next(c for c in rep.changes if c.metric == "cohen_kappa")
    assert kappa.verdict == "no significant change" and kappa.ci[0] <= 0 <= kappa.ci[1]


def test_few_shot_examples_are_kept_only_when_they_help_on_train(tmp_path):
    labels = labelled(tmp_path, n=200)
    plain = align("relevance_to_query", labels, engine=biased_engine(noise=0.12), out=tmp_path / "a", examples=4)
    assert plain.examples_kept == 0 and plain.example_note.startswith("dropped")
    eng = biased_engine(noise=0.12, fixed_by_examples=True)
    rep = align("relevance_to_query", labels, engine=eng, out=tmp_path / "b", examples=4)
    assert rep.examples_kept == 4 and rep.example_note.startswith("kept") and len(rep.example_rows) == 4
    j = load_judge_file(rep.aligned_file)
    assert [e.label for e in j.spec.examples].count("yes") == 2 and all(e.row in rep.example_rows for e in j.spec.examples)
    msgs = j.render(input="q", output="feature=0.7")
    assert [m.role for m in msgs] == ["user", "assistant"] * 4 + ["user"]
    assert msgs[1].content in (PREFIX.replace("scripted", "") + 'yes"}', PREFIX.replace("scripted", "") + 'no"}')
    assert rep.after.auc > rep.before.auc  # the examples changed the ranking itself


@pytest.mark.system
def test_align_refuses_what_it_cannot_do_in_one_line(tmp_path):
    labels = labelled(tmp_path, n=30)
    with pytest.raises(InputError, match="no token probabilities"):
        align("relevance_to_query", labels, engine=ScriptedEngine([PREFIX + 'yes"}'], cycle=True), out=tmp_path / "x")
    with pytest.raises(InputError, match="several calls"):
        align("answer_relevancy", labels, engine=biased_engine(), out=tmp_path / "y")
    with pytest.raises(InputError, match="no column 'verdict'"):
        align("relevance_to_query", labels, label_column="verdict", engine=biased_engine(), out=tmp_path / "z")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "localjudge.cli",
            "align",
            "relevance_to_query",
            "--labels",
            str(labels),
            "--model",
            "scripted:",
            "--option",
            f'response={PREFIX}yes"}}',
            "--out",
            str(tmp_path / "cli"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no token probabilities" in r.stderr


def test_an_aligned_judge_without_probabilities_is_unscored_not_a_guess(tmp_path):
    labels = labelled(tmp_path, n=60)
    rep = align("relevance_to_query", labels, engine=biased_engine(), out=tmp_path / "out")
    j = load_judge_file(rep.aligned_file)
    r = j.evaluate(ScriptedEngine([PREFIX + 'yes"}']), input="q", output="a")
    assert r.unscored_reason == "no_probabilities" and r.value is None and "token probabilities" in r.error


@pytest.mark.system
def test_agree_reports_auc_of_the_expected_score(tmp_path):
    labels = labelled(tmp_path, n=80)
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    run = evaluate(
        rows, ["relevance_to_query"], engine=biased_engine(noise=0.1), out=tmp_path / "run", options=DecodeOptions(probs=True)
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "localjudge.cli",
            "agree",
            str(tmp_path / "run"),
            "--labels",
            str(labels),
            "--label-column",
            "label",
            "-o",
            str(tmp_path / "agree.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "AUC of the expected score" in r.stdout and "0.5 = no signal" in r.stdout
    rep = json.loads((tmp_path / "agree.json").read_text())
    assert rep["auc_score"] == "expected_score" and rep["n_auc"] == 80 and 0.85 < rep["auc"] <= 1.0
    lo, hi = rep["auc_ci"]
    assert lo <= rep["auc"] <= hi
    assert run.counts.evaluated == 80


@pytest.mark.system
@pytest.mark.slow
def test_align_on_the_default_model_reports_figures_without_claiming_a_gain(engine, tmp_path):
    """The real 135M model on 40 human-labelled TruthfulQA rows (the README's figures are scripts/tools/align_report.py):
    only the form is tested — valid figures, intervals around them, a verdict — never a quality gain."""
    data = Path(__file__).resolve().parents[1] / "scripts" / "data" / "truthfulqa_labelled_300.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()[:40]]
    guideline = "The response must be truthful: it must not state false claims, myths or misconceptions as facts."
    labels = tmp_path / "tqa.jsonl"
    labels.write_text(
        "".join(
            json.dumps(
                {
                    **r,
                    "guidelines": guideline,
                    "guidelines_context": f"<request>{r['question']}</request>\n<response>{r['answer']}</response>",
                }
            )
            + "\n"
            for r in rows
        )
    )
    rep = align("guidelines", labels, engine=engine, out=tmp_path / "out", options=DecodeOptions(fast=True), n_boot=300)
    assert rep.n_used == 40 and rep.n_train + rep.n_test == 40 and 0.0 <= rep.threshold <= 1.0
    for m in (rep.before, rep.after):
        assert m.n == rep.n_test and 0.0 <= m.accuracy <= 1.0
        assert m.accuracy_ci is None or m.accuracy_ci[0] <= m.accuracy <= m.accuracy_ci[1]
    for c in rep.changes:
        assert c.verdict in ("no significant change", "better (CI above 0)", "worse (CI below 0)", "undefined")
    assert load_judge_file(rep.aligned_file).spec.alignment.model_id == engine.model_id
