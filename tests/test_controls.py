"""Negative controls without labels (report/controls.py, `localjudge controls`): a judge that reads the answer is
told apart from one that passes everything or answers at random; controls never touch the run's own results."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from click.testing import CliRunner

import localjudge
from localjudge.cli import main
from localjudge.engine.base import ScriptedEngine
from localjudge.errors import InputError, JudgeSpecError
from localjudge.judges import get_judge
from localjudge.judges.spec import spec_from_dict
from localjudge.report.controls import (
    BLIND,
    DISCRIMINATES,
    NO_PREFERENCE,
    NON_ANSWER,
    PREFERS_FIRST,
    ControlOptions,
    auc,
    auc_interval,
    binomial_p,
    controls_lines,
    run_controls,
    save_controls,
)

WORDS = "cat dog owl fox elk yak ant bee cow pig hen eel ram emu gnu koi".split()
ROWS = [
    {"id": f"r{i}", "input": f"What is item {i}?", "output": f"item {i} is a {w}", "context": f"Facts: item {i} is a {w}."}
    for i, w in enumerate(WORDS * 3)
]


def _verdict(yes: bool) -> str:
    return json.dumps({"rationale": "r", "result": "yes" if yes else "no"})


def reads_the_answer(messages, fmt) -> str:
    """Passes when the answer is in the document: a judge that reads both."""
    prompt = messages[-1].content
    answer = re.search(r"<answer>(.*?)</answer>", prompt, re.S).group(1).strip()
    return _verdict(answer in re.search(r"<document>(.*?)</document>", prompt, re.S).group(1))


def reads_guidelines_response(messages, fmt) -> str:
    """Passes when the response names the animal the request asks about."""
    prompt = messages[-1].content
    request = re.search(r"<request>(.*?)</request>", prompt, re.S).group(1)
    return _verdict(request.endswith(f" a {re.search(r'<response>(.*?)</response>', prompt, re.S).group(1)}?"))


def at_random(messages, fmt) -> str:
    """A verdict from a hash of the prompt: reads nothing, deterministic."""
    return _verdict(hashlib.sha256(messages[-1].content.encode()).digest()[0] % 2 == 0)


def judged(tmp_path, fn, name):
    engine = ScriptedEngine(fn, model_id=name)
    out = tmp_path / name
    localjudge.evaluate(ROWS, ["groundedness"], engine=engine, out=out)
    return engine, out


def test_a_judge_that_reads_the_answer_discriminates(tmp_path):
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    g = run_controls(out, engine=engine, sample=20).judges["groundedness"]
    assert g.variable == "output" and g.n == 20 and g.verdict == DISCRIMINATES
    assert (g.real_pass_rate, g.control_pass_rate, g.auc) == (1.0, 0.0, 1.0) and g.p_value < 0.01


@pytest.mark.parametrize(("fn", "name"), [(lambda m, f: _verdict(True), "always-yes"), (at_random, "random")])
def test_a_judge_that_passes_everything_or_answers_at_random_is_shown_blind(tmp_path, fn, name):
    engine, out = judged(tmp_path, fn, name)
    g = run_controls(out, engine=engine, sample=40).judges["groundedness"]
    assert g.n >= 38 and g.verdict == BLIND, g


def test_controls_never_change_the_runs_results_summary_or_exports(tmp_path):
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    files = ("results.jsonl", "results.csv", "summary.json", "run.json")
    before = {f: (out / f).read_bytes() for f in files}
    run_controls(out, engine=engine, sample=10)
    assert {f: (out / f).read_bytes() for f in files} == before
    assert (out / "controls" / "groundedness" / "results.jsonl").exists()  # their own run directory


def test_controls_never_change_what_agree_reports_or_the_labels_align_reads(tmp_path):
    """`agree` (labels from a file and from the run's own store) prints and writes the same bytes, and the labels
    `align` takes from the run directory are the same file, before and after the run's controls are judged."""
    from localjudge.labels.importing import import_labels
    from localjudge.labels.store import labels_file_for

    engine, out = judged(tmp_path, at_random, "random")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": r["id"], "label": "yes" if i % 3 else "no"}) + "\n" for i, r in enumerate(ROWS)))
    stored = tmp_path / "stored.jsonl"
    stored.write_text(
        "".join(
            json.dumps({"id": r["id"], "judge": "groundedness", "label": "yes" if i % 2 else "no"}) + "\n"
            for i, r in enumerate(ROWS)
        )
    )
    assert import_labels(out, stored).imported == len(ROWS)

    def agreed() -> tuple[str, bytes, str, bytes, bytes]:
        a = CliRunner().invoke(
            main, ["agree", str(out), "--labels", str(labels), "--label-column", "label", "-o", str(tmp_path / "file.json")]
        )
        b = CliRunner().invoke(main, ["agree", str(out), "--labels", str(out), "-o", str(tmp_path / "store.json")])
        assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
        aligned = labels_file_for(out, "groundedness", tmp_path / "align.jsonl").read_bytes()
        return a.output, (tmp_path / "file.json").read_bytes(), b.output, (tmp_path / "store.json").read_bytes(), aligned

    before = agreed()
    report = run_controls(out, engine=engine, sample=40, kinds=("answer", "non_answer", "context"))
    assert report.judges["groundedness"].n >= 38 and (out / "controls" / "groundedness.context").exists()
    assert agreed() == before


def test_controls_are_resumed_from_their_cache(tmp_path):
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    first = run_controls(out, engine=engine, sample=10)
    calls = engine.calls
    assert run_controls(out, engine=engine, sample=10) == first and engine.calls == calls


def test_options_given_as_one_object_or_as_keywords_judge_the_same_controls(tmp_path):
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    by_keywords = run_controls(out, engine=engine, sample=10, seed=2, kinds=("non_answer",))
    calls = engine.calls
    options = ControlOptions(sample=10, seed=2, engine=engine, kinds=("non_answer",))
    assert run_controls(out, options) == by_keywords and engine.calls == calls  # the same pairs, read back
    # keywords replace those fields of the options given
    assert run_controls(out, ControlOptions(sample=3, engine=engine), sample=10, seed=2, kinds=("non_answer",)) == by_keywords
    with pytest.raises(TypeError, match="unexpected keyword argument 'samples'"):
        run_controls(out, options, samples=10)
    with pytest.raises(TypeError, match="options must be a ControlOptions, got int"):
        run_controls(out, 10)
    with pytest.raises(InputError, match="--sample 1: controls need at least 2 rows"):
        ControlOptions(sample=1)


def test_a_judge_without_a_declared_answer_gets_no_control_and_says_so(tmp_path):
    engine = ScriptedEngine(lambda m, f: _verdict(True), model_id="yes")
    rows = [{"input": f"q{i}", "ground_truth": f"t{i}", "retrieval_context": f"c{i}"} for i in range(5)]
    localjudge.evaluate(rows, ["context_sufficiency"], engine=engine, out=tmp_path / "run")
    g = run_controls(tmp_path / "run", engine=engine).judges["context_sufficiency"]
    assert g.variable is None and g.auc is None and "declares no answer variable" in g.verdict


def test_a_swap_that_leaves_every_prompt_unchanged_is_no_control_and_says_why(tmp_path):
    engine = ScriptedEngine(lambda m, f: _verdict(True), model_id="yes")
    rows = [
        {
            "guidelines": "Be true.",
            "guidelines_context": f"<request>q{i}</request>\\n<response>a{i}</response>",
            "output": f"a{i}",
        }
        for i in range(10)
    ]  # the whole context is given: `output` never reaches the prompt
    localjudge.evaluate(rows, ["guidelines"], engine=engine, out=tmp_path / "run")
    g = run_controls(tmp_path / "run", engine=engine, sample=10).judges["guidelines"]
    assert g.auc is None and g.verdict.startswith("no control: another row's output left all 10 prompts unchanged")


def test_guidelines_on_question_and_answer_columns_composes_its_context_so_its_answer_can_be_swapped(tmp_path):
    engine = ScriptedEngine(reads_guidelines_response, model_id="reader")
    rows = [
        {"question": f"Is item {i} a {w}?", "answer": w, "guidelines": "Answer with the animal."} for i, w in enumerate(WORDS)
    ]
    localjudge.evaluate(rows, ["guidelines"], engine=engine, out=tmp_path / "run")
    assert "<request>Is item 0 a cat?</request>\n<response>cat</response>" in engine.prompts[0][-1].content
    g = run_controls(tmp_path / "run", engine=engine, sample=16).judges["guidelines"]
    assert g.verdict == DISCRIMINATES and g.n == 16


def test_the_declaration_names_a_variable_and_never_changes_the_judges_version():
    spec = get_judge("groundedness").spec
    bare = spec.model_dump(mode="json", exclude={"controls"})
    assert spec_from_dict(bare).controls is None
    assert localjudge.judges.Judge(spec_from_dict(bare)).version == get_judge("groundedness").version
    with pytest.raises(JudgeSpecError, match="controls.answer 'reply' is not a declared variable"):
        localjudge.judges.Judge(spec_from_dict({**bare, "controls": {"answer": "reply"}}))


def test_the_auc_interval_covers_a_known_discrimination_at_its_stated_rate():
    """Seeded synthetic judges whose scores on real rows are N(d, 1) and on controls N(0, 1): the true AUC is
    Φ(d/√2). Over 1,000 trials at the default sample (20 pairs), the 95 % interval holds it at least 94 % of the time."""
    import math
    import random
    from statistics import NormalDist

    covered = trials = 0
    for d in (0.0, 0.5, 1.0, 2.0):
        truth = NormalDist().cdf(d / math.sqrt(2))
        rng = random.Random(f"coverage:{d}")
        for _ in range(250):
            real, control = [rng.gauss(d, 1) for _ in range(20)], [rng.gauss(0, 1) for _ in range(20)]
            lo, hi = auc_interval(auc(real, control), 20, 20)
            covered += lo <= truth <= hi
            trials += 1
    assert covered / trials >= 0.94, covered / trials


def test_the_permutation_p_value_is_small_only_when_the_sides_differ():
    from localjudge.report.controls import permutation_p

    assert permutation_p([0.9] * 10, [0.1] * 10, seed=0) < 0.001
    assert permutation_p([0.5] * 10, [0.5] * 10, seed=0) == 1.0
    assert permutation_p([0.9] * 10, [0.1] * 10, seed=0) == permutation_p([0.9] * 10, [0.1] * 10, seed=0)


def test_auc_and_its_interval():
    assert auc([1, 1, 0], [0, 0, 0]) == pytest.approx(2 / 3 + 1 / 6)
    assert auc([0.5], [0.5]) == 0.5
    lo, hi = auc_interval(0.5, 40, 40)
    assert lo < 0.5 < hi and hi < 0.75


def test_the_command_prints_one_line_per_judge_and_saves_the_report(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    r = CliRunner().invoke(main, ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "run"), "-q", *scripted])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["controls", str(tmp_path / "run"), "--sample", "12", *scripted])
    assert r.exit_code == 0, r.output
    assert "groundedness: real mean 1.000 vs control 1.000, AUC 0.50" in r.output and BLIND in r.output
    saved = json.loads((tmp_path / "run" / "controls" / "controls.json").read_text())
    assert saved["judges"]["groundedness"]["verdict"] == BLIND and saved["sample"] == 12
    refused = CliRunner().invoke(main, ["controls", str(tmp_path / "run")])
    assert refused.exit_code == 2 and "pass --model with the same model" in refused.output
    other = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "no"}']
    before = (tmp_path / "run" / "controls" / "groundedness" / "results.jsonl").read_bytes()
    refused = CliRunner().invoke(main, ["controls", str(tmp_path / "run"), "--sample", "12", "--seed", "1", *other])
    assert refused.exit_code == 2 and "(another digest); pass --model with the run's model" in refused.output
    assert (tmp_path / "run" / "controls" / "groundedness" / "results.jsonl").read_bytes() == before  # nothing judged


# ------------------------------------------------------------------ `run --controls N` / evaluate(controls=N)

RUN_FILES = ("results.jsonl", "results.csv")


def test_a_run_with_controls_costs_n_more_calls_per_judge_and_saves_what_the_controls_command_saves(tmp_path):
    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    run = localjudge.evaluate(ROWS, ["groundedness"], engine=engine, out=tmp_path / "run", controls=10, controls_seed=3)
    assert engine.calls == len(ROWS) + 10
    saved = (tmp_path / "run" / "controls" / "controls.json").read_text()
    assert run.controls.judges["groundedness"].n == 10 and json.loads(saved)["seed"] == 3
    assert (run.control_calls.judged, run.control_calls.cached) == (10, 0)
    assert run_controls(tmp_path / "run", engine=engine, sample=10, seed=3) == run.controls and engine.calls == len(ROWS) + 10


def test_controls_after_a_run_never_change_its_results_pass_rates_or_exports(tmp_path):
    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    out = tmp_path / "run"
    plain = localjudge.evaluate(ROWS, ["groundedness"], engine=engine, out=out)
    before = {f: (out / f).read_bytes() for f in RUN_FILES}
    judges_before = json.loads((out / "summary.json").read_text())["judges"]
    again = localjudge.evaluate(ROWS, ["groundedness"], engine=engine, out=out, controls=12)
    assert {f: (out / f).read_bytes() for f in RUN_FILES} == before
    judges_after = json.loads((out / "summary.json").read_text())["judges"]
    assert {j: {k: v for k, v in s.items() if k != "controls"} for j, s in judges_after.items()} == judges_before
    assert again.summary.judges == plain.summary.judges and len(again.results) == len(ROWS)  # no control row in the run
    assert again.controls.judges["groundedness"].verdict == DISCRIMINATES


def test_a_run_without_controls_judges_none(tmp_path):
    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    run = localjudge.evaluate(ROWS[:6], ["groundedness"], engine=engine, out=tmp_path / "run")
    assert run.controls is None and run.control_calls is None and engine.calls == 6
    assert not (tmp_path / "run" / "controls").exists()


def test_a_run_with_controls_reports_no_control_for_a_judge_that_declares_no_answer(tmp_path):
    engine = ScriptedEngine(lambda m, f: _verdict(True), model_id="yes")
    rows = [{"input": f"q{i}", "ground_truth": f"t{i}", "retrieval_context": f"c{i}"} for i in range(5)]
    run = localjudge.evaluate(rows, ["context_sufficiency"], engine=engine, out=tmp_path / "run", controls=5)
    assert run.controls.judges["context_sufficiency"].verdict.startswith("no control") and engine.calls == 5


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"controls": 1}, "at least 2 rows"),
        ({"controls": 5, "out": None}, "need a run directory"),
        ({"controls": 5, "panel": ["scripted:", "scripted:"]}, "not by a panel or cascade"),
    ],
)
def test_controls_a_run_could_not_judge_are_refused_before_any_call(tmp_path, keywords, message):
    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    with pytest.raises(localjudge.errors.InputError, match=message):
        localjudge.evaluate(ROWS[:6], ["groundedness"], engine=engine, **{"out": tmp_path / "run", **keywords})
    assert engine.calls == 0


def test_the_run_command_judges_its_controls_as_the_controls_command_would(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(data), "-j", "groundedness", "-o", str(out), "-q", "--controls", "12", *scripted])
    assert r.exit_code == 0, r.output
    saved = (out / "controls" / "controls.json").read_text()
    assert json.loads(saved)["judges"]["groundedness"]["verdict"] == BLIND
    r = CliRunner().invoke(main, ["controls", str(out), "--sample", "12", *scripted])
    assert r.exit_code == 0, r.output
    assert (out / "controls" / "controls.json").read_text() == saved


def test_the_runs_count_line_says_the_control_calls_beside_its_own_and_a_run_without_controls_prints_it_as_before(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    plain = CliRunner().invoke(main, ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "plain"), *scripted])
    assert plain.exit_code == 0, plain.output
    assert "12 rows x 1 judges: 12 judged now, 0 from cache, 0 unscored (0 failed rows)." in plain.output
    assert "control call" not in plain.output
    args = ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "run"), *scripted, "--controls", "10"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "12 rows x 1 judges: 12 judged now (+ 10 control calls), 0 from cache, 0 unscored (0 failed rows)." in r.output
    again = CliRunner().invoke(main, [*args, "--control-kind", "non_answer"])  # the answers' controls from their cache
    assert again.exit_code == 0, again.output
    assert "12 rows x 1 judges: 0 judged now (+ 10 control calls, 10 from cache), 12 from cache," in again.output


# ------------------------------------------------------------------ summary.json's `controls` per judge


def _without_controls(summary: dict) -> str:
    judges = {j: {k: v for k, v in s.items() if k != "controls"} for j, s in summary["judges"].items()}
    return json.dumps({**summary, "judges": judges}, indent=2, ensure_ascii=False) + "\n"


def test_the_controls_command_sets_each_judges_controls_in_the_summary_and_no_other_byte(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(data), "-j", "groundedness", "-o", str(out), "-q", *scripted])
    assert r.exit_code == 0, r.output
    before = (out / "summary.json").read_text()
    r = CliRunner().invoke(main, ["controls", str(out), "--sample", "12", "--seed", "4", *scripted])
    assert r.exit_code == 0, r.output
    after = json.loads((out / "summary.json").read_text())
    assert _without_controls(after) == before
    saved = json.loads((out / "controls" / "controls.json").read_text())["judges"]["groundedness"]
    c = after["judges"]["groundedness"]["controls"]
    assert (c["n_real"], c["n_control"], c["auc"], c["auc_ci"], c["p_value"], c["verdict"]) == (
        saved["n"],
        saved["n"],
        saved["auc"],
        saved["auc_ci"],
        saved["p_value"],
        BLIND,
    )
    assert (c["variable"], c["sample"], c["seed"]) == ("output", 12, 4)


def test_a_run_with_controls_gives_every_judge_a_controls_object_in_its_summary(tmp_path):
    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    rows = [{**r, "ground_truth": "x", "retrieval_context": r["context"]} for r in ROWS[:16]]
    localjudge.evaluate(rows, ["groundedness", "context_sufficiency"], engine=engine, out=tmp_path / "run", controls=16)
    judges = json.loads((tmp_path / "run" / "summary.json").read_text())["judges"]
    assert judges["groundedness"]["controls"]["verdict"] == DISCRIMINATES and judges["groundedness"]["controls"]["n_real"] == 16
    none = judges["context_sufficiency"]["controls"]
    assert none["verdict"].startswith("no control") and none["auc"] is None and none["n_real"] == 0


def test_a_run_without_controls_has_no_controls_in_its_summary(tmp_path):
    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    localjudge.evaluate(ROWS[:6], ["groundedness"], engine=engine, out=tmp_path / "run")
    assert "controls" not in (tmp_path / "run" / "summary.json").read_text()


# ------------------------------------------------------------------ the run's printed table


def test_the_run_table_shows_a_controls_column_only_when_the_run_judged_controls(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    plain = CliRunner().invoke(main, ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "a"), *scripted])
    assert plain.exit_code == 0, plain.output
    head = plain.output.splitlines()[0]
    assert head.split() == ["judge", "n", "scored", "mean", "pass", "rate", "[95%", "CI]", "unscored", "(reasons)"]
    assert "negative controls" not in plain.output
    r = CliRunner().invoke(
        main, ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "b"), "--controls", "12", *scripted]
    )
    assert r.exit_code == 0, r.output
    table = r.output.splitlines()
    assert table[0].startswith(head) and table[0].split()[-1] == "controls"
    assert table[2].startswith("groundedness") and table[2].split()[-1] == "blind"
    assert f"groundedness: real mean 1.000 vs control 1.000, AUC 0.50 [0.30, 0.70], p = 1.000, n = 12: {BLIND}" in r.output
    before = plain.output.splitlines()[:3]  # the run's own columns are as they were, the column comes last
    assert [line[: len(p)].rstrip() for line, p in zip(table[:3], before, strict=True)] == [p.rstrip() for p in before]


@pytest.mark.parametrize(
    ("verdict", "word"),
    [
        (DISCRIMINATES, "discriminates"),
        (BLIND, "blind"),
        ("inconclusive", "inconclusive"),
        ("inconclusive (n too small)", "n too small"),
    ],
)
def test_the_controls_column_says_each_verdict_in_a_word_or_two(verdict, word):
    from localjudge.report.controls import ControlsReport, JudgeControls, controls_column

    report = ControlsReport(seed=0, sample=20, judges={"j": JudgeControls(judge="j", variable="output", verdict=verdict)})
    assert controls_column(report) == {"j": word}
    none = JudgeControls(judge="k", variable=None, verdict="no control: the judge file declares no answer variable")
    assert controls_column(ControlsReport(seed=0, sample=20, judges={"k": none})) == {"k": "no control"}
    assert controls_column(None) is None


def test_the_controls_column_of_a_judge_without_an_answer_shows_the_kind_it_declares_by_name():
    """A conversation judge declares no answer, only a conversation: its column is its last-turn verdict, named,
    not the answers' `no control`; a judge that declares an answer keeps the answers' verdict beside other kinds."""
    from localjudge.report.controls import ControlsReport, JudgeControls, controls_column

    no_answer = "no control: the judge file declares no answer variable"
    report = ControlsReport(
        seed=0,
        sample=20,
        judges={
            "conv": JudgeControls(judge="conv", variable=None, verdict=no_answer),
            "grounded": JudgeControls(judge="grounded", variable="output", verdict=DISCRIMINATES),
            "neither": JudgeControls(judge="neither", variable=None, verdict=no_answer),
        },
        other_kinds={
            "context": {
                "conv": JudgeControls(judge="conv", variable=None, kind="context", verdict="no control: none"),
                "grounded": JudgeControls(judge="grounded", variable="context", kind="context", verdict=BLIND),
                "neither": JudgeControls(judge="neither", variable=None, kind="context", verdict="no control: none"),
            },
            "last_turn": {"conv": JudgeControls(judge="conv", variable="conversation", kind="last_turn", verdict=BLIND)},
        },
    )
    assert controls_column(report) == {"conv": "blind (last_turn)", "grounded": "discriminates", "neither": "no control"}


# ------------------------------------------------------------------ the report's "How far to trust the numbers"


def _controls_section(html: str) -> str:
    import html as html_text

    start = html.index('<article class="controls">')
    return html_text.unescape(html[start : html.index("</article>", start)])


def test_the_report_shows_each_judges_controls_in_one_row_with_its_verdict_sentence(tmp_path):
    from localjudge.report import render_report
    from localjudge.report.controls import verdict_sentence

    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    rows = [{**r, "ground_truth": "x", "retrieval_context": r["context"]} for r in ROWS[:16]]
    localjudge.evaluate(rows, ["groundedness", "context_sufficiency"], engine=engine, out=tmp_path / "run", controls=16)
    html = render_report(tmp_path / "run")
    assert "How far to trust the numbers" in html and 'href="#trust"' in html
    section = _controls_section(html)
    assert section.count("<tr data-judge=") == 2 and "16 rows sampled per judge, seed 0" in section
    reader = section[section.index('<tr data-judge="groundedness">') :].split("</tr>")[0]
    assert "<code>output</code>" in reader and "1.00 [" in reader and verdict_sentence(DISCRIMINATES) in reader
    none = section[section.index('<tr data-judge="context_sufficiency">') :].split("</tr>")[0]
    assert "no control: the judge file declares no answer variable" in none


def test_the_report_marks_a_blind_judge_and_a_run_without_controls_has_no_controls_section(tmp_path):
    from localjudge.report import render_report

    engine = ScriptedEngine(lambda m, f: _verdict(True), model_id="yes")
    localjudge.evaluate(ROWS[:12], ["groundedness"], engine=engine, out=tmp_path / "plain")
    plain = render_report(tmp_path / "plain")
    assert 'class="controls"' not in plain and "How far to trust the numbers" not in plain
    localjudge.evaluate(ROWS[:12], ["groundedness"], engine=engine, out=tmp_path / "run", controls=12)
    section = _controls_section(render_report(tmp_path / "run"))
    assert f'<td class="warn">{BLIND}</td>' in section


# ------------------------------------------------------------------ `localjudge view`'s run page


def test_the_view_reads_each_judges_controls_from_the_summary_and_none_from_a_run_without(tmp_path):
    from localjudge.view.runs import RunHandle

    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    localjudge.evaluate(ROWS[:12], ["groundedness"], engine=engine, out=tmp_path / "plain")
    localjudge.evaluate(ROWS[:12], ["groundedness"], engine=engine, out=tmp_path / "run", controls=12)
    assert RunHandle("plain", tmp_path / "plain").controls() == {}
    got = RunHandle("run", tmp_path / "run").controls()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {j: c.model_dump(exclude_unset=True) for j, c in got.items()} == {
        "groundedness": summary["judges"]["groundedness"]["controls"]
    }
    assert got["groundedness"].verdict == DISCRIMINATES


def test_the_view_and_the_report_show_the_same_controls_through_one_reader(tmp_path):
    from localjudge.report import load_run
    from localjudge.report.build import _controls_rows
    from localjudge.report.controls import stored_controls
    from localjudge.view.runs import RunHandle

    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    rows = [{**r, "ground_truth": "x", "retrieval_context": r["context"]} for r in ROWS[:12]]
    localjudge.evaluate(rows, ["groundedness", "context_sufficiency"], engine=engine, out=tmp_path / "run", controls=12)
    summary_path = tmp_path / "run" / "summary.json"
    summary = json.loads(summary_path.read_text())
    # a damaged figure reads as missing in both, an entry without a text verdict is no controls in both
    summary["judges"]["groundedness"]["controls"]["auc_ci"] = "not a pair"
    summary["judges"]["context_sufficiency"]["controls"]["verdict"] = None
    summary_path.write_text(json.dumps(summary))
    viewed = RunHandle("run", tmp_path / "run").controls()
    assert viewed == stored_controls(load_run(tmp_path / "run").summary) and list(viewed) == ["groundedness"]
    (reported,) = _controls_rows(load_run(tmp_path / "run"))
    shown = viewed["groundedness"]
    assert shown.auc_ci is None and shown.auc is not None and reported["auc_ci"] is None
    assert reported["judge"] == "groundedness" and reported["auc"] == shown.auc and reported["n_real"] == shown.n_real


def test_the_view_run_page_shows_the_controls_verdict_per_judge_only_when_there_are_controls():
    from localjudge.report.controls import StoredControls
    from localjudge.view.pages import run_page

    st = {"rid": "r", "path": "/runs/r", "model": "m", "data": "d.jsonl", "status": "finished", "judges": ["g", "k"]}
    assert 'id="controls"' not in run_page("t", st) and 'id="controls"' not in run_page("t", st, None, {})
    controls = {
        "g": StoredControls(verdict=BLIND, auc=0.5, auc_ci=[0.3, 0.7], n_real=12),
        "k": StoredControls(verdict="no control: the judge file declares no answer variable <b>", auc=None, n_real=0),
    }
    html = run_page("t", st, None, controls)
    row = html[html.index('<tr data-judge="g">') :].split("</tr>")[0]
    assert ">blind<" in row and "0.50 [0.30, 0.70]" in row and "<td>12</td>" in row
    assert ">no control<" in html and "<b>" not in html.split('id="controls"')[1].split("</section>")[0]  # escaped


@pytest.mark.system
def test_the_served_run_page_carries_the_controls_table(tmp_path):
    from view_support import ViewServer

    engine = ScriptedEngine(reads_the_answer, model_id="reader")
    localjudge.evaluate(ROWS[:12], ["groundedness"], engine=engine, out=tmp_path / "run", controls=12)
    server = ViewServer(str(tmp_path / "run"))
    try:
        status, page, _ = server.request("/runs/run")
    finally:
        server.stop()
    assert status == 200 and '<tr data-judge="groundedness">' in page and ">discriminates<" in page


def test_a_rerun_that_judges_nothing_still_judges_its_controls_loading_the_model_for_them(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    argv = ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "run"), "-q", "-m", "scripted:"]
    argv += ["--option", 'response={"rationale": "r", "result": "yes"}']
    assert CliRunner().invoke(main, argv).exit_code == 0
    r = CliRunner().invoke(main, [*argv, "--controls", "12"])
    assert r.exit_code == 0, r.output
    saved = json.loads((tmp_path / "run" / "controls" / "controls.json").read_text())
    assert saved["judges"]["groundedness"]["n"] == 12 and saved["judges"]["groundedness"]["verdict"] == BLIND
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["run"]["counts"]["evaluated"] == 0


# ------------------------------------------------------------------ other kinds: a fixed non-answer, context, reference


def reads_only_the_answer(messages, fmt) -> str:
    """Passes when the answer names the item its question asks about: reads the question and the answer, never the
    document (a grounding judge blind to its context)."""
    prompt = messages[-1].content
    item = re.search(r"What is item (\d+)\?", prompt).group(1)
    return _verdict(f"item {item} is" in re.search(r"<answer>(.*?)</answer>", prompt, re.S).group(1))


def test_a_judge_blind_to_its_context_is_told_apart_from_one_that_reads_it_by_the_context_control(tmp_path):
    engine, out = judged(tmp_path, reads_only_the_answer, "answer-only")
    report = run_controls(out, engine=engine, sample=20, kinds=("answer", "context"))
    answer, context = report.judges["groundedness"], report.other_kinds["context"]["groundedness"]
    assert (answer.kind, answer.variable, answer.verdict) == ("answer", "output", DISCRIMINATES)
    assert (context.kind, context.variable, context.n, context.verdict) == ("context", "retrieval_context", 20, BLIND)
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    context = run_controls(out, engine=engine, sample=20, kinds=("context",)).other_kinds["context"]["groundedness"]
    assert context.verdict == DISCRIMINATES and (context.real_pass_rate, context.control_pass_rate) == (1.0, 0.0)


def test_a_fixed_non_answer_control_puts_one_unrelated_sentence_in_every_sampled_rows_answer(tmp_path):
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    g = run_controls(out, engine=engine, sample=20, kinds=("non_answer",)).other_kinds["non_answer"]["groundedness"]
    assert (g.kind, g.variable, g.n, g.verdict) == ("non_answer", "output", 20, DISCRIMINATES)
    stored = [json.loads(line) for line in (out / "controls" / "groundedness.non_answer" / "results.jsonl").open()]
    assert len(stored) == 20 and {s["inputs"]["output"] for s in stored} == {NON_ANSWER}
    engine, out = judged(tmp_path, lambda m, f: _verdict(True), "always-yes")
    g = run_controls(out, engine=engine, sample=20, kinds=("non_answer",)).other_kinds["non_answer"]["groundedness"]
    assert g.verdict == BLIND and g.control_pass_rate == 1.0


def test_a_reference_control_swaps_the_declared_reference_between_rows(tmp_path):
    def reads_the_reference(messages, fmt) -> str:  # the claim (the reference) must name the document's item
        prompt = messages[-1].content
        item = re.search(r"<document>What is item (\d+)\?", prompt).group(1)
        return _verdict(f"item {item} " in re.search(r"<claim>(.*?)</claim>", prompt, re.S).group(1))

    rows = [{"id": r["id"], "input": r["input"], "output": r["output"], "ground_truth": r["context"]} for r in ROWS]
    engine = ScriptedEngine(reads_the_reference, model_id="ref-reader")
    localjudge.evaluate(rows, ["correctness"], engine=engine, out=tmp_path / "run")
    g = run_controls(tmp_path / "run", engine=engine, sample=20, kinds=("reference",)).other_kinds["reference"]["correctness"]
    assert (g.kind, g.variable, g.n, g.verdict) == ("reference", "ground_truth", 20, DISCRIMINATES)
    stored = [json.loads(line) for line in (tmp_path / "run" / "controls" / "correctness.reference" / "results.jsonl").open()]
    own = {r["id"]: r["ground_truth"] for r in rows}
    assert all(s["inputs"]["ground_truth"] != own[s["row_id"]] for s in stored)


def test_a_kind_whose_variable_the_judge_does_not_declare_is_no_control_and_says_which(tmp_path):
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    g = run_controls(out, engine=engine, sample=10, kinds=("reference",)).other_kinds["reference"]["groundedness"]
    assert g.variable is None and g.auc is None and "declares no reference variable" in g.verdict
    with pytest.raises(InputError, match="control kind 'tone': use one of answer, non_answer, context, reference"):
        run_controls(out, engine=engine, sample=10, kinds=("tone",))


def test_other_kinds_cost_n_calls_each_print_under_their_own_heading_and_sit_beside_the_answers_in_the_summary(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:12]))
    scripted = ["-m", "scripted:", "--option", 'response={"rationale": "r", "result": "yes"}']
    args = ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "run"), *scripted, "--controls", "12"]
    r = CliRunner().invoke(main, [*args, "--control-kind", "all"])
    assert r.exit_code == 0, r.output
    headings = ("another row's answer", "a fixed non-answer", "another row's context", "another row's reference")
    for heading in (*headings, "the same answer on both sides", "another conversation's last assistant turn"):
        assert f"negative controls ({heading}; 12 rows sampled, seed 0):" in r.output
    assert "groundedness: no control: the judge file declares no reference variable" in r.output
    assert "groundedness: no control: the judge file declares no conversation variable" in r.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())["judges"]["groundedness"]["controls"]
    kinds = {"non_answer", "context", "reference", "same_answer", "last_turn"}
    assert summary["verdict"] == BLIND and set(summary["other_kinds"]) == kinds
    assert (
        summary["other_kinds"]["context"]["variable"] == "retrieval_context" and summary["other_kinds"]["context"]["n_real"] == 12
    )
    calls = [
        len((tmp_path / "run" / "controls" / d / "results.jsonl").read_text().splitlines())
        for d in ("groundedness", "groundedness.non_answer", "groundedness.context")
    ]
    assert calls == [12, 12, 12] and not (tmp_path / "run" / "controls" / "groundedness.reference").exists()
    refused = CliRunner().invoke(
        main, ["run", str(data), "-j", "groundedness", "-o", str(tmp_path / "r2"), *scripted, "--control-kind", "context"]
    )
    assert refused.exit_code == 2 and "control kinds answer, context need controls=N (--controls N)" in refused.output
    assert not (tmp_path / "r2" / "results.jsonl").exists()  # refused before any call


def test_the_controls_command_judges_the_kinds_asked_and_a_run_without_them_keeps_its_summary_shape(tmp_path):
    engine, out = judged(tmp_path, reads_the_answer, "reader")
    report = run_controls(out, engine=engine, sample=10)
    assert report.other_kinds == {} and [p.name for p in (out / "controls").iterdir() if p.is_dir()] == ["groundedness"]
    save_controls(out, report)
    assert "other_kinds" not in json.loads((out / "summary.json").read_text())["judges"]["groundedness"]["controls"]


def test_the_report_and_the_view_show_a_row_per_other_kind_judged_after_the_answers_row(tmp_path):
    from localjudge.report import render_report
    from localjudge.view.pages import controls_section
    from localjudge.view.runs import RunHandle

    engine = ScriptedEngine(reads_only_the_answer, model_id="answer-only")
    localjudge.evaluate(
        ROWS[:16], ["groundedness"], engine=engine, out=tmp_path / "run", controls=16, control_kinds=["context", "reference"]
    )
    section = _controls_section(render_report(tmp_path / "run"))
    assert section.count("<tr data-judge=") == 2  # the answers' row and the context's (no reference declared: no row)
    context = section[section.index('data-kind="context"') :].split("</tr>")[0]
    assert "<code>retrieval_context</code> (another row's context)" in context and f'class="warn">{BLIND}' in context
    assert "A row with another kind in brackets" in section
    page = controls_section(RunHandle("run", tmp_path / "run").controls())
    assert page.count("<tr ") == 2 and 'data-kind="context"' in page and "groundedness (another row&#x27;s context)" in page
    assert "discriminates" in page.split('data-kind="context"')[0] and "blind" in page.split('data-kind="context"')[1]


# ------------------------------------------------------------------ pairwise judges: the same answer on both sides

PAIR_ROWS = [
    {"id": f"p{i}", "question": f"What is item {i}?", "context": "c", "answer_1": f"item {i} is a {w}", "answer_2": f"no {w}"}
    for i, w in enumerate(WORDS * 2)
]


def _pick(side: int) -> str:
    return json.dumps({"better_response": side, "explanation": "e"})


def test_a_pairwise_judge_that_always_picks_the_first_position_is_shown_to_prefer_it_on_identical_answers(tmp_path):
    engine = ScriptedEngine(lambda m, f: _pick(1), model_id="first")
    localjudge.evaluate(PAIR_ROWS, ["pairwise"], engine=engine, out=tmp_path / "run")
    report = run_controls(tmp_path / "run", engine=engine, sample=20, kinds=("same_answer",))
    g = report.other_kinds["same_answer"]["pairwise"]
    assert (g.kind, g.variable, g.n, g.first, g.second, g.ties) == ("same_answer", "answer_2", 20, 20, 0, 0)
    assert g.verdict == PREFERS_FIRST and g.p_value < 0.001
    assert "no control: the judge file declares no answer variable" in report.judges["pairwise"].verdict
    stored = [json.loads(line) for line in (tmp_path / "run" / "controls" / "pairwise.same_answer" / "results.jsonl").open()]
    assert len(stored) == 20 and all(s["inputs"]["answer_1"] == s["inputs"]["answer_2"] for s in stored)
    assert any("pairwise: first 20, second 0, tie 0 of 20, p = 0.000: prefers the first" in x for x in controls_lines(report))


def test_a_pairwise_judge_that_picks_either_position_evenly_shows_no_preference(tmp_path):
    def even(messages, fmt) -> str:  # the side from a hash of the prompt: no position favoured
        return _pick(1 + hashlib.sha256(messages[-1].content.encode()).digest()[0] % 2)

    engine = ScriptedEngine(even, model_id="even")
    localjudge.evaluate(PAIR_ROWS, ["pairwise"], engine=engine, out=tmp_path / "run")
    g = run_controls(tmp_path / "run", engine=engine, sample=30, kinds=("same_answer",)).other_kinds["same_answer"]["pairwise"]
    assert g.n == 30 and g.first + g.second == 30 and abs(g.first - g.second) <= 10
    assert g.verdict == NO_PREFERENCE and g.p_value >= 0.05


def test_the_binomial_p_value_is_exact_and_two_sided():
    assert binomial_p(10, 10) == pytest.approx(2 / 1024) and binomial_p(0, 10) == pytest.approx(2 / 1024)
    assert binomial_p(5, 10) == pytest.approx(1.0) and binomial_p(0, 0) == 1.0
    assert binomial_p(8, 10) == pytest.approx(2 * (1 + 10 + 45) / 1024)


def test_a_pair_declaration_must_name_two_different_declared_variables():
    base = {
        "name": "p",
        "variables": [{"name": "a"}, {"name": "b"}],
        "messages": [{"role": "user", "template": "{{a}} {{b}}"}],
        "output": {"kind": "yes_no_json"},
    }
    with pytest.raises(JudgeSpecError, match=r"controls.pair \['a', 'a'\] must name two different variables"):
        spec_from_dict({**base, "controls": {"pair": ["a", "a"]}})
    with pytest.raises(JudgeSpecError, match="controls.pair 'c' is not a declared variable"):
        spec_from_dict({**base, "controls": {"pair": ["a", "c"]}})
    assert spec_from_dict({**base, "controls": {"pair": ["a", "b"]}}).controls.pair == ["a", "b"]


def test_the_commands_offer_exactly_the_kinds_the_controls_judge_and_all():
    from localjudge.cli.options import CONTROL_KIND_CHOICES
    from localjudge.report.controls import KINDS

    assert CONTROL_KIND_CHOICES == (*KINDS, "all")
