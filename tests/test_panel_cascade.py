"""A panel as a cascade's first stage (`--panel A,B,C --escalate-to M --escalate-below C`): members of known bias
(scripted, each reading a hidden feature with its own seeded noise) and a perfect escalation model; the rows escalated
are exactly the split votes, the escalation model's verdict stands on them; and the real default model as a member."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from conftest import cli

from localjudge import evaluate
from localjudge.engine.base import ScriptedEngine
from localjudge.ensembles.panel_cascade import panel_confidence
from localjudge.errors import InputError
from localjudge.labels.agreement import agree
from localjudge.store.results import JudgeResult, ResultRow

PREFIX = '{"rationale": "scripted", "result": "'
JUDGE = "relevance_to_query"


def feature(messages) -> float:
    return float(re.findall(r"feature=([0-9.]+)", messages[-1].content)[-1])


def vote(name: str, x: float, noise: float = 0.25) -> str:
    return "yes" if x + random.Random(f"{name}:{x}").gauss(0, noise) > 0.5 else "no"


def member(name: str) -> ScriptedEngine:
    return ScriptedEngine(lambda m, f: PREFIX + vote(name, feature(m)) + '"}', model_id=name)


def perfect() -> ScriptedEngine:
    return ScriptedEngine(lambda m, f: PREFIX + ("yes" if feature(m) > 0.5 else "no") + '"}', model_id="strong")


def data(n: int = 120, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    xs = [round(rng.random(), 4) for _ in range(n)]
    return [
        {"id": f"r{i}", "input": f"Q{i}?", "output": f"A. feature={x:.4f}", "label": "yes" if x > 0.5 else "no", "x": x}
        for i, x in enumerate(xs)
    ]


def test_a_panel_cascade_escalates_exactly_the_split_votes_and_the_strong_verdict_stands(tmp_path: Path):
    rows = data()
    names = ["m0", "m1", "m2"]
    split = {i for i, r in enumerate(rows) if len({vote(n, r["x"]) for n in names}) > 1}  # known from the members' bias
    members, strong = [member(n) for n in names], perfect()
    run = evaluate(rows, [JUDGE], panel=members, escalate_to=strong, escalate_below=0.9, out=tmp_path / "run")
    s = run.summary.run["cascade"]["judges"][JUDGE]
    print(f"escalated {s['escalated']} of {s['n']}: the {len(split)} split votes")
    assert 10 < len(split) < 100 and s["escalated"] == len(split) and strong.calls == len(split)
    assert all(m.calls == 120 for m in members)
    assert set(run.judges) == {JUDGE, f"{JUDGE}@panel", f"{JUDGE}@m0", f"{JUDGE}@m1", f"{JUDGE}@m2", f"{JUDGE}@strong"}
    results = list(run.results)
    final = {r.row_index: r for r in results if r.judge == JUDGE}
    assert {i for i, r in final.items() if r.result.details["cascade"]["escalated"]} == split
    assert all(
        final[i].result.model_id == "strong" and final[i].result.details["cascade"]["confidence"] == pytest.approx(2 / 3)
        for i in split
    )
    acc = {j: agree(results, rows, "label", judge=j).accuracy for j in (JUDGE, f"{JUDGE}@panel")}
    assert acc[JUDGE] is not None and acc[f"{JUDGE}@panel"] is not None and acc[JUDGE] > acc[f"{JUDGE}@panel"]
    # the panel is wrong on split votes more often than not-split ones: its agreement with the strong model there
    panel_vals = {r.row_index: r.result.value for r in results if r.judge == f"{JUDGE}@panel"}
    agree_split = sum(panel_vals[i] == ("yes" if rows[i]["x"] > 0.5 else "no") for i in split) / len(split)
    assert s["first_agrees_with_strong_on_escalated"] == pytest.approx(agree_split) and s["n_compared"] == len(split)
    assert run.summary.run["panel"]["judges"][JUDGE]["member_agreement"]["m0"]["n"] == 120
    assert s["time_saved_ms_estimated"] is not None
    # run again: nothing is judged anew
    members2, strong2 = [member(n) for n in names], perfect()
    evaluate(rows, [JUDGE], panel=members2, escalate_to=strong2, escalate_below=0.9, out=tmp_path / "run")
    assert strong2.calls == 0 and all(m.calls == 0 for m in members2)


def test_panel_confidence_is_the_vote_share_or_with_probabilities_the_mean_probability_of_the_verdict():
    def row(lab: str, value: str, p_yes: float | None = None) -> tuple[str, ResultRow]:
        score = 1.0 if value == "yes" else 0.0
        res = JudgeResult(
            judge="j",
            judge_version="1",
            format="yes_no_json",
            value=value,
            score=score,
            passed=value == "yes",
            expected_score=p_yes,
        )
        return lab, ResultRow(row_index=0, row_id="0", judge="j@" + lab, result=res)

    verdict = row("panel", "yes")[1].result
    members = [row("a", "yes", 0.9), row("b", "yes", 0.6), row("c", "no", 0.3)]
    assert panel_confidence("categorical", verdict, members, {}) == pytest.approx(2 / 3)
    assert panel_confidence("categorical", verdict, members, {"c": 2.0}) == pytest.approx(2 / 4)
    # P(yes) of each member, the dissenter's included: (0.9 + 0.6 + 0.3) / 3
    assert panel_confidence("categorical", verdict, members, {}, probs=True) == pytest.approx(0.6)
    tie = JudgeResult(judge="j", judge_version="1", format="yes_no_json", unscored_reason="panel_tie")
    assert panel_confidence("categorical", tie, members, {}) == 0.0

    # pairwise with both orders: a member whose orders disagree says "tie" and never counts for a winner; a panel
    # that says "tie" is not sure at all
    def pair(lab: str, value: object) -> tuple[str, ResultRow]:
        res = JudgeResult(
            judge="p",
            judge_version="1",
            format="pairwise_json",
            value=value,
            score=0.5,
            passed=value == 1,
            details={"both_orders": True, "consistent": value != "tie"},
        )
        return lab, ResultRow(row_index=0, row_id="0", judge="p@" + lab, result=res)

    votes = [pair("a", 1), pair("b", 1), pair("c", "tie")]
    assert panel_confidence("pairwise", pair("panel", 1)[1].result, votes, {}) == pytest.approx(2 / 3)
    assert panel_confidence("pairwise", pair("panel", "tie")[1].result, votes, {}) == 0.0


def test_a_panel_cascade_refuses_a_member_as_the_escalation_model_before_any_inference(tmp_path: Path):
    a, b = member("a"), member("b")
    with pytest.raises(InputError, match="'a' is a panel member"):
        evaluate(data(4), [JUDGE], panel=[a, b], escalate_to=member("a"), escalate_below=0.9, out=tmp_path / "x")
    with pytest.raises(InputError, match="--escalate-below needs --escalate-to"):
        evaluate(data(4), [JUDGE], panel=[a, b], escalate_below=0.9, out=tmp_path / "y")
    assert a.calls == b.calls == 0


@pytest.mark.system
def test_run_cli_with_a_panel_and_escalation_prints_both_and_judge_cli_escalates_a_tie(tmp_path: Path):
    files = {}
    for n, v in (("yes", "yes"), ("no", "no"), ("strong", "no")):
        files[n] = tmp_path / f"{n}.json"
        files[n].write_text(json.dumps([PREFIX + v + '"}']))
    data_file = tmp_path / "d.jsonl"
    data_file.write_text("".join(json.dumps({"id": f"r{i}", "input": "Q?", "output": f"A{i}."}) + "\n" for i in range(3)))
    panel = f"scripted:{files['yes']},scripted:{files['no']}"
    cmd = ["run", str(data_file), "-j", JUDGE, "--panel", panel]
    cmd += ["--escalate-to", f"scripted:{files['strong']}", "--escalate-below", "0.5", "--out", str(tmp_path / "run")]
    out = cli(*cmd)
    assert out.returncode == 1, out.stderr  # 1: the panel's own verdicts (JUDGE@panel) are ties, stored unscored
    final = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["result"]["value"] for r in final if r["judge"] == JUDGE] == ["no"] * 3  # escalated: the strong verdict
    assert "panel of 2 (yes.json, no.json), majority" in out.stdout
    assert "cascade panel -> strong.json below confidence 0.5 (share of member votes" in out.stdout
    assert "escalated 3 of 3 (100.0%); panel agrees with strong.json on n/a of 0 escalated" in out.stdout
    one = ["judge", JUDGE, "-f", "input=Q?", "-f", "output=A."]
    got = cli(*one, "--panel", panel, "--escalate-to", f"scripted:{files['strong']}", "--escalate-below", "0.5")
    assert got.returncode == 0, got.stderr
    res = json.loads(got.stdout)
    assert res["escalated"] and res["confidence"] == 0.0 and res["panel"]["unscored_reason"] == "panel_tie"
    assert res["result"]["value"] == "no"


@pytest.mark.system
def test_the_real_default_model_in_a_panel_cascade_escalates_where_it_disagrees_with_the_other_member(tmp_path: Path, engine):
    """SmolLM2-135M beside a member that always says no, escalating to one that always says yes, at C = 1: a row is
    escalated exactly when the real model did not say no, and its verdict is then the escalation model's."""
    rows = [
        {"id": f"r{i}", "input": q, "output": a}
        for i, (q, a) in enumerate([("What is 2 + 2?", "4"), ("Name a colour.", "The moon is made of cheese.")])
    ]
    no = ScriptedEngine([PREFIX + 'no"}'], model_id="no-man", cycle=True)
    yes = ScriptedEngine([PREFIX + 'yes"}'], model_id="yes-man", cycle=True)
    run = evaluate(rows, [JUDGE], panel=[engine, no], escalate_to=yes, escalate_below=1.0, out=tmp_path / "run")
    results = list(run.results)
    label = next(j.split("@")[1] for j in run.judges if "@" in j and j.split("@")[1] not in ("panel", "yes-man", "no-man"))
    real = {r.row_index: r.result.value for r in results if r.judge == f"{JUDGE}@{label}"}
    final = {r.row_index: r.result for r in results if r.judge == JUDGE}
    print("real model:", real)
    assert len(real) == 2 and all(v in ("yes", "no", None) for v in real.values())
    assert {i for i, r in final.items() if r.details["cascade"]["escalated"]} == {i for i, v in real.items() if v != "no"}
    assert all(r.value == ("yes" if real[i] != "no" else "no") for i, r in final.items())
    assert yes.calls == sum(1 for v in real.values() if v != "no")
