"""Escalation cascades and the threshold that guarantees agreement (Trust or Escalate): a cheap scripted judge of
known bias with token probabilities, a perfect strong judge; the fraction escalated is the one the bias predicts."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli

from localjudge import evaluate
from localjudge.engine.base import ScriptedEngine
from localjudge.ensembles.escalation import binom_cdf, choose_escalation, held_out
from localjudge.errors import InputError
from localjudge.labels.agreement import agree

PREFIX = '{"rationale": "scripted", "result": "'
SLOPE = 20.0


def feature(messages) -> float:
    return float(re.findall(r"feature=([0-9.]+)", messages[-1].content)[-1])


def weak_judge(bias: float = 0.35) -> ScriptedEngine:
    """Says yes from `bias` (the truth is 0.5), with P(yes) = sigmoid(20 (x - bias)) at the verdict."""

    def p_yes(messages) -> float:
        return 1 / (1 + math.exp(-SLOPE * (feature(messages) - bias)))

    def answer(messages, fmt) -> str:
        return PREFIX + ("yes" if p_yes(messages) > 0.5 else "no") + '"}'

    return ScriptedEngine(answer, model_id="weak", choice_steps=lambda m, f: [(PREFIX, {"yes": p_yes(m), "no": 1 - p_yes(m)})])


def perfect_judge() -> ScriptedEngine:
    return ScriptedEngine(lambda m, f: PREFIX + ("yes" if feature(m) > 0.5 else "no") + '"}', model_id="strong")


def data(n: int = 200, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        x = rng.random()
        rows.append({"id": f"r{i}", "input": f"Q{i}?", "output": f"A. feature={x:.4f}", "label": "yes" if x > 0.5 else "no"})
    return rows


def test_a_cascade_with_a_perfect_strong_judge_reaches_the_target_escalating_the_predicted_fraction(tmp_path: Path):
    """The weak judge errs on x in (0.35, 0.5): 15 % of rows. Its confidence is below C = 0.9 where
    |x - 0.35| < logit(0.9) / 20 = 0.110, so the cascade should escalate 22 % of rows and keep only the errors on
    x in (0.46, 0.5): agreement ~96 % >= the 90 % target."""
    rows = data()
    weak, strong = weak_judge(), perfect_judge()
    C = 0.9
    run = evaluate(
        rows,
        ["relevance_to_query"],
        engine=weak,
        escalate_to=strong,
        escalate_below=C,
        options={"probs": True},
        out=tmp_path / "run",
    )
    s = run.summary.run["cascade"]["judges"]["relevance_to_query"]
    predicted = 2 * math.log(C / (1 - C)) / SLOPE
    print(f"escalated {s['fraction_escalated']:.3f}, predicted {predicted:.3f}")
    assert abs(s["fraction_escalated"] - predicted) < 0.06
    assert strong.calls == s["escalated"] and weak.calls == 200
    results = list(run.results)
    acc = agree(results, rows, "label", judge="relevance_to_query").accuracy
    first = agree(results, rows, "label", judge="relevance_to_query@weak").accuracy
    assert acc is not None and first is not None and first < 0.9 <= acc
    # the escalated rows are where the weak judge erred most: it agrees with the strong one on few of them
    assert s["first_agrees_with_strong_on_escalated"] < 0.7 and s["n_compared"] == s["escalated"]
    one = next(r for r in results if r.judge == "relevance_to_query" and r.result.details["cascade"]["escalated"])
    assert one.result.model_id == "strong" and one.result.details["cascade"]["confidence"] < C
    assert set(run.judges) == {"relevance_to_query", "relevance_to_query@weak", "relevance_to_query@strong"}
    # run again: nothing is judged anew
    weak2, strong2 = weak_judge(), perfect_judge()
    evaluate(
        rows,
        ["relevance_to_query"],
        engine=weak2,
        escalate_to=strong2,
        escalate_below=C,
        options={"probs": True},
        out=tmp_path / "run",
    )
    assert weak2.calls == strong2.calls == 0


def test_a_cascade_needs_a_confidence(tmp_path: Path):
    with pytest.raises(InputError, match="--probs"):
        evaluate(
            data(4),
            ["relevance_to_query"],
            engine=weak_judge(),
            escalate_to=perfect_judge(),
            escalate_below=0.9,
            out=tmp_path / "a",
        )
    with pytest.raises(InputError, match="between 0 and 1"):
        evaluate(
            data(4),
            ["relevance_to_query"],
            engine=weak_judge(),
            escalate_to=perfect_judge(),
            escalate_below=2,
            out=tmp_path / "b",
        )


def test_fixed_sequence_choice_guarantees_the_target_on_held_out_rows():
    """Confidence c = P(chosen verdict); the verdict is right with probability c (a calibrated judge). Over 100 seeded
    repetitions (600 rows to choose on, 600 held out) the held-out agreement on trusted rows falls below the 0.9
    target in at most ~10 % (confidence 0.9); when the first tests are unlucky no threshold is chosen (escalate all)."""
    misses, chosen, none = 0, [], 0
    for trial in range(100):
        rng = random.Random(trial)
        conf = [0.5 + 0.5 * rng.random() for _ in range(1200)]
        correct = [rng.random() < c for c in conf]
        choice = choose_escalation(conf[:600], correct[:600], target=0.9, confidence=0.9)
        if choice.threshold is None:
            none += 1
            continue
        chosen.append(choice.threshold)
        test = held_out(conf[600:], correct[600:], choice.threshold)
        misses += (test.agreement_trusted or 0) < 0.9
    chosen.sort()
    print(
        f"no threshold in {none} of 100 trials; held-out agreement below the 0.9 target in {misses} of {len(chosen)}; "
        f"thresholds {chosen[0]:.3f}..{chosen[-1]:.3f}, median {chosen[len(chosen) // 2]:.3f}"
    )
    assert none <= 25 and misses <= 0.15 * len(chosen)
    assert 0.8 <= chosen[len(chosen) // 2] < 0.95  # not a rule that always escalates nearly everything
    assert choose_escalation([0.99] * 10, [True] * 10, 0.9, 0.9).threshold is None  # 10 rows cannot show 90 % at 90 %
    assert binom_cdf(0, 22, 0.1) == pytest.approx(0.9**22)


def test_align_target_agreement_chooses_a_threshold_and_reports_held_out_figures(tmp_path: Path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in data(300, seed=9)))
    from localjudge.ensembles.escalation import align_escalation, escalation_lines

    rep = align_escalation(
        "relevance_to_query", str(labels), target=0.9, confidence=0.9, engine=weak_judge(), out=str(tmp_path / "al")
    )
    assert rep.choice.threshold is not None and rep.n_test == 90
    assert rep.test.agreement_trusted is not None and rep.test.agreement_trusted >= 0.9 > (rep.test.agreement_first_alone or 0)
    text = "\n".join(escalation_lines(rep))
    assert "escalate below confidence" in text and "held out (n = 90)" in text


@pytest.mark.system
def test_run_cli_cascade_with_the_two_real_models_reports_the_fraction_escalated(tmp_path: Path):
    """The acceptance command on 2 rows, 1 thread: smollm2-135m first, gemma3-270m below confidence 0.99."""
    data = Path(__file__).parents[1] / "scripts" / "data" / "coqa_rag_60.jsonl"
    out = cli(
        *["run", str(data), "-j", "correctness", "--model", "smollm2-135m"],
        *["--escalate-to", "gemma3-270m", "--escalate-below", "0.99", "--probs", "--threads", "1", "--limit", "2"],
        *["--out", str(tmp_path / "run")],
        timeout=None,  # two real models on one thread
    )
    assert out.returncode in (0, 1), out.stderr
    line = next(x for x in out.stdout.splitlines() if x.strip().startswith("correctness: escalated"))
    cascade = json.loads((tmp_path / "run" / "summary.json").read_text())["run"]["cascade"]["judges"]["correctness"]
    assert f"escalated {cascade['escalated']} of 2" in line and 0 <= cascade["fraction_escalated"] <= 1
    rows = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    final = [r for r in rows if r["judge"] == "correctness"]
    assert len(final) == 2 and all("cascade" in r["result"]["details"] for r in final)
    assert len([r for r in rows if r["judge"] == "correctness@gemma3-270m"]) == cascade["escalated"]


@pytest.mark.system
def test_cascade_flags_go_together(tmp_path: Path):
    cmd = [
        sys.executable,
        "-m",
        "localjudge",
        "run",
        str(tmp_path / "x.jsonl"),
        "-j",
        "correctness",
        "--escalate-to",
        "gemma3-270m",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 2 and "--escalate-below C go together" in out.stderr


def _pair_judge(name: str, blind_on_hard: bool) -> ScriptedEngine:
    """Picks the good answer; with `blind_on_hard`, picks position 1 whatever it holds on questions marked hard
    (so its two orders disagree there)."""

    def pick(messages, fmt) -> str:
        text = messages[-1].content
        first = re.search(r"Response 1: (\w+)", text).group(1)
        if blind_on_hard and "hard" in text:
            return '{"better_response": 1, "explanation": "x"}'
        return '{"better_response": ' + ("1" if first == "good" else "2") + ', "explanation": "x"}'

    return ScriptedEngine(pick, model_id=name)


def test_a_pairwise_cascade_escalates_the_pairs_whose_two_orders_disagree(tmp_path: Path):
    rows = []
    for i in range(12):
        good_first = i % 2 == 0
        rows.append(
            {
                "id": f"p{i}",
                "question": f"q{i}" + (" hard" if i % 3 == 0 else ""),
                "context": "c",
                "answer_1": "good" if good_first else "bad",
                "answer_2": "bad" if good_first else "good",
                "pref": 1 if good_first else 2,
            }
        )
    first, strong = _pair_judge("first", True), _pair_judge("strong", False)
    run = evaluate(rows, ["pairwise"], engine=first, escalate_to=strong, escalate_below=0.5, both_orders=True, out=tmp_path / "r")
    s = run.summary.run["cascade"]["judges"]["pairwise"]
    assert s["escalated"] == 4 and strong.calls == 8  # the 4 hard pairs, each judged in both orders
    assert run.summary.run["cascade"]["confidence"] == "agreement of both orders"
    assert agree(list(run.results), rows, "pref", judge="pairwise").accuracy == 1.0
    assert agree(list(run.results), rows, "pref", judge="pairwise@first").accuracy == pytest.approx(8 / 12)


@pytest.mark.system
def test_judge_cli_escalates_one_example_without_token_probabilities(tmp_path: Path):
    """`scripted:` models give no token probabilities: the confidence is unknown, so the example is escalated."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([PREFIX + 'yes"}']))
    b.write_text(json.dumps([PREFIX + 'no"}']))
    cmd = ["judge", "relevance_to_query", "-f", "input=Q?", "-f", "output=A."]
    out = cli(*cmd, "--model", f"scripted:{a}", "--escalate-to", f"scripted:{b}", "--escalate-below", "0.9", "--probs")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["escalated"] is True and got["confidence"] is None
    assert got["first"]["value"] == "yes" and got["result"]["value"] == "no"


@pytest.mark.system
def test_align_cli_target_agreement_without_probabilities_says_to_escalate_every_row(tmp_path: Path):
    """A `scripted:` model gives no token probabilities, so no row can be trusted: the command says so and writes
    its report."""
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in data(30)))
    answers = tmp_path / "a.json"
    answers.write_text(json.dumps([PREFIX + 'yes"}'] * 30))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "localjudge",
            "align",
            "relevance_to_query",
            "--labels",
            str(labels),
            "--model",
            f"scripted:{answers}",
        ]
        + ["--target-agreement", "0.9", "--confidence", "0.9", "--out", str(tmp_path / "al")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "no threshold reaches agreement >= 90% with confidence 90%" in out.stdout
    rep = json.loads((tmp_path / "al" / "escalation_report.json").read_text())
    assert rep["choice"]["threshold"] is None and rep["test"]["fraction_escalated"] == 1.0
