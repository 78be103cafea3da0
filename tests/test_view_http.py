"""`localjudge view` over HTTP (a real server process on loopback) and the labels around it: guards (Host,
CSRF, API key, CSP), server-side pagination, filters and search, bad input answered 400 (never 500), the
append-only label history, labels export/import, and `agree`/`align` reading a run directory's labels."""

from __future__ import annotations

import http.client
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from view_support import ViewServer, make_run

from localjudge.cli import main
from localjudge.labels.store import label_rows
from localjudge.store.db import MIGRATIONS, Store

LEGACY = Path(__file__).parent / "data" / "legacy"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One view over two synthetic runs (120 rows x 2 judges; 40 rows) for the module."""
    root = tmp_path_factory.mktemp("runs")
    make_run(root / "big", 120, judges=("polite", "relevance_to_query"))
    make_run(root / "small", 40)
    server = ViewServer("--runs-root", str(root))
    yield server, root
    server.stop()


def raw(server: ViewServer, path: str, host: str, method: str = "GET", headers: dict[str, str] | None = None) -> int:
    """Status of a request with a chosen Host header (urllib always sends the real one)."""
    netloc = server.url.removeprefix("http://")
    conn = http.client.HTTPConnection(netloc, timeout=10)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host)
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.system
def test_pages_carry_a_strict_content_security_policy_and_no_external_asset(served):
    server, _ = served
    for path in ("/", "/runs/big", "/runs/big/rows/0", "/runs/big/label", "/runs/big/agreement", "/compare?a=big&b=small"):
        status, text, headers = server.request(path)
        assert status == 200, (path, text)
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
        assert "<script>" not in text and " style=" not in text and " on" + "click=" not in text
        assert "http://" not in text.replace(server.url, "") and "https://" not in text, path


@pytest.mark.system
def test_a_foreign_host_header_is_refused(served):
    server, _ = served
    port = server.url.rsplit(":", 1)[1]
    assert raw(server, "/api/runs", f"127.0.0.1:{port}") == 200
    assert raw(server, "/api/runs", f"localhost:{port}") == 200
    assert raw(server, "/api/runs", f"evil.example:{port}") == 421
    assert raw(server, "/", "attacker.test") == 421


@pytest.mark.system
def test_writes_without_the_csrf_token_or_from_another_origin_are_refused(served):
    server, _ = served
    body = {"row_index": 0, "judge": "polite", "value": "yes", "labeller": "ann", "sample": "browse"}
    assert server.request("/api/runs/small/labels", "POST", body)[0] == 403
    assert server.request("/api/runs/small/labels", "POST", body, {"X-CSRF-Token": "guess"})[0] == 403
    tok = server.csrf()
    other = {"X-CSRF-Token": tok, "Origin": "http://evil.example"}
    assert server.request("/api/runs/small/labels", "POST", body, other)[0] == 403
    status, lab, _ = server.request("/api/runs/small/labels", "POST", body, {"X-CSRF-Token": tok})
    assert status == 200 and lab["value"] == "yes" and lab["labeller"] == "ann"


@pytest.mark.system
def test_rows_are_paginated_filtered_and_searched_on_the_server(served):
    server, _ = served
    _, p1, _ = server.request("/api/runs/big/rows?per=50")
    _, p3, _ = server.request("/api/runs/big/rows?per=50&page=5")
    assert p1["total"] == 240 and p1["pages"] == 5 and len(p1["items"]) == 50 and len(p3["items"]) == 40
    assert [(i["row_index"], i["judge"]) for i in p1["items"][:2]] == [(0, "polite"), (0, "relevance_to_query")]
    _, one, _ = server.request("/api/runs/big/rows?judge=polite&status=pass&sort=-expected&per=500")
    es = [i["expected_score"] for i in one["items"]]
    assert all(i["passed"] and i["judge"] == "polite" for i in one["items"]) and es == sorted(es, reverse=True)
    _, fails, _ = server.request("/api/runs/big/rows?judge=polite&status=fail&per=1")
    assert one["total"] + fails["total"] == 120
    _, found, _ = server.request("/api/runs/big/rows?q=question%2017&judge=polite")
    assert [i["row_index"] for i in found["items"]] == [17]
    _, pct, _ = server.request("/api/runs/big/rows?q=%25")  # a LIKE wildcard is searched as text
    assert pct["total"] == 0


@pytest.mark.system
@pytest.mark.parametrize(
    ("path", "method", "body", "status", "names"),
    [
        ("/api/runs/big/rows?per=0", "GET", None, 400, "per"),
        ("/api/runs/big/rows?page=x", "GET", None, 400, "page"),
        ("/api/runs/big/rows?status=maybe", "GET", None, 400, "status"),
        ("/api/runs/big/rows?page=" + "9" * 30, "GET", None, 400, "too large"),
        ("/api/runs/big/row/" + "9" * 30, "GET", None, 400, "too large"),
        ("/api/runs/nope/rows", "GET", None, 404, "nope"),
        ("/api/runs/big/row/99999", "GET", None, 404, "99999"),
        ("/api/runs/big/queue?judge=none", "GET", None, 400, "judge"),
        ("/api/runs/big/queue?judge=polite&order=best", "GET", None, 400, "order"),
        ("/api/runs/big/agreement?judge=zzz", "GET", None, 400, "zzz"),
        ("/api/runs/big/labels", "POST", b"{not json", 400, "JSON"),
        ("/api/runs/big/labels", "POST", [1, 2], 400, "object"),
        ("/api/runs/big/labels", "POST", {"row_index": "1", "judge": "polite"}, 400, "row_index"),
        ("/api/runs/big/labels", "POST", {"row_index": 1, "judge": "polite", "value": "maybe", "labeller": "a"}, 400, "maybe"),
        ("/api/runs/big/labels", "POST", {"row_index": 1, "judge": "polite", "value": "yes", "labeller": " "}, 400, "labeller"),
        (
            "/api/runs/big/labels",
            "POST",
            {"row_index": 1, "judge": "polite", "value": "yes", "labeller": "a", "sample": "x"},
            400,
            "sample",
        ),
        ("/api/runs/big/labels", "POST", {"row_index": 5000, "judge": "polite", "value": "yes", "labeller": "a"}, 400, "5000"),
        (
            "/api/runs/big/labels",
            "POST",
            {"row_index": 10**30, "judge": "polite", "value": "yes", "labeller": "a"},
            400,
            "too large",
        ),
    ],
)
def test_bad_input_gets_a_clear_error_never_a_500(served, path, method, body, status, names):
    server, _ = served
    got, answer, _ = server.request(path, method, body, {"X-CSRF-Token": server.csrf()} if method == "POST" else {})
    assert got == status and names in answer["error"], answer


@pytest.mark.system
def test_an_edit_and_an_undo_keep_the_label_history_and_the_latest_wins(served):
    server, root = served
    tok = {"X-CSRF-Token": server.csrf()}
    for value in ("no", "yes", None):
        body = {"row_index": 3, "judge": "relevance_to_query", "value": value, "labeller": "bo", "sample": "uncertain"}
        assert server.request("/api/runs/big/labels", "POST", body, tok)[0] == 200
    _, row, _ = server.request("/api/runs/big/row/3")
    assert [h["value"] for h in row["history"]] == ["no", "yes", None]
    assert row["labels"]["relevance_to_query"] is None  # withdrawn
    body = {
        "row_index": 3,
        "judge": "relevance_to_query",
        "value": "no",
        "labeller": "bo",
        "sample": "uncertain",
        "comment": "curt",
    }
    server.request("/api/runs/big/labels", "POST", body, tok)
    assert [(r["label"], r["comment"]) for r in label_rows(root / "big", "relevance_to_query")] == [("no", "curt")]


@pytest.mark.system
def test_queues_are_uncertain_first_or_a_seeded_random_sample(served):
    server, _ = served
    first = [server.request(f"/api/runs/big/queue?judge=polite&order=uncertain&pos={i}")[1]["item"] for i in range(3)]
    _, status, _ = server.request("/api/runs/big/status")
    assert status["cells_total"] == 240
    # rows where the two judges disagree come first, then the expected score nearest 0.5
    _, both, _ = server.request("/api/runs/big/rows?per=500&sort=row")
    by_row: dict[int, set] = {}
    for it in both["items"]:
        by_row.setdefault(it["row_index"], set()).add(it["passed"])
    split = {r for r, v in by_row.items() if len(v) > 1}
    assert {it["row_index"] for it in first} <= split
    r1 = [
        server.request(f"/api/runs/big/queue?judge=polite&order=random&seed=7&pos={i}")[1]["item"]["row_index"] for i in range(5)
    ]
    r2 = [
        server.request(f"/api/runs/big/queue?judge=polite&order=random&seed=7&pos={i}")[1]["item"]["row_index"] for i in range(5)
    ]
    r3 = [
        server.request(f"/api/runs/big/queue?judge=polite&order=random&seed=8&pos={i}")[1]["item"]["row_index"] for i in range(5)
    ]
    assert r1 == r2 != r3 and r1 != sorted(r1)


@pytest.mark.system
def test_compare_shows_per_judge_deltas_and_changed_rows(tmp_path):
    make_run(tmp_path / "base", 40)
    make_run(tmp_path / "same", 40)
    make_run(tmp_path / "other", 40, seed=1)
    server = ViewServer("--runs-root", str(tmp_path))
    try:
        status, text, _ = server.request("/compare?a=base&b=same")
        assert status == 200 and "Pass rate per judge" in text and "changed (0)" in text
        status, text, _ = server.request("/compare?a=base&b=other")
        _, a, _ = server.request("/api/runs/base/rows?per=500")
        _, b, _ = server.request("/api/runs/other/rows?per=500")
        changed = sum(x["passed"] != y["passed"] for x, y in zip(a["items"], b["items"], strict=True))
        rate = lambda page: sum(x["passed"] for x in page["items"]) / 40  # noqa: E731
        assert changed > 0 and f"changed ({changed})" in text and text.count("/runs/other/rows/") == changed
        assert f"{(rate(b) - rate(a)) * 100:+.1f} pt" in text
        assert server.request("/compare?a=base")[0] == 400 and server.request("/compare?a=base&b=nope")[0] == 404
    finally:
        server.stop()


@pytest.mark.system
def test_a_bind_beyond_loopback_needs_an_api_key_and_the_key_guards_every_request(tmp_path):
    run = make_run(tmp_path / "k", 3)
    res = CliRunner().invoke(main, ["view", str(run), "--host", "0.0.0.0"])
    assert res.exit_code == 2 and "--api-key" in res.output
    server = ViewServer(str(run), "--api-key", "sekret")
    try:
        assert server.request("/api/runs")[0] == 401
        assert server.request("/api/runs", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert server.request("/api/runs", headers={"Authorization": "Bearer sekret"})[0] == 200
        conn = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
        conn.request("GET", "/?key=sekret")  # opening the printed address once: a cookie, and the key leaves the URL
        resp = conn.getresponse()
        cookie = resp.getheader("set-cookie") or ""
        assert (
            resp.status == 303 and resp.getheader("location") == "/" and "lj_view_key=sekret" in cookie and "HttpOnly" in cookie
        )
        conn.close()
        assert server.request("/api/runs", headers={"Cookie": "lj_view_key=sekret"})[0] == 200
    finally:
        server.stop()


def test_a_store_written_before_labels_opens_gains_the_labels_table_and_keeps_its_results(tmp_path):
    shutil.copy(LEGACY / "default.sqlite", tmp_path / "results.sqlite")
    with Store(tmp_path / "results.sqlite") as st:
        assert st.schema_version == len(MIGRATIONS)
        names = [r[0] for r in st.conn.execute("SELECT name FROM _migrations ORDER BY applied, name")]
        assert (
            names[-7:]
            == [
                "002_labels",
                "003_label_binding",
                "004_format_spec",
                "005_conversations",
                "006_label_sampling",
                "007_stored_conversations",
                "008_i31_view_session",
            ]
            and st.count(st.latest_run() or "") == 3
        )
        assert st.conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 0


def test_labels_export_import_round_trip_and_agree_reads_a_run_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src, dst = make_run(tmp_path / "src", 12), make_run(tmp_path / "dst", 12)
    lines = [{"row_index": i, "judge": "polite", "label": "yes" if i % 3 else "no", "sample": "random"} for i in range(12)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    cli = CliRunner()
    assert "imported 12 labels" in cli.invoke(main, ["labels", "import", str(src), "in.jsonl", "--labeller", "cy"]).output
    assert cli.invoke(main, ["labels", "export", str(src), "-o", "out.jsonl"]).exit_code == 0
    exported = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(e["row_index"], e["label"], e["labeller"], e["sample"]) for e in exported] == [
        (i, "yes" if i % 3 else "no", "cy", "random") for i in range(12)
    ]
    assert exported[0]["input"] == "question 0"  # the inputs travel with the labels (align reads them)
    assert cli.invoke(main, ["labels", "import", str(dst), "out.jsonl"]).exit_code == 0
    a = cli.invoke(main, ["agree", str(src), "--labels", str(dst), "-o", "a.json"])
    b = cli.invoke(
        main,
        ["agree", str(src), "--labels", "in.jsonl", "--label-column", "label", "--key", "row_index=row_index", "-o", "b.json"],
    )
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    ra, rb = json.loads((tmp_path / "a.json").read_text()), json.loads((tmp_path / "b.json").read_text())
    assert ra["cohen_kappa"] == rb["cohen_kappa"] and ra["confusion"] == rb["confusion"] and ra["n_used"] == 12
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"row_index": 99, "judge": "polite", "label": "yes"}) + "\n")
    res = cli.invoke(main, ["labels", "import", str(src), str(bad)])
    assert res.exit_code == 2 and "line 1" in res.output and "99" in res.output
    empty = make_run(tmp_path / "empty", 3)
    res = cli.invoke(main, ["agree", str(src), "--labels", str(empty)])
    assert res.exit_code == 2 and "no labels" in res.output


def test_align_reads_a_run_directory_s_labels_with_their_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = make_run(tmp_path / "r", 12, judges=("relevance_to_query",))
    lines = [{"row_index": i, "judge": "relevance_to_query", "label": "yes" if i % 2 else "no"} for i in range(12)]
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    cli = CliRunner()
    assert cli.invoke(main, ["labels", "import", str(run), "l.jsonl", "--labeller", "dee"]).exit_code == 0
    answer = json.dumps({"rationale": "fine", "result": "yes"})
    res = cli.invoke(
        main,
        [
            "align",
            "relevance_to_query",
            "--labels",
            str(run),
            "--out",
            "al",
            "--model",
            "scripted:",
            "--option",
            f"response={answer}",
        ],
    )
    # the labels reached align with the rows' inputs (the judge ran on them); the scripted model has no token
    # probabilities, which align needs: that is the error, not the labels
    assert res.exit_code == 2 and "no token probabilities" in res.output, res.output
    written = [json.loads(x) for x in (tmp_path / "al" / "labels_from_run.jsonl").read_text().splitlines()]
    assert len(written) == 12 and written[1]["label"] == "yes" and written[1]["output"].startswith("answer 1")


@pytest.mark.parametrize(
    ("fmt", "kind", "allowed", "values", "keys"),
    [
        ("yes_no_json(field_tokens=96)", "categorical", ["yes", "no"], ["yes", "no"], ["y", "n"]),
        ("score_json(min=1, max=5, decimals=0, field_tokens=80)", "numeric", None, [1, 2, 3, 4, 5], ["1", "2", "3", "4", "5"]),
        ("score_json(min=1, max=10, decimals=0)", "numeric", None, list(range(1, 11)), list("1234567890")),
        ("score_json(min=0, max=1, decimals=2)", "numeric", None, [0.0, 0.25, 0.5, 0.75, 1.0], list("12345")),
        ("pairwise_json(field_tokens=80)", "pairwise", [1, 2, "tie"], [1, 2, "tie"], ["1", "2", "t"]),
        ("choice(labels=...)", "categorical", ["A", "B", "C"], ["A", "B", "C"], ["1", "2", "3"]),
    ],
)
def test_each_judge_kind_gets_one_distinct_key_per_value_of_its_own_domain(fmt, kind, allowed, values, keys):
    from localjudge.labels.store import value_domain

    dom = value_domain(fmt, kind, allowed)
    assert dom.values == values and dom.keys == keys and len(set(dom.keys)) == len(dom.keys)


def test_a_running_run_shows_progress_and_an_eta_and_a_silent_one_reads_as_interrupted(tmp_path, monkeypatch):
    from localjudge.view import runs as view_runs

    run = make_run(tmp_path / "live", 5, status="running", planned=20)
    handle = view_runs.RunHandle("live", run)
    try:
        st = handle.status()
        assert st["status"] == "running" and st["cells_done"] == 5 and st["cells_total"] == 20 and st["progress"] == 0.25
        assert st["eta_s"] is not None and st["eta_s"] >= 0
        monkeypatch.setattr(view_runs, "STALE_S", -1.0)  # nothing committed "for too long": the process died
        st = handle.status()
        assert st["status"] == "interrupted" and st["eta_s"] is None
    finally:
        handle.close()
    done = view_runs.RunHandle("done", make_run(tmp_path / "done", 5))
    try:
        assert done.status()["status"] == "finished" and done.status()["eta_s"] is None
    finally:
        done.close()


@pytest.mark.system
def test_a_real_run_s_row_shows_the_prompt_as_sent_its_raw_output_and_record(tmp_path):
    """A run of catalog judges (score and pairwise in both orders) on a scripted engine: the row page re-renders
    each prompt and says its hash matches the record; the labelling view offers each judge's own values."""
    from localjudge import evaluate
    from localjudge.engine.base import ScriptedEngine
    from localjudge.formats import PairwiseJSON, ScoreJSON
    from localjudge.judges import get_judge
    from localjudge.judges.pairwise import BothOrders

    def answer(messages, fmt):
        if isinstance(fmt, PairwiseJSON):
            return json.dumps({"better_response": 1, "explanation": "the first one </script>"})
        if isinstance(fmt, ScoreJSON):
            return json.dumps({"eval_score": 4, "explanation": "coherent"})
        return json.dumps({"rationale": "on topic", "result": "yes"})

    data = [
        {"id": f"q{i}", "question": f"Question {i}?", "answer": "an answer", "context": "ctx", "answer_1": "a", "answer_2": "b"}
        for i in range(3)
    ]
    evaluate(
        data,
        ["relevance_to_query", "coherence", BothOrders(get_judge("pairwise"))],
        engine=ScriptedEngine(answer, model_id="scripted"),
        out=tmp_path / "real",
    )
    server = ViewServer(str(tmp_path / "real"))
    try:
        status, page, _ = server.request("/runs/real/rows/1")
        assert status == 200 and page.count("its hash matches the record") == 3, page[:2000]
        assert "Question 1?" in page and "the first one &lt;/script&gt;" in page and "prompt_hash" in page
        status, label_page, _ = server.request("/runs/real/label")
        domains = json.loads(re.search(r'data-domains="([^"]+)"', label_page).group(1).replace("&quot;", '"'))
        assert domains["relevance_to_query"]["keys"] == ["y", "n"]
        assert domains["pairwise"]["values"] == [1, 2, "tie"]
        assert domains["coherence"]["kind"] == "numeric" and len(domains["coherence"]["values"]) >= 3
        tok = {"X-CSRF-Token": server.csrf()}
        body = {"row_index": 0, "judge": "pairwise", "value": "tie", "labeller": "ann", "sample": "random"}
        assert server.request("/api/runs/real/labels", "POST", body, tok)[0] == 200
        body = {"row_index": 0, "judge": "coherence", "value": "4", "labeller": "ann", "sample": "random"}
        assert server.request("/api/runs/real/labels", "POST", body, tok)[0] == 400  # a number, not text
    finally:
        server.stop()
