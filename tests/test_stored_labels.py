"""Labels stored in a run directory give the corrected pass rate in `run` (summary.json and the printed summary) and
`report` without naming them; random-sample labels measure TPR/TNR when there are enough, else all labels with a
warning. The judge is scripted with a known bias that matters here: it errs only on "hard" rows (a coin flip there),
which is where an uncertainty-first queue looks, so labels picked there make the judge look worse than it is."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from click.testing import CliRunner

from localjudge.cli import main
from localjudge.labels import import_labels
from localjudge.trust.rates import MIN_RANDOM

PREFIX = '{"rationale": "scripted", "result": "'
N = 300


def world(seed: int = 4) -> tuple[list[bool], list[bool], list[bool]]:
    """(truth, hard, verdicts): 40 % of rows pass; a quarter are hard, where the judge flips a coin."""
    rng = random.Random(seed)
    truth = [rng.random() < 0.4 for _ in range(N)]
    hard = [rng.random() < 0.25 for _ in range(N)]
    verdicts = [rng.random() < 0.5 if h else t for t, h in zip(truth, hard, strict=True)]
    return truth, hard, verdicts


def run_cli(tmp_path: Path, out: Path, *extra: str):
    truth, _, verdicts = world()
    data = tmp_path / "data.jsonl"
    if not data.exists():
        data.write_text("".join(json.dumps({"id": f"r{i}", "input": f"Q{i}?", "output": "A."}) + "\n" for i in range(N)))
        (tmp_path / "answers.json").write_text(json.dumps([PREFIX + ("yes" if v else "no") + '"}' for v in verdicts]))
    args = ["run", str(data), "-j", "relevance_to_query", "--model", f"scripted:{tmp_path / 'answers.json'}", "--out", str(out)]
    return CliRunner().invoke(main, [*args, *extra])


def store_labels(tmp_path: Path, run_dir: Path, rows: dict[int, str], name: str, flip: bool = False) -> None:
    """Import labels for row -> sample kind, the truth (or its opposite) as the label."""
    truth, _, _ = world()
    f = tmp_path / f"{name}.jsonl"
    f.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "judge": "relevance_to_query", "label": "yes" if truth[i] != flip else "no", "sample": s})
            + "\n"
            for i, s in rows.items()
        )
    )
    import_labels(run_dir, f, "tester")


def test_stored_random_labels_give_the_corrected_rate_in_run_and_report_and_uncertain_ones_a_warning(tmp_path: Path):
    truth, hard, _ = world()
    out = tmp_path / "run"
    first = run_cli(tmp_path, out)
    assert first.exit_code == 0, first.output
    assert "corrected" not in first.stdout and "calibrated" not in json.loads((out / "summary.json").read_text())
    plain = tmp_path / "plain"
    shutil.copytree(out, plain)
    rng = random.Random(1)
    sample = rng.sample(range(N), 60)
    uncertain = [i for i in range(N) if hard[i] and i not in sample][:60]
    store_labels(tmp_path, out, {**{i: "random" for i in sample}, **{i: "uncertain" for i in uncertain}}, "mixed")
    # the same command again: nothing judged, the stored labels found and used
    again = run_cli(tmp_path, out)
    assert again.exit_code == 0, again.output
    line = next(x for x in again.stdout.splitlines() if x.startswith("relevance_to_query: observed pass rate"))
    assert "corrected" in line and "[" in line and "labels: 60 random-sample labels of 120" in line, line
    cal = json.loads((out / "summary.json").read_text())["calibrated"]["relevance_to_query"]
    true_rate = sum(truth) / N
    print(f"true {true_rate:.3f}, observed {cal['observed']:.3f}, corrected {cal['corrected']:.3f} {cal['corrected_ci']}")
    assert cal["n_labelled"] == 60 and cal["warning"] is None
    assert cal["corrected_ci"][0] <= true_rate <= cal["corrected_ci"][1]
    rep = CliRunner().invoke(main, ["report", str(out), "-o", str(tmp_path / "r.html")])
    assert rep.exit_code == 0, rep.output
    assert line.split("; labels:")[0] in rep.stdout  # the same figures as the run printed
    html = (tmp_path / "r.html").read_text()
    assert "corrected pass rate" in html and "labels: 60 random-sample labels of 120" in html

    # too few random labels: all labels are used, and the bias is said, not hidden
    store_labels(tmp_path, plain, {**{i: "random" for i in sample[:5]}, **{i: "uncertain" for i in uncertain}}, "few")
    rep = CliRunner().invoke(main, ["report", str(plain), "-o", str(tmp_path / "p.html")])
    assert rep.exit_code == 0, rep.output
    assert "not a random sample" in rep.stderr and f"label {MIN_RANDOM - 5} more rows from the random queue" in rep.stderr
    line = next(x for x in rep.stdout.splitlines() if x.startswith("relevance_to_query: observed pass rate"))
    assert "labels: all 65 labels (5 random, 60 uncertain)" in line
    assert "not a random sample" in (tmp_path / "p.html").read_text()
    # `run --labels RUN_DIR` reads another run directory's stored labels (the same rows)
    other = run_cli(tmp_path, tmp_path / "other", "--labels", str(out))
    assert other.exit_code == 0, other.output
    assert json.loads((tmp_path / "other" / "summary.json").read_text())["calibrated"]["relevance_to_query"]["n_labelled"] == 60


def test_stored_labels_that_contradict_the_judge_refuse_the_corrected_rate_in_one_line(tmp_path: Path):
    out = tmp_path / "run"
    assert run_cli(tmp_path, out).exit_code == 0
    _, _, verdicts = world()
    # labels opposite to every verdict: TPR + TNR = 0
    f = tmp_path / "contra.jsonl"
    f.write_text(
        "".join(
            json.dumps(
                {"id": f"r{i}", "judge": "relevance_to_query", "label": "no" if verdicts[i] else "yes", "sample": "random"}
            )
            + "\n"
            for i in range(40)
        )
    )
    import_labels(out, f, "tester")
    again = run_cli(tmp_path, out)
    line = next(x for x in again.stdout.splitlines() if x.startswith("relevance_to_query: observed pass rate"))
    assert "refused: TPR + TNR = 0.00 + 0.00 <= 1" in line and "[" not in line, line
    cal = json.loads((out / "summary.json").read_text())["calibrated"]["relevance_to_query"]
    assert cal["corrected"] is None and cal["corrected_ci"] is None
