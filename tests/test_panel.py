"""Judge panels: members of known bias (scripted engines reading a hidden feature with their own seeded noise),
the vote, ties reported as ties, member results cached like any other, the same-family warning; and the real
models (`smollm2-135m`, `gemma3-270m`) as a panel through the CLI."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from conftest import cli

from localjudge import evaluate
from localjudge.engine.base import ScriptedEngine
from localjudge.ensembles.panel import combine, fleiss_kappa
from localjudge.errors import InputError
from localjudge.labels.agreement import agree

PREFIX = '{"rationale": "scripted", "result": "'


def noisy_member(name: str, noise: float, bias: float = 0.5) -> ScriptedEngine:
    """Says yes when the hidden feature, read with this member's own seeded gaussian error, exceeds `bias`."""

    def answer(messages, fmt) -> str:
        x = float(re.findall(r"feature=([0-9.]+)", messages[-1].content)[-1])
        err = random.Random(f"{name}:{x}").gauss(0, noise)
        return PREFIX + ("yes" if x + err > bias else "no") + '"}'

    return ScriptedEngine(answer, model_id=name)


def data(n: int = 200, seed: int = 11, **extra) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        x = rng.random()
        rows.append(
            {"id": f"r{i}", "input": f"Q{i}?", "output": f"A. feature={x:.4f}", "label": "yes" if x > 0.5 else "no", **extra}
        )
    return rows


def test_a_panel_of_three_noisy_members_agrees_with_the_labels_better_than_each_member(tmp_path: Path):
    rows = data()
    members = [noisy_member(f"m{k}", noise=0.25) for k in range(3)]
    run = evaluate(rows, ["relevance_to_query"], panel=members, out=tmp_path / "run")
    assert run.judges == ["relevance_to_query", "relevance_to_query@m0", "relevance_to_query@m1", "relevance_to_query@m2"]
    results = list(run.results)
    acc = {j: agree(results, rows, "label", judge=j).accuracy for j in run.judges}
    print("accuracy vs labels:", {j: round(a or 0, 3) for j, a in acc.items()})
    assert all(acc["relevance_to_query"] > acc[f"relevance_to_query@m{k}"] for k in range(3))
    panel = run.summary.run["panel"]["judges"]["relevance_to_query"]
    assert panel["ties"] == 0 and panel["decided"] == 200  # three votes on yes/no never tie
    assert 0 < panel["fleiss_kappa"] < 1 and set(panel["member_agreement"]) == {"m0", "m1", "m2"}
    assert all(a["agreement"] > 0.7 and a["n"] == 200 for a in panel["member_agreement"].values())
    # the exports carry every member and the panel; the summary the panel figures
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert set(summary["judges"]) == set(run.judges) and "panel" in summary["run"]
    first = next(r for r in results if r.judge == "relevance_to_query")
    assert set(first.result.details["panel"]["members"]) == {"m0", "m1", "m2"}


def test_a_tie_is_reported_as_a_tie_never_broken(tmp_path: Path):
    yes, no = (
        ScriptedEngine([PREFIX + 'yes"}'], model_id="yes-man", cycle=True),
        ScriptedEngine([PREFIX + 'no"}'], model_id="no-man", cycle=True),
    )
    run = evaluate(data(6), ["relevance_to_query"], panel=[yes, no], out=tmp_path / "run")
    panel = [r for r in run.results if r.judge == "relevance_to_query"]
    assert all(r.result.unscored_reason == "panel_tie" and "tie between yes and no" in (r.error or "") for r in panel)
    assert run.summary.judges["relevance_to_query"].unscored_reasons == {"panel_tie": 6}
    assert run.summary.run["panel"]["judges"]["relevance_to_query"]["ties"] == 6 and run.exit_code == 1
    # weights decide instead, openly
    run = evaluate(data(6), ["relevance_to_query"], panel=[yes, no], weights=[2, 1], out=tmp_path / "w")
    assert run.summary.judges["relevance_to_query"].pass_rate == 1.0


def test_adding_a_member_runs_only_that_member(tmp_path: Path):
    a, b, c = (noisy_member(n, 0.2) for n in ("a", "b", "c"))
    evaluate(data(20), ["relevance_to_query"], panel=[a, b], out=tmp_path / "run")
    assert (a.calls, b.calls) == (20, 20)
    run = evaluate(data(20), ["relevance_to_query"], panel=[a, b, c], out=tmp_path / "run")
    assert (a.calls, b.calls, c.calls) == (20, 20, 20)
    assert run.counts.evaluated == 20 and run.counts.reused == 40


def test_a_member_of_the_family_under_test_is_warned_about(tmp_path: Path):
    rows = data(4, model="SmolLM2-1.7B-Instruct")
    with pytest.warns(UserWarning, match=r"'smollm' family, like the model under test in column 'model'"):
        run = evaluate(
            rows, ["relevance_to_query"], panel=[noisy_member("smollm2-x", 0.1), noisy_member("gemma-x", 0.1)], out=tmp_path / "r"
        )
    assert len(run.summary.run["panel"]["warnings"]) == 1


def test_scores_are_averaged_or_taken_as_the_median_and_kappa_is_fleiss():
    from localjudge.store.results import JudgeResult, ResultRow

    def row(lab: str, v: int) -> tuple[str, ResultRow]:
        res = JudgeResult(judge="j@" + lab, judge_version="1", format="score_json", value=v, score=(v - 1) / 4, passed=v >= 3)
        return lab, ResultRow(row_index=0, row_id="0", judge="j@" + lab, result=res)

    members = [row("a", 1), row("b", 2), row("c", 5)]
    mean = combine("j", "numeric", members, {}, "mean", 0.5)
    med = combine("j", "numeric", members, {}, "median", 0.5)
    assert mean.score == pytest.approx((0 + 0.25 + 1) / 3) and mean.passed is False
    assert med.score == 0.25 and med.value == 2 and med.passed is False
    assert combine("j", "numeric", members, {"c": 10}, "mean", 0.5).passed is True
    assert fleiss_kappa([["y", "y"], ["n", "n"]]) == 1.0 and fleiss_kappa([["y", "n"], ["n", "y"]]) == -1.0
    assert fleiss_kappa([["y", "y"]]) is None


def test_bad_panels_are_refused_before_any_inference(tmp_path: Path):
    m = noisy_member("m", 0.1)
    with pytest.raises(InputError, match="at least two models"):
        evaluate(data(2), ["relevance_to_query"], panel=[m], out=tmp_path / "a")
    with pytest.raises(InputError, match="given twice"):
        evaluate(data(2), ["relevance_to_query"], panel=[m, noisy_member("m", 0.2)], out=tmp_path / "b")
    with pytest.raises(InputError, match="2 positive numbers"):
        evaluate(data(2), ["relevance_to_query"], panel=[m, noisy_member("n", 0.2)], weights=[1], out=tmp_path / "c")
    assert m.calls == 0


def _answers(path: Path, verdicts: list[str]) -> str:
    path.write_text(json.dumps([PREFIX + v + '"}' for v in verdicts]))
    return f"scripted:{path}"


@pytest.mark.system
def test_judge_cli_with_a_panel_prints_each_member_and_the_vote(tmp_path: Path):
    a, b, c = (_answers(tmp_path / f"{n}.json", [v]) for n, v in (("a", "yes"), ("b", "no"), ("c", "yes")))
    cmd = ["judge", "relevance_to_query", "-f", "input=Q?", "-f", "output=A."]
    out = cli(*cmd, "--panel", f"{a},{b},{c}")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["panel"]["value"] == "yes" and {k: v["value"] for k, v in got["members"].items()} == {
        "a.json": "yes",
        "b.json": "no",
        "c.json": "yes",
    }
    tie = cli(*cmd, "--panel", f"{a},{b}")
    assert tie.returncode == 1 and json.loads(tie.stdout)["panel"]["unscored_reason"] == "panel_tie"


@pytest.mark.system
def test_run_cli_with_the_two_real_models_as_a_panel_stores_and_reports_members_and_panel(tmp_path: Path):
    """The acceptance command, on 2 rows with 1 thread: both installable models, then the panel."""
    data = Path(__file__).parents[1] / "scripts" / "data" / "coqa_rag_60.jsonl"
    out = cli(
        *["run", str(data), "-j", "correctness", "--panel", "smollm2-135m,gemma3-270m"],
        *["--threads", "1", "--limit", "2", "--out", str(tmp_path / "run")],
        timeout=None,  # two real models on one thread
    )
    assert out.returncode in (0, 1), out.stderr
    assert "panel of 2 (smollm2-135m, gemma3-270m), majority" in out.stdout and "Fleiss' kappa" in out.stdout
    rows = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted({r["judge"] for r in rows}) == ["correctness", "correctness@gemma3-270m", "correctness@smollm2-135m"]
    assert len(rows) == 6
    models = {r["judge"]: r["result"]["model_id"] for r in rows}
    assert models["correctness"] == "panel" and models["correctness@gemma3-270m"] != models["correctness@smollm2-135m"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["run"]["panel"]["members"] == ["smollm2-135m", "gemma3-270m"]


def test_the_report_shows_the_panel_figures(tmp_path: Path):
    from localjudge.report import build_report, load_run

    members = [noisy_member(f"m{k}", noise=0.2) for k in range(3)]
    evaluate(data(12), ["relevance_to_query"], panel=members, out=tmp_path / "run")
    html = build_report(load_run(tmp_path / "run"), tmp_path / "r.html").read_text()
    assert '<section id="panel">' in html and "Fleiss' kappa (members)" in html and "m2 agrees with panel" in html


@pytest.mark.system
def test_a_panel_runs_its_members_on_ray_workers(tmp_path: Path, ray_cluster):
    """Each member's cells go to its share of the Ray workers, the members side by side (2 CPUs, 1 thread each: two
    members at once with one worker each, the third when one finishes); the vote is taken here."""
    # c's file has a spare answer: a file identical to a's would be the same model, whose cached verdicts c reuses
    specs = [_answers(tmp_path / f"{n}.json", [v] * k) for n, v, k in (("a", "yes", 4), ("b", "no", 4), ("c", "yes", 5))]
    run = evaluate(data(4), ["relevance_to_query"], panel=specs, executor="ray", out=tmp_path / "run")
    assert run.counts.evaluated == 12
    assert run.summary.judges["relevance_to_query"].pass_rate == 1.0
    agreement = run.summary.run["panel"]["judges"]["relevance_to_query"]["member_agreement"]
    assert agreement["b.json"]["agreement"] == 0.0 and agreement["a.json"]["agreement"] == 1.0
    assert run.summary.run["panel"]["ray"] == {"side_by_side": 2, "workers_each": 1}


@pytest.mark.system
def test_run_cli_refuses_a_model_beside_a_panel(tmp_path: Path):
    data_file = tmp_path / "d.jsonl"
    data_file.write_text(json.dumps({"input": "Q?", "output": "A."}) + "\n")
    out = cli(
        *["run", str(data_file), "-j", "relevance_to_query", "--model", "smollm2-135m"],
        *["--panel", "smollm2-135m,gemma3-270m", "--out", str(tmp_path / "r")],
    )
    assert out.returncode == 2 and "--panel names every judge model; drop --model" in out.stderr


@pytest.mark.parametrize(("aggregation", "score", "passed"), [("mean", (0 + 0.25 + 1) / 3, False), ("median", 0.25, False)])
def test_a_panel_of_score_judges_takes_the_mean_or_the_median(tmp_path: Path, aggregation: str, score: float, passed: bool):
    members = [ScriptedEngine([f"score: {v}\njustification: x"], model_id=f"s{v}", cycle=True) for v in (1, 2, 5)]
    rows = [{"input": "Q?", "output": "A.", "targets": "T."}] * 3
    run = evaluate(rows, ["answer_correctness"], panel=members, aggregation=aggregation, out=tmp_path / aggregation)
    panel = [r.result for r in run.results if r.judge == "answer_correctness"]
    assert all(r.score == pytest.approx(score) and r.passed is passed for r in panel)
    assert run.summary.run["panel"]["judges"]["answer_correctness"]["agreement_basis"] == "passed"
