"""The labelling view's trust panel (PPI++ beside labels-only and Rogan–Gladen, "N more labels to reach ±W") and the
`active` queue whose labels store their sampling probability, over HTTP against a real `localjudge view` server;
tests/test_view_browser.py drives the same page in Chromium."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from view_support import ViewServer, make_run

from localjudge.cli import main
from localjudge.labels.store import label_rows
from localjudge.store.db import Store
from localjudge.trust.active import WeightedLabel, active_mean

pytestmark = pytest.mark.system


def _label(server, tok: str, row: int, value: str, sample: str, probability: float | None = None):
    body = {"row_index": row, "judge": "polite", "value": value, "labeller": "ann", "sample": sample}
    if probability is not None:
        body["probability"] = probability
    return server.request("/api/runs/r/labels", "POST", body, {"X-CSRF-Token": tok})


def _human(i: int) -> str:
    """A labeller who agrees with the synthetic judge except on every fifth row."""
    from view_support import result_row

    yes = result_row("x", i).result.passed
    return ("yes" if yes else "no") if i % 5 else ("no" if yes else "yes")


def test_the_trust_panel_gives_the_lines_agree_prints_for_the_same_store_and_its_interval_shrinks(tmp_path, monkeypatch):
    run = make_run(tmp_path / "r", 60)
    server = ViewServer(str(run))
    try:
        tok = server.csrf()
        st, empty, _ = server.request("/api/runs/r/trust?judge=polite")
        assert st == 200 and empty["estimates"] is None and empty["width"] == 0.05
        widths = []
        for i in range(24):
            assert _label(server, tok, i, _human(i), "random")[0] == 200
            if i in (5, 11, 23):
                _, t, _ = server.request("/api/runs/r/trust?judge=polite&width=0.05")
                widths.append(t["estimates"]["ppi"]["interval"][1] - t["estimates"]["ppi"]["interval"][0])
        assert widths[0] > widths[1] > widths[2]
        _, panel, _ = server.request("/api/runs/r/trust?judge=polite&width=0.15")
        assert "more labels to reach ±0.15 (PPI++; labels alone: " in panel["budget"]["text"]
        assert server.request("/api/runs/r/trust?judge=polite&width=2")[0] == 400
        assert server.request("/api/runs/r/trust?judge=nobody")[0] == 400
    finally:
        server.stop()
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["agree", str(run), "--labels", str(run), "--target-width", "0.15", "-o", "a.json"])
    assert res.exit_code == 0, res.output
    printed = [x.strip() for x in res.output.splitlines()]
    assert panel["lines"] and all(line in printed for line in panel["lines"])
    assert json.loads((tmp_path / "a.json").read_text())["trust"]["estimates"] == panel["estimates"]


def test_the_active_queue_serves_the_most_uncertain_row_first_and_its_stored_probability_reaches_agree(tmp_path, monkeypatch):
    run = make_run(tmp_path / "r", 40)
    server = ViewServer(str(run))
    try:
        tok = server.csrf()
        _, every, _ = server.request("/api/runs/r/queue?judge=polite&order=active&budget=40")
        with Store(run / "results.sqlite") as st:
            es = {ri: json.loads(r)["expected_score"] for ri, r in st.conn.execute("SELECT row_index, result FROM results")}
        most = min(es, key=lambda r: (abs(es[r] - 0.5), r))
        assert every["n"] == 40 and every["item"]["row_index"] == most and every["item"]["probability"] == 1.0
        _, q, _ = server.request("/api/runs/r/queue?judge=polite&order=active&budget=12&seed=3")
        drawn = [
            server.request(f"/api/runs/r/queue?judge=polite&order=active&budget=12&seed=3&pos={k}")[1]["item"]
            for k in range(q["n"])
        ]
        gaps = [abs(it["expected_score"] - 0.5) for it in drawn]
        assert gaps == sorted(gaps) and 0 < len(drawn) < 40
        probs = {it["row_index"]: it["probability"] for it in drawn}
        assert max(probs.values()) > min(probs.values())  # the unsure rows were likelier to be drawn
        for it in drawn:
            assert _label(server, tok, it["row_index"], _human(it["row_index"]), "active", it["probability"])[0] == 200
        bad = _label(server, tok, 1, "yes", "active")
        assert bad[0] == 400 and "probability" in bad[1]["error"] and "\n" not in bad[1]["error"]
        assert _label(server, tok, 1, "yes", "random", 0.5)[0] == 400
        for bad_query in ("budget=-3", "budget=41", "budget=99999999999999999999", "seed=-1", "budget=x"):
            got = server.request(f"/api/runs/r/queue?judge=polite&order=active&{bad_query}")
            assert got[0] == 400 and "parameter" in got[1]["error"], bad_query
        assert _label(server, tok, 1, "yes", "active", 1.5)[0] == 400
        _, panel, _ = server.request("/api/runs/r/trust?judge=polite")
    finally:
        server.stop()
    stored = {r["row_index"]: r["probability"] for r in label_rows(run, "polite")}
    assert stored == probs
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["agree", str(run), "--labels", str(run), "-o", "a.json"])
    assert res.exit_code == 0, res.output
    active = json.loads((tmp_path / "a.json").read_text())["trust"]["active"]
    order = sorted(es)
    pos = {r: i for i, r in enumerate(order)}
    truth = [WeightedLabel(row=pos[r], label=float(_human(r) == "yes"), probability=p) for r, p in probs.items()]
    want = active_mean([es[r] for r in order], truth)
    assert abs(active["estimate"] - want.estimate) < 1e-12 and active["n_labels"] == len(probs)
    assert active == panel["active"]
    assert "pass rate by active labels (Horvitz–Thompson)" in res.output
    out = CliRunner().invoke(main, ["labels", "export", str(run), "-o", "l.jsonl"])
    assert out.exit_code == 0, out.output
    exported = [json.loads(x) for x in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert {e["row_index"]: e["probability"] for e in exported} == probs
    imported = make_run(tmp_path / "copy", 40)
    assert CliRunner().invoke(main, ["labels", "import", str(imported), "l.jsonl"]).exit_code == 0
    assert {r["row_index"]: r["probability"] for r in label_rows(imported, "polite")} == probs


def test_every_numeric_query_parameter_out_of_range_is_one_400_line_naming_it(tmp_path):
    """width=1e-300 on a labelled judge was a 500 (ZeroDivisionError in trust/budget.py); every numeric parameter of
    the view now goes through view/params.py: not finite, out of range or not a number is a 400 naming it."""
    run = make_run(tmp_path / "r", 30)
    server = ViewServer(str(run))
    bad = {
        "/api/runs/r/trust?judge=polite&width=": ["1e-300", "5e-324", "0", "nan", "inf", "-0.1", "1", "x", "1" * 40],
        "/api/runs/r/rows?page=": ["0", "-1", "nan", "1e3", str(2**62 + 1), "9" * 40],
        "/api/runs/r/rows?per=": ["0", "501", "inf"],
        "/api/runs/r/queue?judge=polite&order=random&pos=": ["-1", "inf", "1.5"],
        "/api/runs/r/queue?judge=polite&order=random&seed=": ["-1", str(2**63)],
        "/api/runs/r/queue?judge=polite&order=active&budget=": ["-3", "1e3", "99999999999999999999"],
        "/runs/r/rows/0?expand=": ["-1", "nan"],
    }
    try:
        tok = server.csrf()
        for i in range(8):
            assert _label(server, tok, i, _human(i), "random")[0] == 200
        for prefix, values in bad.items():
            name = prefix.rsplit("&", 1)[-1].rsplit("?", 1)[-1].rstrip("=")
            for v in values:
                status, got, _ = server.request(prefix + v)
                assert status == 400, (prefix + v, status, got)
                assert got["error"].startswith(f"parameter {name}=") and "\n" not in got["error"], got
        assert server.request("/api/runs/r/trust?judge=polite&width=0.0001")[0] == 200
        assert server.request("/api/runs/r/rows?page=2&per=500")[0] == 200
    finally:
        server.stop()
