"""Conversation results (session and turn granularity) through panels, cascades, `agree`, `align` and Ray: scripted
engines of known per-turn verdicts give known aggregates; labels given in `localjudge view` on a conversation's or a
turn's row join by that row's id (`c1` for a session, `c1:0` for a turn)."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

import localjudge
from localjudge.align.aligner import align
from localjudge.engine.base import ScriptedEngine
from localjudge.judges.registry import load_judge_file
from localjudge.labels.agreement import agree
from localjudge.labels.store import label_rows, labels_file_for
from localjudge.view.runs import RunHandle

JUDGE = "conversation_completeness"
PREFIX = '{"rationale": "scripted", "result": "'

CHATS = [
    {
        "id": "c1",
        "messages": [
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4."},
            {"role": "user", "content": "And times 3?"},
            {"role": "assistant", "content": "12."},
            {"role": "user", "content": "Minus 2?"},
            {"role": "assistant", "content": "10."},
        ],
    },
    {"id": "c2", "messages": [{"role": "user", "content": "Capital of France?"}, {"role": "assistant", "content": "Paris."}]},
    {"id": "c3", "messages": [{"role": "user", "content": "Capital of Spain?"}, {"role": "assistant", "content": "Rome."}]},
]


def last_answer(messages) -> str:
    conv = json.loads(messages[-1].content.removeprefix("conversation: "))
    return [m["content"] for m in conv if m["role"] == "assistant"][-1]


def scripted(answers: dict[str, str], model_id: str, p_yes: dict[str, float] | None = None) -> ScriptedEngine:
    """Answers each prompt by the last assistant text in it (`answers[text]`); with `p_yes`, P(yes) at the verdict."""

    def answer(messages, fmt) -> str:
        return PREFIX + answers[last_answer(messages)] + '"}'

    if p_yes is None:
        return ScriptedEngine(answer, model_id=model_id)
    probs = p_yes

    def steps(messages, fmt):
        p = probs[last_answer(messages)]
        return [(PREFIX, {"yes": p, "no": 1 - p})]

    return ScriptedEngine(answer, model_id=model_id, choice_steps=steps)


def values(run, judge: str) -> dict[str, object]:
    return {r.row_id: r.result.value for r in run.results if r.judge == judge}


def test_a_panel_of_two_on_session_results_gives_one_aggregated_verdict_per_conversation(tmp_path: Path):
    a = scripted({"10.": "yes", "Paris.": "yes", "Rome.": "no"}, "a")
    b = scripted({"10.": "no", "Paris.": "yes", "Rome.": "no"}, "b")
    run = localjudge.evaluate(CHATS, [JUDGE], panel=[a, b], out=tmp_path / "r", conversation="session")
    assert a.calls == b.calls == 3
    assert values(run, f"{JUDGE}@a") == {"c1": "yes", "c2": "yes", "c3": "no"}
    assert values(run, f"{JUDGE}@b") == {"c1": "no", "c2": "yes", "c3": "no"}
    final = [r for r in run.results if r.judge == JUDGE]
    assert [(r.conversation_id, r.turn_index) for r in final] == [("c1", None), ("c2", None), ("c3", None)]
    by_id = {r.row_id: r.result for r in final}
    assert (by_id["c2"].value, by_id["c2"].score, by_id["c3"].value) == ("yes", 1.0, "no")
    # a split vote of two is a tie, unscored as for rows, its votes kept
    assert by_id["c1"].value is None and by_id["c1"].details["panel"]["votes"] == {"yes": 1.0, "no": 1.0}
    s = run.summary.run["panel"]["judges"][JUDGE]
    assert (s["n"], s["decided"], s["ties"]) == (3, 2, 1) and s["member_agreement"]["a"] == {"agreement": 1.0, "n": 2}


def test_a_cascade_on_turn_results_escalates_the_unsure_turns_and_aggregates_the_final_verdicts(tmp_path: Path):
    answers = {"4.": "yes", "12.": "yes", "10.": "yes", "Paris.": "yes", "Rome.": "yes"}
    weak = scripted(answers, "weak", p_yes={"4.": 0.99, "12.": 0.6, "10.": 0.97, "Paris.": 0.98, "Rome.": 0.55})
    strong = scripted({**answers, "12.": "no", "Rome.": "no"}, "strong")
    run = localjudge.evaluate(
        CHATS,
        [JUDGE],
        engine=weak,
        escalate_to=strong,
        escalate_below=0.9,
        options={"probs": True},
        out=tmp_path / "r",
        conversation="turn",
    )
    assert strong.calls == 2  # only the two unsure turns
    final = [r for r in run.results if r.judge == JUDGE]
    assert [(r.row_id, r.conversation_id, r.turn_index, r.result.value) for r in final] == [
        ("c1:0", "c1", 0, "yes"),
        ("c1:1", "c1", 1, "no"),
        ("c1:2", "c1", 2, "yes"),
        ("c2:0", "c2", 0, "yes"),
        ("c3:0", "c3", 0, "no"),
    ]
    assert {r.row_id for r in final if r.result.details["cascade"]["escalated"]} == {"c1:1", "c3:0"}
    agg = run.summary.run["conversations"]["judges"][JUDGE]
    assert agg["c1"]["turns"] == 3 and agg["c1"]["min"] == 0.0 and agg["c1"]["mean"] == pytest.approx(2 / 3)
    assert agg["c3"]["pass_fraction"] == 0.0
    # each stage's own verdicts aggregate too: the weak model said yes on every turn
    assert run.summary.run["conversations"]["judges"][f"{JUDGE}@weak"]["c1"]["pass_fraction"] == 1.0
    on_disk = json.loads((tmp_path / "r" / "summary.json").read_text())["run"]["conversations"]["judges"]
    assert on_disk[JUDGE]["c1"]["min"] == 0.0


def test_a_panel_on_turn_results_aggregates_the_panel_verdicts_per_conversation(tmp_path: Path):
    a = scripted({"4.": "yes", "12.": "no", "10.": "yes", "Paris.": "yes", "Rome.": "no"}, "a")
    b = scripted({"4.": "yes", "12.": "no", "10.": "no", "Paris.": "yes", "Rome.": "no"}, "b")
    c = scripted({"4.": "no", "12.": "yes", "10.": "yes", "Paris.": "yes", "Rome.": "no"}, "c")
    run = localjudge.evaluate(CHATS, [JUDGE], panel=[a, b, c], out=tmp_path / "r", conversation="turn")
    assert values(run, JUDGE) == {"c1:0": "yes", "c1:1": "no", "c1:2": "yes", "c2:0": "yes", "c3:0": "no"}
    agg = run.summary.run["conversations"]["judges"]
    assert agg[JUDGE]["c1"] == {
        "turns": 3,
        "scored": 3,
        "mean": pytest.approx(2 / 3),
        "min": 0.0,
        "pass_fraction": pytest.approx(2 / 3),
    }
    assert agg[f"{JUDGE}@b"]["c1"]["pass_fraction"] == pytest.approx(1 / 3) and agg[f"{JUDGE}@c"]["c3"]["min"] == 0.0


def label_in_view(out: Path, judge: str, by_row_id: dict[str, str]) -> None:
    """Labels given the way `localjudge view` stores them: on a result's row index, for one judge."""
    from localjudge.store.db import Store

    with Store(out / "results.sqlite") as st:
        run_id = st.latest_run()
        index = dict(st.conn.execute("SELECT row_id, row_index FROM results WHERE run_id = ? AND judge = ?", (run_id, judge)))
    handle = RunHandle(run_id, out)
    try:
        for row_id, value in by_row_id.items():
            handle.add_label(index[row_id], judge, value, None, "tester", "browse")
    finally:
        handle.close()


def test_agree_of_session_results_with_labels_given_on_each_conversation(tmp_path: Path):
    engine = scripted({"10.": "no", "Paris.": "yes", "Rome.": "no"}, "s")
    run = localjudge.evaluate(CHATS, [JUDGE], engine=engine, out=tmp_path / "r", conversation="session")
    label_in_view(tmp_path / "r", JUDGE, {"c1": "yes", "c2": "yes", "c3": "no"})
    labels = label_rows(tmp_path / "r", JUDGE)
    assert sorted((lab["id"], lab["conversation_id"]) for lab in labels) == [("c1", "c1"), ("c2", "c2"), ("c3", "c3")]
    assert all("turn_index" not in lab for lab in labels)
    rep = agree(list(run.results), labels, "label", judge=JUDGE)
    assert rep.n_used == 3 and rep.accuracy == pytest.approx(2 / 3)


def test_agree_of_turn_results_with_labels_given_on_each_turn(tmp_path: Path):
    engine = scripted({"4.": "yes", "12.": "no", "10.": "yes", "Paris.": "yes", "Rome.": "no"}, "s")
    run = localjudge.evaluate(CHATS, [JUDGE], engine=engine, out=tmp_path / "r", conversation="turn")
    label_in_view(tmp_path / "r", JUDGE, {"c1:0": "yes", "c1:1": "yes", "c1:2": "yes", "c3:0": "no"})
    labels = label_rows(tmp_path / "r", JUDGE)
    assert sorted((lab["id"], lab["turn_index"]) for lab in labels) == [("c1:0", 0), ("c1:1", 1), ("c1:2", 2), ("c3:0", 0)]
    rep = agree(list(run.results), labels, "label", judge=JUDGE)
    assert rep.n_used == 4 and rep.accuracy == pytest.approx(3 / 4)


def feature_chats(n: int = 24, seed: int = 3) -> list[dict]:
    """`n` two-turn conversations; each answer carries a hidden feature x, the label of its turn is x > 0.5."""
    rng = random.Random(seed)
    chats = []
    for i in range(n):
        msgs = []
        for t in range(2):
            msgs += [
                {"role": "user", "content": f"Question {i}.{t}?"},
                {"role": "assistant", "content": f"An answer. feature={rng.random():.4f}"},
            ]
        chats.append({"id": f"k{i}", "messages": msgs})
    return chats


def biased(bias: float = 0.3) -> ScriptedEngine:
    """Says yes on a turn from x > `bias` (the labels say 0.5), P(yes) = sigmoid(20 (x - bias)) at the verdict."""

    def x_of(messages) -> float:
        return float(re.findall(r"feature=([0-9.]+)", messages[-1].content)[-1])  # the judged turn's answer is last

    def p(messages) -> float:
        return 1 / (1 + math.exp(-20 * (x_of(messages) - bias)))

    return ScriptedEngine(
        lambda m, f: PREFIX + ("yes" if p(m) > 0.5 else "no") + '"}',
        model_id="biased",
        choice_steps=lambda m, f: [(PREFIX, {"yes": p(m), "no": 1 - p(m)})],
    )


def test_align_on_turn_labels_recovers_the_known_bias_and_the_aligned_judge_runs_per_turn(tmp_path: Path):
    chats = feature_chats()
    opts = {"probs": True}
    run = localjudge.evaluate(chats, [JUDGE], engine=biased(), out=tmp_path / "r", conversation="turn", options=opts)
    xs = {r.row_id: float(re.findall(r"feature=([0-9.]+)", r.inputs["conversation"])[-1]) for r in run.results}
    label_in_view(tmp_path / "r", JUDGE, {rid: "yes" if x > 0.5 else "no" for rid, x in xs.items()})
    labels = labels_file_for(tmp_path / "r", JUDGE, tmp_path / "labels.jsonl")
    rep = align(JUDGE, labels, engine=biased(), out=tmp_path / "aligned", seed=0, test_fraction=0.3)
    assert rep.n_used == 48
    x_star = 0.3 + math.log(rep.threshold / (1 - rep.threshold)) / 20  # P(yes) >= t  <=>  x >= x*
    assert abs(x_star - 0.5) < 0.06, (rep.threshold, x_star)
    assert rep.after.kappa > rep.before.kappa
    aligned = load_judge_file(Path(rep.aligned_file))
    again = localjudge.evaluate(chats, [aligned], engine=biased(), out=tmp_path / "again", conversation="turn", options=opts)
    got = {r.row_id: r.result.value for r in again.results}
    wrong = [rid for rid, x in xs.items() if abs(x - 0.5) > 0.06 and got[rid] != ("yes" if x > 0.5 else "no")]
    assert wrong == [] and set(again.summary.run["conversations"]["judges"][aligned.name]) == {c["id"] for c in chats}


@pytest.mark.model
@pytest.mark.slow  # a real local Ray cluster and the real default model (workers: 1 thread each): minutes on 2 busy cores
def test_a_ray_run_of_sessions_gives_the_local_runs_results_positions_and_aggregates(ray_cluster, tmp_path):
    """(Per-turn runs on Ray were checked the same way once: equal; left out here for the time they take.)"""
    from localjudge.distributed import RayExecutor

    granularity = "session"
    kw = {"options": {"field_tokens": 24}, "conversation": granularity}
    local = localjudge.evaluate(
        CHATS, [JUDGE], out=tmp_path / "local", model_options={"reuse_prefix": False, "n_threads": 1}, **kw
    )
    ex = RayExecutor()
    ray = localjudge.evaluate(CHATS, [JUDGE], out=tmp_path / "ray", executor=ex, model_options={"reuse_prefix": False}, **kw)

    def cells(run) -> list[tuple]:
        return [
            (r.row_id, r.conversation_id, r.turn_index, r.result.value, r.result.score, r.result.raw_text, r.error)
            for r in run.results
        ]

    assert cells(ray) == cells(local) and ex.stats["cells"] == len(cells(local)) == (3 if granularity == "session" else 5)
    assert [c[1:3] for c in cells(ray)][:2] == (
        [("c1", None), ("c2", None)] if granularity == "session" else [("c1", 0), ("c1", 1)]
    )
    strip = lambda agg: {k: v for k, v in agg.items() if k != "prompt_tokens"}  # noqa: E731
    assert strip(ray.summary.run["conversations"]) == strip(local.summary.run["conversations"])
