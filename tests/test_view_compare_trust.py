"""The view's compare page gives, per judge, the human pass rate difference new − base by PPI++ with its 95 %
interval beside the labels-only difference, computed as `localjudge report --compare` computes it (over HTTP against
a real `localjudge view` server and the real `report` command); tests/test_view_compare_browser.py reads it in
Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from view_support import ViewServer, make_run, result_row

from localjudge.cli import main
from localjudge.report.rundir import load_run
from localjudge.trust.judge_trust import run_difference, stored_pass_labels
from localjudge.trust.rates import stored_labels

pytestmark = pytest.mark.system


def human(i: int, seed: int) -> str:
    """A labeller who agrees with run `seed`'s judge except on every fourth row."""
    yes = bool(result_row("x", i, seed=seed).result.passed)
    return ("yes" if yes else "no") if i % 4 else ("no" if yes else "yes")


def label(server: ViewServer, tok: str, rid: str, rows: range, seed: int) -> None:
    for i in rows:
        body = {"row_index": i, "judge": "polite", "value": human(i, seed), "labeller": "ann", "sample": "random"}
        assert server.request(f"/api/runs/{rid}/labels", "POST", body, {"X-CSRF-Token": tok})[0] == 200


def two_labelled_runs(root: Path, base_rows: range, new_rows: range, **new_data: Any) -> tuple[ViewServer, dict]:
    """Runs `base` and `new` (other verdicts, and a second judge in new only; `new_data`: make_run's `order`/`data`)
    labelled on the given rows; the server and its /api/compare answer."""
    make_run(root / "base", 80)
    make_run(root / "new", 80, judges=("polite", "terse"), seed=1, **new_data)
    server = ViewServer("--runs-root", str(root))
    tok = server.csrf()
    label(server, tok, "base", base_rows, 0)
    label(server, tok, "new", new_rows, 1)
    status, got, _ = server.request("/api/compare?a=base&b=new")
    assert status == 200, got
    return server, got


def report_figure(root: Path):
    """The difference `report --compare` computes from the same stores (run_difference on its inputs)."""
    run, base = load_run(root / "new"), load_run(root / "base")
    mine = [r for r in run.rows if r.judge == "polite"]
    theirs = [r for r in base.rows if r.judge == "polite"]
    lab_n = stored_pass_labels(run.rows, stored_labels(root / "new"), "polite")[0]
    lab_b = stored_pass_labels(base.rows, stored_labels(root / "base"), "polite")[0]
    return run_difference(mine, lab_n or {}, theirs, lab_b or {})


def test_compare_api_gives_the_difference_report_compare_prints_for_the_same_two_runs(tmp_path, monkeypatch):
    server, got = two_labelled_runs(tmp_path, range(40), range(40))
    try:
        _, page, _ = server.request("/compare?a=base&b=new")
    finally:
        server.stop()
    polite, terse = got["judges"]
    assert (polite["judge"], terse["judge"]) == ("polite", "terse")
    assert "not in the base run" in terse["reason"] and terse["ppi"] is None
    want = report_figure(tmp_path)
    assert want is not None and want.note.startswith("paired")
    assert abs(polite["ppi"]["estimate"] - want.estimate) < 1e-12
    assert all(abs(x - y) < 1e-12 for x, y in zip(polite["ppi"]["interval"], want.interval, strict=True))
    lo = polite["labels_only"]
    assert lo["note"].startswith("paired") and lo["interval"][0] < lo["estimate"] < lo["interval"][1]
    assert polite["ppi"]["interval"][1] - polite["ppi"]["interval"][0] < lo["interval"][1] - lo["interval"][0]
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["report", str(tmp_path / "new"), "--compare", str(tmp_path / "base"), "-o", "r.html"])
    assert res.exit_code == 0, res.output
    assert f"polite: this run − base, human pass rate by PPI++: {polite['text']}" in res.output.splitlines()
    lo_pt, hi_pt = (x * 100 for x in want.interval)
    assert f"{want.estimate * 100:+.1f} pt [{lo_pt:+.1f}, {hi_pt:+.1f}]" in page and "Human pass rate difference" in page


def test_compare_with_labels_on_different_rows_gives_an_independent_difference(tmp_path):
    server, got = two_labelled_runs(tmp_path, range(0, 30), range(30, 70))
    server.stop()
    polite = got["judges"][0]
    want = report_figure(tmp_path)
    assert want is not None and want.note.startswith("independent") and polite["labels_only"]["note"].startswith("independent")
    assert abs(polite["ppi"]["estimate"] - want.estimate) < 1e-12 and polite["n_labels_base"] == 30


def test_compare_says_why_there_is_no_difference_without_labels_or_with_too_few(tmp_path):
    server, got = two_labelled_runs(tmp_path, range(0), range(1))
    try:
        assert "no human labels in the base run" in got["judges"][0]["reason"] and got["judges"][0]["ppi"] is None
        label(server, server.csrf(), "base", range(1), 0)
        _, again, _ = server.request("/api/compare?a=base&b=new")
        assert again["judges"][0]["reason"].startswith("too few labels (1 in base, 1 in new)")
        _, page, _ = server.request("/compare?a=base&b=new")
        assert "too few labels (1 in base, 1 in new)" in page
        assert server.request("/api/compare?a=base")[0] == 400
        assert server.request("/api/compare?a=base&b=nope")[0] == 404
    finally:
        server.stop()


def test_runs_over_different_data_are_compared_unpaired_though_their_row_numbers_match(tmp_path, monkeypatch):
    """Row i of each run holds another question: pairing them by row number (as before) paired unrelated rows."""
    server, got = two_labelled_runs(tmp_path, range(40), range(40), data="another question")
    server.stop()
    polite = got["judges"][0]
    want = report_figure(tmp_path)
    assert want is not None and want.note.startswith("independent")
    assert "not paired: the runs judged rows of different inputs" in want.note
    assert polite["ppi"]["note"] == want.note and polite["labels_only"]["note"].startswith("independent")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["report", str(tmp_path / "new"), "--compare", str(tmp_path / "base"), "-o", "r.html"])
    assert res.exit_code == 0, res.output
    assert f"polite: this run − base, human pass rate by PPI++: {polite['text']}" in res.output.splitlines()


def test_runs_over_the_same_data_in_another_order_are_paired_by_content(tmp_path):
    """New's row i holds base's row 79 - i: labels on base rows 0..39 and new rows 40..79 are the same 40 questions."""
    server, got = two_labelled_runs(tmp_path, range(40), range(40, 80), order=list(range(79, -1, -1)))
    server.stop()
    polite = got["judges"][0]
    want = report_figure(tmp_path)
    assert want is not None and want.note.startswith("paired") and polite["ppi"]["note"] == want.note
    assert polite["labels_only"]["note"].startswith("paired") and polite["n_labels_base"] == polite["n_labels_new"] == 40
