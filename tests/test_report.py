"""The HTML report and the `report` / `agree` commands, on run directories written by the real runner
(real catalog judges, scripted engine answers)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from localjudge import evaluate
from localjudge.cli import main
from localjudge.engine.base import ScriptedEngine
from localjudge.formats import PairwiseJSON, ScoreJSON
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders
from localjudge.report import RunDirError, build_report, compare_runs, load_run, render_report

XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def report_rows() -> list[dict]:
    rows = []
    for i in range(6):
        rows.append(
            {
                "id": f"q{i}",
                "question": f"Question {i}?" + (XSS if i == 1 else ""),
                "answer": ["fine answer", "wrong answer </script>", "garbled", "fine answer", "wrong", "fine"][i],
                "context": "some context",
                "answer_1": "the good one" if i % 2 else "meh",
                "answer_2": "meh" if i % 2 else "the good one",
                "label": ["yes", "no", "no", "yes", "yes", "yes"][i],
                "pref": 1 if i % 2 else 2,
            }
        )
    return rows


def scripted(all_yes: bool = False):
    def fn(messages, fmt):
        text = messages[-1].content
        if isinstance(fmt, PairwiseJSON):
            first = text.split("Response 1:")[-1].split("Response 2:")[0]
            return json.dumps({"better_response": 1 if "good" in first else 0, "explanation": "content " + XSS})
        if isinstance(fmt, ScoreJSON):
            return json.dumps({"eval_score": 2 if "wrong" in text else 4, "explanation": "coherent enough"})
        if "garbled" in text and not all_yes:
            return "I refuse to answer in JSON"
        verdict = "no" if "wrong" in text and not all_yes else "yes"
        return json.dumps({"rationale": f"Let's think step by step: {verdict}", "result": verdict})

    return ScriptedEngine(fn, model_id="scripted")


def make_runs(d: Path) -> dict[str, Path]:
    """The report rows as data, a current run (pairwise in both orders) and an all-yes base run in `d`."""
    data = d / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in report_rows()), encoding="utf-8")
    evaluate(data, ["relevance_to_query", "coherence", BothOrders(get_judge("pairwise"))], engine=scripted(), out=d / "current")
    evaluate(data, ["relevance_to_query", "coherence", "pairwise"], engine=scripted(all_yes=True), out=d / "base")
    return {"data": data, "current": d / "current", "base": d / "base"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_runs(tmp_path_factory.mktemp("runs"))


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def parse(html: str) -> list[tuple[str, dict]]:
    p = Tags()
    p.feed(html)
    return p.tags


def test_report_is_one_self_contained_file_with_no_network_references(runs, tmp_path):
    out = build_report(runs["current"], tmp_path / "r.html")
    html = out.read_text(encoding="utf-8")
    tags = parse(html)
    assert not [t for t, a in tags if t in ("link", "iframe", "object", "embed")]
    assert not [a for t, a in tags if "src" in a], "no external or inline src attributes"
    assert all(a["href"].startswith("#") for t, a in tags if "href" in a)
    csp = [a["content"] for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]
    assert sum(t == "script" for t, _ in tags) == 1 and sum(t == "style" for t, _ in tags) == 1


def test_report_escapes_every_text_taken_from_the_run(runs):
    html = render_report(runs["current"])
    assert "window.__xss" in html  # the text is shown ...
    assert XSS not in html and "<img src=x" not in html  # ... but never as markup
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert html.count("</script>") == 1


def test_report_has_charts_per_judge_unscored_reasons_and_every_row(runs):
    html = render_report(runs["current"])
    tags = parse(html)
    assert sum(1 for t, a in tags if t == "svg" and "distribution" in a.get("class", "")) == 3
    assert sum(1 for t, a in tags if t == "svg" and "pass-rate" in a.get("class", "")) == 1
    assert "parse_error" in html  # the garbled row of relevance_to_query
    assert sum(1 for t, a in tags if t == "tr" and "data-judge" in a) == 18  # 6 rows x 3 judges
    assert {a["data-status"] for t, a in tags if t == "tr" and "data-status" in a} == {"pass", "fail", "unscored"}


def test_report_shows_pairwise_outcomes_and_position_figures_for_both_orders(runs):
    html = render_report(runs["current"])
    assert 'id="pairwise"' in html and "both orders" in html
    assert "position consistency" in html and "100.0%" in html  # the scripted judge follows content
    assert "first-position preference" in html and "50.0%" in html


def test_report_compare_shows_deltas_and_the_rows_whose_verdict_changed(runs):
    html = render_report(runs["current"], compare=runs["base"])
    assert 'id="compare"' in html and "deltas are this run − base" in html
    tags = parse(html)
    changed = [a for t, a in tags if t == "table" and "changed" in a.get("class", "")]
    assert changed
    # relevance_to_query: rows 1 and 4 went yes -> no, row 2 yes -> unscored; the pairwise winners are the same
    # in one order and in both orders (the scripted judge follows content), coherence is unchanged
    assert "Rows whose verdict changed (3)" in html
    c = compare_runs(load_run(runs["current"]), load_run(runs["base"]))
    assert [(r.row_id, r.judge, r.before, r.after) for r in c.changed] == [
        ("q1", "relevance_to_query", "yes", "no"),
        ("q2", "relevance_to_query", "yes", "unscored"),
        ("q4", "relevance_to_query", "yes", "no"),
    ]
    d = {x.judge: x for x in c.deltas}
    assert d["relevance_to_query"].pass_to_fail == 2 and d["relevance_to_query"].n_common == 6
    assert d["relevance_to_query"].pass_delta == pytest.approx(3 / 5 - 1.0)
    assert d["pairwise"].n_changed == 0 and d["coherence"].mean_delta == 0


def test_report_agreement_section_when_labels_are_given(runs, tmp_path):
    from localjudge.labels.agreement import agreements_for_run

    run = load_run(runs["current"])
    reports, skipped = agreements_for_run(run, runs["data"], "label")
    assert [r.judge for r in reports] == ["relevance_to_query"]
    assert {j for j, _ in skipped} == {"coherence", "pairwise"}
    html = render_report(run, agreements=reports)
    assert 'id="agreement"' in html and "Cohen's kappa" in html and "rows: human label" in html


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.pop("schema_version"), "no schema_version: it was written by an older localjudge"),
        (lambda m: m.update(schema_version=0), "uses schema 0, written by an older localjudge"),
        (lambda m: m.update(schema_version=2), "newer than this localjudge reads"),
    ],
)
def test_a_run_directory_of_another_schema_version_is_refused_with_the_fix(runs, tmp_path, change, message):
    d = tmp_path / "old"
    d.mkdir()
    for f in ("results.jsonl", "summary.json"):
        (d / f).write_bytes((runs["current"] / f).read_bytes())
    meta = json.loads((runs["current"] / "run.json").read_text())
    change(meta)
    (d / "run.json").write_text(json.dumps(meta))
    with pytest.raises(RunDirError, match=message):
        load_run(d)


def test_paths_that_are_not_run_directories_are_refused(tmp_path, runs):
    with pytest.raises(RunDirError, match="does not exist"):
        load_run(tmp_path / "nope")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(RunDirError, match="is a file"):
        load_run(tmp_path / "f.txt")
    with pytest.raises(RunDirError, match="no run.json"):
        load_run(tmp_path)
    d = tmp_path / "damaged"
    d.mkdir()
    (d / "run.json").write_bytes((runs["current"] / "run.json").read_bytes())
    lines = (runs["current"] / "results.jsonl").read_text().splitlines()
    (d / "results.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2] + "\n")
    with pytest.raises(RunDirError, match=r"results.jsonl:2: not valid JSON"):
        load_run(d)


def test_a_run_without_summary_is_reported_from_its_results_with_a_warning(runs, tmp_path):
    d = tmp_path / "partial"
    d.mkdir()
    for f in ("results.jsonl", "run.json"):
        (d / f).write_bytes((runs["current"] / f).read_bytes())
    run = load_run(d)
    assert run.summary_recomputed
    assert run.summary["judges"] == json.loads((runs["current"] / "summary.json").read_text())["judges"]
    assert "summary.json is missing" in render_report(run)


def test_a_failed_build_writes_nothing_and_keeps_the_old_report(runs, tmp_path):
    out = tmp_path / "report.html"
    out.write_text("old report")
    with pytest.raises(RunDirError):
        build_report(runs["current"], out, compare=tmp_path / "missing")
    assert out.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_report_command_writes_the_html_and_notes_skipped_agreements(runs, tmp_path):
    out = tmp_path / "r.html"
    res = CliRunner().invoke(
        main,
        [
            "report",
            str(runs["current"]),
            "--compare",
            str(runs["base"]),
            "-o",
            str(out),
            "--labels",
            str(runs["data"]),
            "--label-column",
            "label",
        ],
    )
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.output and "agreement skipped for judge pairwise" in res.output
    assert 'id="agreement"' in out.read_text() and 'id="compare"' in out.read_text()


def test_report_command_fails_cleanly_on_an_old_run(tmp_path):
    d = tmp_path / "old"
    d.mkdir()
    (d / "run.json").write_text('{"run_id": "x"}')
    res = CliRunner().invoke(main, ["report", str(d), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "older localjudge" in res.output
    assert not (tmp_path / "r.html").exists()


def test_agree_command_prints_a_table_and_writes_json(runs, tmp_path):
    out = tmp_path / "a.json"
    res = CliRunner().invoke(
        main,
        [
            "agree",
            str(runs["current"]),
            "--labels",
            str(runs["data"]),
            "--label-column",
            "label",
            "--judge",
            "relevance_to_query",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "accuracy" in res.output and "confusion" in res.output
    rep = json.loads(out.read_text())
    # 5 scored rows (row 2 is unscored); all agree with the labels: q1 and q4 "wrong" -> no ... q4 is labelled yes
    assert (rep["n_used"], rep["n_unscored"], rep["accuracy"]) == (5, 1, 0.8)
    assert [d["row_id"] for d in rep["disagreements"]] == ["q4"]


def test_agree_command_errors_write_nothing(runs, tmp_path):
    out = tmp_path / "a.json"
    res = CliRunner().invoke(
        main,
        [
            "agree",
            str(runs["current"]),
            "--labels",
            str(runs["data"]),
            "--label-column",
            "answer",
            "--judge",
            "relevance_to_query",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 2 and "cannot produce" in res.output
    assert not out.exists()
    res = CliRunner().invoke(
        main,
        [
            "agree",
            str(runs["current"]),
            "--labels",
            str(runs["data"]),
            "--label-column",
            "pref",
            "--judge",
            "pairwise",
            "--key",
            "nope",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 2 and "no key column 'nope'" in res.output and not out.exists()


def test_pairwise_agreement_on_a_both_orders_run(runs, tmp_path):
    out = tmp_path / "p.json"
    res = CliRunner().invoke(
        main,
        [
            "agree",
            str(runs["current"]),
            "--labels",
            str(runs["data"]),
            "--label-column",
            "pref",
            "--judge",
            "pairwise",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    rep = json.loads(out.read_text())
    # the good answer is answer_1 on odd rows (pref 1) and answer_2 on even rows (pref 2)
    assert rep["kind"] == "pairwise" and rep["accuracy"] == 1.0 and rep["pairwise"]["n_ties"] == 0


def test_report_reads_what_the_runner_wrote_for_every_row(runs):
    run = load_run(runs["current"])
    assert run.judges() == ["relevance_to_query", "coherence", "pairwise"]
    assert len(run.rows) == 18 and not run.summary_recomputed
    assert Path(run.path) == runs["current"]


def test_reports_get_ordinary_file_permissions_not_the_temp_files_0600(runs, tmp_path):
    import os

    mask = os.umask(0o022)
    try:
        out = build_report(runs["current"], tmp_path / "r.html")
    finally:
        os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o644


POLITE = {
    "name": "polite",
    "variables": [{"name": "reply", "description": "the reply"}],
    "messages": [{"role": "user", "template": "Is this reply polite? Think, then answer. {{reply}}"}],
    "output": {"kind": "yes_no_json", "field_tokens": 16},
}


def _think_cells(html: str) -> list[str]:
    """The text of each collapsed reasoning block of the rows table (its summary, then its text)."""

    class Think(HTMLParser):
        def __init__(self):
            super().__init__()
            self.depth, self.found = 0, []

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "details" and "think" in (a.get("class") or ""):
                assert "open" not in a, "the reasoning block is collapsed"
                self.depth, self.found = 1, [*self.found, ""]
            elif self.depth and tag == "details":
                self.depth += 1

        def handle_endtag(self, tag):
            if self.depth and tag == "details":
                self.depth -= 1

        def handle_data(self, data):
            if self.depth:
                self.found[-1] += data

    p = Think()
    p.feed(html)
    return p.found


@pytest.mark.system
def test_a_reasoning_judges_think_text_is_a_labelled_collapsed_block_and_an_export_column(engine, tmp_path):
    import csv

    from localjudge.formats.base import think_text
    from localjudge.judges.registry import judge_from_dict

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "reply": r}) + "\n" for i, r in enumerate(["Thanks!", "Go away."])))
    judges = [judge_from_dict({**POLITE, "think_tokens": 6}), judge_from_dict({**POLITE, "name": "polite_plain"})]
    evaluate(data, judges, engine=engine, out=tmp_path / "run")
    lines = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    thinking = [x["result"] for x in lines if x["judge"] == "polite"]
    assert len(thinking) == 2 and all(r["think"] == think_text(r["raw_text"]) and r["think"] for r in thinking)
    assert len(lines) == 4 and all("think" not in x["result"] for x in lines if x["judge"] == "polite_plain")
    with open(tmp_path / "run" / "results.csv", newline="", encoding="utf-8") as f:
        cells = [(row["raw_text"].startswith("<think>"), row["think"]) for row in csv.DictReader(f)]
    assert sorted(cells) == sorted([(False, ""), (False, ""), *((True, r["think"]) for r in thinking)])
    html = render_report(tmp_path / "run")
    blocks = _think_cells(html)
    assert len(blocks) == 2 and all(b.startswith("reasoning (the judge's think block)") for b in blocks)
    assert sorted(b.removeprefix("reasoning (the judge's think block)") for b in blocks) == sorted(r["think"] for r in thinking)


def test_think_text_in_the_report_is_escaped_like_all_judged_text(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "x", "reply": "hi"}) + "\n")
    answer = "<think>\nweigh " + XSS + '\n</think>\n{"rationale": "fine", "result": "yes"}'
    from localjudge.judges.registry import judge_from_dict

    evaluate(data, [judge_from_dict(POLITE)], engine=ScriptedEngine([answer]), out=tmp_path / "run")
    html = render_report(tmp_path / "run")
    assert _think_cells(html) == ["reasoning (the judge's think block)weigh " + XSS]  # shown as text ...
    assert XSS not in html and html.count("</script>") == 1  # ... never as markup
