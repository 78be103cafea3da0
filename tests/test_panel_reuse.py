"""Panel members are cached like solo runs: a member's cache key is the key a solo run of the same judge on the same
model gives the cell, so a panel reuses an earlier solo run in the same store (and the other way round), and a store
written while members were keyed `JUDGE@MEMBER` still resumes without judging (tests/data/legacy/panel_scripted.sqlite,
written by `localjudge run ... --panel scripted:a.json,scripted:b.json` before the change)."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from localjudge import evaluate
from localjudge.cli import main
from localjudge.engine.base import ScriptedEngine

PREFIX = '{"rationale": "scripted", "result": "'
JUDGE = "relevance_to_query"
LEGACY = Path(__file__).parent / "data" / "legacy"
DATA = Path(__file__).parent / "data" / "runner_qa.jsonl"


def noisy(name: str, noise: float = 0.2) -> ScriptedEngine:
    """Yes when the row's hidden feature, read with this model's own seeded error, exceeds 0.5."""

    def answer(messages, fmt) -> str:
        x = float(re.findall(r"feature=([0-9.]+)", messages[-1].content)[-1])
        return PREFIX + ("yes" if x + random.Random(f"{name}:{x}").gauss(0, noise) > 0.5 else "no") + '"}'

    return ScriptedEngine(answer, model_id=name)


def rows(n: int = 12) -> list[dict]:
    rng = random.Random(3)
    return [{"id": f"r{i}", "input": f"Q{i}?", "output": f"A. feature={rng.random():.4f}"} for i in range(n)]


def values(run, judge: str) -> dict[int, str]:
    return {r.row_index: r.result.value for r in run.results if r.judge == judge}


def test_a_panel_judges_only_the_member_without_an_earlier_solo_run_and_a_solo_run_reuses_a_member(tmp_path: Path):
    a, b = noisy("a"), noisy("b")
    solo = values(evaluate(rows(), [JUDGE], engine=a, out=tmp_path / "run"), JUDGE)  # read now: the panel's result replaces it
    assert a.calls == 12
    panel = evaluate(rows(), [JUDGE], panel=[a, b], out=tmp_path / "run")
    assert (a.calls, b.calls) == (12, 12)  # member a came from the solo run's cache, only b was judged
    assert panel.counts.evaluated == 12 and panel.counts.cached == 12
    assert values(panel, f"{JUDGE}@a") == solo
    assert {r.result.judge for r in panel.results if r.judge == f"{JUDGE}@a"} == {f"{JUDGE}@a"}
    # the other way round: a solo run of b after the panel reuses b's member results
    b2 = noisy("b")
    again = evaluate(rows(), [JUDGE], engine=b2, out=tmp_path / "run")
    assert b2.calls == 0 and again.counts.cached == 12
    assert values(again, JUDGE) == values(panel, f"{JUDGE}@b")
    assert {r.result.judge for r in again.results} == {JUDGE}
    # adding a member judges only it
    c = noisy("c")
    evaluate(rows(), [JUDGE], panel=[a, b, c], out=tmp_path / "run")
    assert (a.calls, b.calls, c.calls) == (12, 12, 12)


def _cli(out: Path, *model: str) -> dict:
    res = CliRunner().invoke(
        main,
        ["run", str(DATA), "--judges-dir", str(LEGACY / "judges"), "-j", "polite", "--limit", "3", "--out", str(out), "-q"]
        + list(model),
    )
    assert res.exit_code in (0, 1), res.output  # 1: the panel ties on one row
    return json.loads((out / "run.json").read_text())["counts"]


def test_a_panel_store_written_with_member_keys_resumes_without_judging_and_then_serves_solo_runs(tmp_path: Path):
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(LEGACY / "panel_scripted.sqlite", out / "results.sqlite")
    a, b = (f"scripted:{LEGACY / 'panel' / n}" for n in ("a.json", "b.json"))
    counts = _cli(out, "--panel", f"{a},{b}")
    assert counts["evaluated"] == 0 and counts["reused"] == 6 and counts["engine_loaded"] is False
    panel = {(r["judge"], r["row_index"]): r["result"]["value"] for r in map(json.loads, (out / "results.jsonl").open())}
    assert panel[("polite", 0)] == "yes" and panel[("polite@b.json", 1)] == "no"
    # resuming re-keyed the members to the solo keys: a solo run of b in the same store judges nothing
    counts = _cli(out, "--model", b)
    assert counts["evaluated"] == 0 and counts["cached"] == 3 and counts["engine_loaded"] is False
    solo = {r["row_index"]: r["result"]["value"] for r in map(json.loads, (out / "results.jsonl").open())}
    assert solo == {0: "yes", 1: "no", 2: "yes"}
