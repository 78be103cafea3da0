"""`localjudge view` on panel and cascade runs (scripted members of known bias, as in tests/test_panel.py), a real
view server on loopback: the members show beside the panel's verdict and in the row detail, never as judges to
label; the run page carries the figures summary.json holds; a label of the panel scores each member; the uncertain
queue puts the rows the members disagree on first; a cascade shows which rows were escalated. Also the view's
speed-ups (indexes, trigram search) answer exactly what a scan answers, and a store the view indexed still resumes."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from view_support import ViewServer, feature_rows, make_panel_run, make_run, panel_member

from localjudge import evaluate
from localjudge.engine.base import ScriptedEngine
from localjudge.labels.agreement import agree
from localjudge.view.runs import RunHandle

pytestmark = pytest.mark.system

PREFIX = '{"rationale": "scripted", "result": "'
JUDGE = "relevance_to_query"


def member(name: str, noise: float) -> ScriptedEngine:
    """A scripted member of known bias (view_support.panel_member)."""
    return panel_member(name, noise)


def data(n: int) -> list[dict]:
    return feature_rows(n)


@pytest.fixture(scope="module")
def panel_run(tmp_path_factory):
    """A 40-row panel of three noisy members, served."""
    root = tmp_path_factory.mktemp("panel")
    rows = data(40)
    run = make_panel_run(root / "pan", 40)
    server = ViewServer(str(root / "pan"))
    yield server, run, rows, root / "pan"
    server.stop()


def test_a_panel_is_one_judge_with_its_members_verdicts_beside_it(panel_run):
    server, run, _, _ = panel_run
    _, st, _ = server.request("/api/runs/pan/status")
    assert st["judges"] == [JUDGE] and st["members"] == {JUDGE: [f"{JUDGE}@m{k}" for k in range(3)]}
    assert st["cells_done"] == st["cells_total"] == 160 and st["progress"] == 1.0
    _, page, _ = server.request("/api/runs/pan/rows?per=500")
    assert page["total"] == 40 and {it["judge"] for it in page["items"]} == {JUDGE}
    stored = {(r.row_index, r.judge): r.result for r in run.results}
    n_split = 0
    for it in page["items"]:
        assert [m["member"] for m in it["members"]] == ["m0", "m1", "m2"]
        for m in it["members"]:
            assert m["value"] == stored[(it["row_index"], f"{JUDGE}@{m['member']}")].value
        votes = {m["value"] for m in it["members"]}
        assert it["members_disagree"] == (len(votes) > 1)
        n_split += it["members_disagree"]
    assert 0 < n_split < 40  # noisy members: some rows split, not all
    # a member is not a judge of the run: not filtered on, labelled, queued or scored alone
    tok = {"X-CSRF-Token": server.csrf()}
    body = {"row_index": 0, "judge": f"{JUDGE}@m0", "value": "yes", "labeller": "x"}
    status, err, _ = server.request("/api/runs/pan/labels", "POST", body, tok)
    assert status == 400 and "is not a judge of this run" in err["error"]
    assert server.request(f"/api/runs/pan/queue?judge={JUDGE}@m1")[0] == 400


def test_the_run_page_shows_the_panel_figures_of_the_summary(panel_run):
    server, run, _, out = panel_run
    summary = json.loads((out / "summary.json").read_text())["run"]["panel"]["judges"][JUDGE]
    _, html, _ = server.request("/runs/pan")
    section = html[html.index('<div id="trust-figures">') :]
    k = summary["fleiss_kappa"]
    assert f"{k:.3f} (n={summary['n_kappa']})" in section and f"<td>{summary['ties']}</td>" in section
    for lab, a in summary["member_agreement"].items():
        assert re.search(rf'data-member="{lab}"><td>{lab}</td><td class="agreement">{a["agreement"]:.1%}</td>', section)
    _, st, _ = server.request("/api/runs/pan/status")
    assert st["trust"]["figures"]["judges"][JUDGE] == summary


def test_the_row_detail_shows_each_members_result_without_label_buttons(panel_run):
    server, run, _, _ = panel_run
    _, html, _ = server.request("/runs/pan/rows/5")
    mine = {r.judge: r.result for r in run.results if r.row_index == 5}
    table = html[html.index('<table class="members">') : html.index("</table>", html.index('<table class="members">'))]
    for k in range(3):
        res = mine[f"{JUDGE}@m{k}"]
        assert re.search(rf'data-member="m{k}">.*?<td>&quot;{res.value}&quot;</td>', table)
        assert f'id="judge-{JUDGE}@m{k}"' in html and f"member of {JUDGE}" in html
    # label buttons for the panel only
    assert set(re.findall(r'class="label-btn" data-judge="([^"]+)"', html)) == {JUDGE}
    assert "cannot re-render the prompt" not in html  # a member is prompted as its panel's judge


def test_a_label_of_the_panel_scores_each_member_against_the_same_labels(panel_run):
    server, run, rows, _ = panel_run
    tok = {"X-CSRF-Token": server.csrf()}
    for i in range(20):
        body = {"row_index": i, "judge": JUDGE, "value": rows[i]["label"], "labeller": "ann", "sample": "random"}
        assert server.request("/api/runs/pan/labels", "POST", body, tok)[0] == 200
    _, a, _ = server.request(f"/api/runs/pan/agreement?judge={JUDGE}")
    assert a["n_labels"] == 20 and set(a["members"]) == {"m0", "m1", "m2"}
    results = list(run.results)
    for k in range(3):
        want = agree(results, rows[:20], "label", judge=f"{JUDGE}@m{k}")
        got = a["members"][f"m{k}"]
        assert got["n_used"] == 20 and got["accuracy"] == pytest.approx(want.accuracy)
        assert got["cohen_kappa"] == pytest.approx(want.cohen_kappa)
    assert a["all"]["accuracy"] == pytest.approx(agree(results, rows[:20], "label", judge=JUDGE).accuracy)


def test_the_uncertain_queue_puts_the_rows_the_members_split_on_first(panel_run):
    server, _, _, _ = panel_run
    _, page, _ = server.request("/api/runs/pan/rows?per=500")
    split = {it["row_index"] for it in page["items"] if it["members_disagree"]}
    order = []
    for pos in range(40):
        _, q, _ = server.request(f"/api/runs/pan/queue?judge={JUDGE}&order=uncertain&pos={pos}")
        order.append(q["item"]["row_index"])
    assert sorted(order) == list(range(40))
    assert set(order[: len(split)]) == split
    _, q, _ = server.request(f"/api/runs/pan/queue?judge={JUDGE}&order=uncertain&pos=0")
    assert q["item"]["members_disagree"] is True and len(q["item"]["members"]) == 3


def test_a_cascade_shows_which_rows_were_escalated_and_both_verdicts(tmp_path: Path):
    import math

    def weak() -> ScriptedEngine:
        def p_yes(m) -> float:
            return 1 / (1 + math.exp(-20 * (float(re.findall(r"feature=([0-9.]+)", m[-1].content)[-1]) - 0.35)))

        return ScriptedEngine(
            lambda m, f: PREFIX + ("yes" if p_yes(m) > 0.5 else "no") + '"}',
            model_id="weak",
            choice_steps=lambda m, f: [(PREFIX, {"yes": p_yes(m), "no": 1 - p_yes(m)})],
        )

    rows = data(30)
    run = evaluate(
        rows,
        [JUDGE],
        engine=weak(),
        escalate_to=member("strong", 0.0),
        escalate_below=0.9,
        options={"probs": True},
        out=tmp_path / "cas",
    )
    esc = {r.row_index for r in run.results if r.judge == JUDGE and r.result.details["cascade"]["escalated"]}
    assert 0 < len(esc) < 30
    server = ViewServer(str(tmp_path / "cas"))
    try:
        _, st, _ = server.request("/api/runs/cas/status")
        assert st["judges"] == [JUDGE] and st["trust"]["kind"] == "cascade"
        _, page, _ = server.request("/api/runs/cas/rows?per=100")
        assert {it["row_index"] for it in page["items"] if it["cascade"]["escalated"]} == esc
        ri = min(esc)
        _, html, _ = server.request(f"/runs/cas/rows/{ri}")
        assert "<h3>Cascade</h3>" in html and "<tr><th>escalated</th><td>yes</td></tr>" in html
        assert f'id="judge-{JUDGE}@strong"' in html and f'id="judge-{JUDGE}@weak"' in html
        _, html, _ = server.request("/runs/cas")
        frac = run.summary.run["cascade"]["judges"][JUDGE]["fraction_escalated"]
        assert f"{len(esc)} of 30 ({frac:.1%})" in html
        # labels of the cascade score the first model on every labelled row, the strong one on those it judged
        tok = {"X-CSRF-Token": server.csrf()}
        for i in range(12):
            body = {"row_index": i, "judge": JUDGE, "value": rows[i]["label"], "labeller": "ann", "sample": "random"}
            assert server.request("/api/runs/cas/labels", "POST", body, tok)[0] == 200
        _, a, _ = server.request(f"/api/runs/cas/agreement?judge={JUDGE}")
        assert a["members"]["weak"]["n_used"] == 12
        assert a["members"]["strong"]["n_used"] == len(esc & set(range(12)))
    finally:
        server.stop()


def test_sorting_and_search_through_the_indexes_answer_what_a_scan_answers(tmp_path: Path, monkeypatch):
    run = make_run(tmp_path / "ix", 300, judges=("polite", "relevance_to_query"), hostile=["50% off_sale \\ here"])
    server = ViewServer(str(run))
    try:
        db = sqlite3.connect(run / "results.sqlite")
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'view_%'")}
        assert {"view_expected_asc", "view_expected_desc", "view_score_asc", "view_queue"} <= names
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT row_index FROM results WHERE run_id = 'x' ORDER BY "
            "json_extract(result, '$.expected_score') IS NULL, json_extract(result, '$.expected_score') DESC, row_index, judge"
        ).fetchall()
        assert "view_expected_desc" in str(plan) and "TEMP B-TREE" not in str(plan)
        es = []
        for p in (1, 2, 3):
            _, page, _ = server.request(f"/api/runs/ix/rows?sort=-expected&page={p}&per=200")
            es += [it["expected_score"] for it in page["items"]]
        assert len(es) == 600 and es == sorted(es, reverse=True)
        queries = ["question 12", "QUESTION 7", "r29", "is curt", "50% off", "off_sale", "\\ here", "zz-nothing"]
        want = {q: _contains(run, q) for q in queries}  # the oracle: a case-insensitive substring test in Python
        assert len(want["question 12"]) == 2 * 11 and len(want["50% off"]) == 2 and not want["zz-nothing"]
        for q in queries:
            got = server.request(f"/api/runs/ix/rows?per=500&q={_quote(q)}")[1]
            assert got["searched_by"] == "index"  # the first search waits for the index being built
            assert [(i["row_index"], i["judge"]) for i in got["items"]] == want[q], q
        assert (run / "view-search.sqlite").is_file()
    finally:
        server.stop()
    # an SQLite without FTS5 scans the same text: the same answers
    monkeypatch.setattr("localjudge.view.runs.has_fts5", lambda: False)
    handle = RunHandle("ix", run)
    try:
        for q in queries:
            got = handle.rows(q=q, per=500)
            assert got["searched_by"] == "scan" and [(i["row_index"], i["judge"]) for i in got["items"]] == want[q], q
    finally:
        handle.close()


def _contains(run: Path, q: str) -> list[tuple[int, str]]:
    out = []
    for line in (run / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        res = r["result"]
        text = " ".join(
            [r["row_id"], json.dumps(r["inputs"])]
            + [str(res.get(k) or "") for k in ("value", "rationale", "raw_text", "unscored_reason", "error")]
        )
        if q.lower() in text.lower():
            out.append((r["row_index"], r["judge"]))
    return sorted(out)


def _quote(q: str) -> str:
    from urllib.parse import quote

    return quote(q, safe="")


def test_a_store_the_view_indexed_keeps_its_schema_and_resumes_a_run(tmp_path: Path):
    rows = data(6)
    out = tmp_path / "res"
    engine = member("solo", 0.1)
    evaluate(rows[:3], [JUDGE], engine=engine, out=out)
    version = sqlite3.connect(out / "results.sqlite").execute("PRAGMA user_version").fetchone()[0]
    server = ViewServer(str(out))
    server.request("/api/runs/res/rows?sort=expected")
    server.stop()
    db = sqlite3.connect(out / "results.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == version
    assert db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'view_%'").fetchone()[0] == 5
    db.close()
    run = evaluate(rows, [JUDGE], engine=engine, out=out)  # resumes: the first three from the store
    assert run.counts.evaluated == 3 and run.counts.reused + run.counts.cached == 3 and engine.calls == 6


def test_the_row_detail_shows_the_think_text_as_its_own_block(tmp_path: Path):
    thinker = ScriptedEngine(
        lambda m, f: "<think>the answer names the <b>feature</b>, so it is on topic</think>" + PREFIX + 'yes"}',
        model_id="thinker",
    )
    plain = ScriptedEngine(lambda m, f: PREFIX + 'no"}', model_id="plain")
    evaluate(data(2), [JUDGE], engine=thinker, out=tmp_path / "think")
    evaluate(data(2), [JUDGE], engine=plain, out=tmp_path / "plain")
    server = ViewServer("--runs-root", str(tmp_path))
    try:
        _, html, _ = server.request("/runs/think/rows/1")
        block = re.search(r"<h3>Think</h3><pre class='think'>(.*?)</pre>", html)
        assert block and block.group(1) == "the answer names the &lt;b&gt;feature&lt;/b&gt;, so it is on topic"
        _, html, _ = server.request("/runs/plain/rows/1")
        assert "<h3>Think</h3>" not in html and "<h3>Rationale</h3>" in html
    finally:
        server.stop()
