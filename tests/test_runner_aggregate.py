"""Run summaries: means, pass rates with Wilson intervals, distributions, unscored apart from "no"."""

from __future__ import annotations

import pytest

from localjudge.run.aggregate import format_table, summarise
from localjudge.statistics import wilson_interval
from localjudge.store.results import JudgeResult


def res(judge: str = "j", value=None, score=None, passed=None, reason=None) -> JudgeResult:
    return JudgeResult(
        judge=judge,
        judge_version="v",
        format="f",
        value=value,
        score=score,
        passed=passed,
        unscored_reason=reason,
        error=reason and f"because {reason}",
    )


def test_wilson_interval_matches_known_values():
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(5, 5)[1] == 1.0 and wilson_interval(0, 0) is None


def test_unscored_results_are_counted_apart_and_never_as_no():
    rs = [res(value="yes", score=1.0, passed=True)] * 3 + [res(value="no", score=0.0, passed=False)]
    rs += [res(reason="parse_error"), res(reason="parse_error"), res(reason="empty_value")]
    s = summarise(rs)["j"]
    assert (s.n, s.n_scored, s.n_unscored) == (7, 4, 3)
    assert s.mean_score == 0.75 and s.pass_rate == 0.75
    assert s.distribution == {"no": 1, "yes": 3}
    assert s.unscored_reasons == {"empty_value": 1, "parse_error": 2}
    assert s.pass_rate_ci == pytest.approx(list(wilson_interval(3, 4)))


def test_scores_without_pass_fail_and_structured_values_are_summarised():
    rs = [
        res("choice", value="A", score=None),
        res("choice", value="B", score=None),
        res("four", value={"accuracy": 7, "final": 0.7}, score=0.7, passed=True),
        res("four", value={"accuracy": 3, "final": 0.3}, score=0.3, passed=False),
        res("likert", value=4.0, score=0.75, passed=True),
    ]
    s = summarise(rs, judges=["likert", "four", "choice", "unused"])
    assert list(s) == ["likert", "four", "choice", "unused"]
    assert s["choice"].mean_score is None and s["choice"].pass_rate is None and s["choice"].distribution == {"A": 1, "B": 1}
    assert s["four"].distribution == {"score=0.30": 1, "score=0.70": 1} and s["four"].mean_score == pytest.approx(0.5)
    assert s["likert"].distribution == {"4": 1}
    assert s["unused"].n == 0 and s["unused"].pass_rate_ci is None


def test_table_shows_pass_rate_interval_and_unscored_reasons():
    rs = [res(value="yes", score=1.0, passed=True), res(value="no", score=0.0, passed=False), res(reason="parse_error")]
    table = format_table(summarise(rs, judges=["j", "empty"]))
    lines = table.splitlines()
    assert lines[0].split() == ["judge", "n", "scored", "mean", "pass", "rate", "[95%", "CI]", "unscored", "(reasons)"]
    assert "50.0% [9.5%, 90.5%]" in lines[2] and "1 (parse_error: 1)" in lines[2]
    assert lines[3].split() == ["empty", "0", "0", "-", "-", "0"]


def test_table_gets_a_controls_column_only_when_given_controls():
    rs = [res(value="yes", score=1.0, passed=True), res(value="no", score=0.0, passed=False)]
    summaries = summarise(rs, judges=["j", "empty"])
    plain = format_table(summaries)
    assert "controls" not in plain and format_table(summaries, None) == plain
    lines = format_table(summaries, {"j": "discriminates"}).splitlines()
    assert lines[0].split()[-1] == "controls" and lines[2].split()[-1] == "discriminates" and lines[3].split()[-1] == "-"
    assert [line[: len(p)] for line, p in zip(lines, plain.splitlines(), strict=True)] == plain.splitlines()
