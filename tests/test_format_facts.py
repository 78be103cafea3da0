"""Format facts are typed: a result carries its format as a `FormatSpec` (kind + parameters) kept in the store's own
column, `make_format(spec)` builds the format back, and the facts reports read (label kind, value domain, score
range, example output, pairwise-ness) are the format's; a store written before the spec migrates and reports the
same."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from localjudge.errors import InputError
from localjudge.formats import (
    Choice,
    FlowJudge,
    FourLine,
    PairwiseJSON,
    Prometheus,
    ScoreJSON,
    ScoreLines,
    Selene,
    Statements,
    VerdictList,
    YesNoJSON,
    make_format,
)
from localjudge.store.db import MIGRATIONS, Store
from localjudge.store.format_spec import FormatSpec, legacy_format_spec
from localjudge.store.results import JudgeResult, ResultRow

LEGACY = Path(__file__).parent / "data" / "legacy"
ROOT = Path(__file__).parent.parent

FORMATS = [
    YesNoJSON(),
    YesNoJSON().fast(),
    ScoreJSON(1, 10),
    ScoreJSON(0, 1, 2, explanation=False),
    ScoreLines(0, 4),
    ScoreLines(1, 5, justification=False),
    FourLine(),
    Choice(["good", "ok, fine", "bad"], {"good": 1.0, "ok, fine": 0.5, "bad": 0.0}),
    Choice(["a", "b"], rationale=False),
    PairwiseJSON(),
    Statements(),
    VerdictList(3),
    Prometheus(mode="relative"),
    Prometheus(min=1, max=3, feedback=False),
    FlowJudge(),
    Selene(mode="relative"),
]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_formats_store", LEGACY / "make_formats_store.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _old_columns(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as c:
        return c.execute(
            "SELECT run_id, row_index, judge, row_id, source, inputs, cache_key, record, result, error, scored, passed, "
            "updated FROM results ORDER BY judge, row_index"
        ).fetchall()


def test_a_store_written_before_the_typed_spec_migrates_keeps_its_rows_and_reports_the_same(tmp_path: Path):
    path = tmp_path / "results.sqlite"
    shutil.copy(LEGACY / "formats_store.sqlite", path)
    before = _old_columns(path)
    gen = _generator()
    with Store(path) as st:
        assert st.schema_version == len(MIGRATIONS)
        report = gen.report(st)
        specs = dict(st.conn.execute("SELECT judge || ':' || row_index, format_spec FROM results").fetchall())
    assert _old_columns(path) == before  # every column the release before wrote, byte for byte
    expected = json.loads((LEGACY / "formats_store.json").read_text())
    # Where the first row read had failed before its prompt (no record), the release before read the result's
    # format string for its kind alone: a choice judge lost its labels (domain sorted from the values seen) and a
    # two-format judge read as its first format (refused). The typed spec reports those judges as it does when a
    # judged row comes first: the report no longer depends on which row is read first.
    for judge in ("choice", "two_stage"):
        assert expected[judge]["domain_last_first"] != expected[judge]["domain"]
        expected[judge]["domain_last_first"] = expected[judge]["domain"]
    assert json.loads(json.dumps(report, sort_keys=True, default=str)) == expected
    assert json.loads(specs["score_10:0"]) == {
        "kind": "score_json",
        "params": {"min": 1, "max": 10, "decimals": 0, "field_tokens": 80},
    }
    assert json.loads(specs["choice:1"])["params"]["labels"] == ["good", "ok", "bad"]
    assert json.loads(specs["prometheus_rel:2"])["params"]["mode"] == "relative"
    assert specs["two_stage:7"] is None  # a failed row of a judge with two formats names no one format


def test_a_new_row_keeps_its_typed_spec_in_its_own_column_and_its_result_json_as_before(tmp_path: Path):
    fmt = ScoreJSON(0, 1, 2)
    result = JudgeResult(judge="j", judge_version="v", format=fmt.describe(), format_spec=fmt.format_spec(), value=0.5)
    row = ResultRow(row_index=0, row_id="r0", judge="j", result=result)
    with Store(tmp_path / "s.sqlite") as st:
        st.put(row.model_copy(update={"run_id": "run"}))
        stored_json, column = st.conn.execute("SELECT result, format_spec FROM results").fetchone()
        [back] = st.iter_results("run")
    assert "format_spec" not in json.loads(stored_json) and "format_spec" not in row.model_dump_json()
    assert json.loads(column) == {"kind": "score_json", "params": {"min": 0, "max": 1, "decimals": 2, "field_tokens": 80}}
    assert back.result.format_spec == fmt.format_spec()
    assert make_format(back.result.format_spec).describe() == fmt.describe()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.describe()[:40])
def test_make_format_builds_a_format_back_from_its_typed_spec_and_the_legacy_reader_reads_its_describe_string(fmt):
    spec = fmt.format_spec()
    assert isinstance(spec, FormatSpec) and spec.kind == fmt.kind
    assert make_format(spec).describe() == fmt.describe()
    assert FormatSpec.from_json(spec.to_json()) == spec
    assert legacy_format_spec(fmt.describe()) == spec


def test_the_legacy_reader_names_no_format_for_an_empty_or_joined_string():
    assert legacy_format_spec("") is None
    assert legacy_format_spec("statements(max_items=12, field_tokens=48) + verdict_list(n=3)") is None
    assert legacy_format_spec("yes_no_json") == FormatSpec(kind="yes_no_json")


EXAMPLES = [
    (YesNoJSON(), True, "why", '{"rationale": "why", "result": "yes"}'),
    (YesNoJSON().fast(), False, "why", '{"result": "no"}'),
    (ScoreJSON(1, 10), True, "", '{"eval_score": 10, "explanation": ""}'),
    (ScoreJSON(0, 1, 2, explanation=False), False, "x", '{"eval_score": 0}'),
    (ScoreLines(0, 4), False, "", "score: 0\njustification: -"),
    (ScoreLines(1, 5, justification=False), True, "x", "score: 5"),
    (PairwiseJSON(), False, "b", '{"better_response": 2, "explanation": "b"}'),
    (Choice(["good", "bad"], {"good": 1.0, "bad": 0.0}, rationale=True), True, "r", '{"rationale": "r", "result": "good"}'),
    (Choice(["good", "bad"], {"good": 1.0, "bad": 0.0}, rationale=False), False, "r", "bad"),
    (Prometheus(), True, "", "- [RESULT] 5"),
    (Prometheus(mode="relative", feedback=False), False, "f", "[RESULT] B"),
    (FlowJudge(), False, "f", "<feedback>\nf\n</feedback>\n<score>\n1\n</score>"),
    (Selene(mode="relative"), True, "f", "**Reasoning:** f\n\n**Result:** A"),
]


@pytest.mark.parametrize(("fmt", "positive", "why", "expected"), EXAMPLES, ids=lambda x: str(x)[:30])
def test_a_formats_example_output_is_the_verdict_a_label_implies_in_its_own_layout(fmt, positive, why, expected):
    assert fmt.example_output(positive, why) == expected


@pytest.mark.parametrize("fmt", [Choice(["a", "b"]), Statements(), FourLine(), VerdictList(2)], ids=lambda f: f.kind)
def test_a_format_with_no_verdict_for_a_label_refuses_an_example(fmt):
    with pytest.raises(InputError, match=f"not supported for format '{fmt.kind}'; use --examples 0"):
        fmt.example_output(True, "")


def test_agreement_and_the_formats_share_one_kind_type():
    from localjudge.formats.base import LabelKind
    from localjudge.labels import agreement

    assert agreement.Kind is LabelKind


@pytest.mark.parametrize(
    "path",
    [
        "localjudge/labels/agreement.py",
        "localjudge/labels/store.py",
        "localjudge/judges/pairwise.py",
        "localjudge/align/examples.py",
    ],
)
def test_readers_of_format_facts_neither_parse_format_strings_nor_test_format_classes(path: str):
    from localjudge.formats import FORMATS, FeedbackFormat

    classes = "|".join([*(c.__name__ for c in FORMATS.values()), FeedbackFormat.__name__])
    text = (ROOT / path).read_text()
    assert not re.search(r'split\("\("\)|mode=relative|min=\(', text)
    assert not re.search(rf"isinstance\(\w+, \(?({classes})\b", text)


RATINGS = [
    ("yes/no", "Yes", '"(yes|no)"', 5, "Literal['yes', 'no']", 'the evaluation rating: "yes" or "no"', '"yes"', "yes", 1.0),
    ("bool", "false", "(true|false)", 5, "bool", "the evaluation rating: true or false", "true", False, 0.0),
    ("int:1-5", "4", "(5|4|3|2|1)", 2, "int", "the evaluation rating: an integer from 1 to 5", "5", 4, 0.75),
    (
        "float:0-1:2", 0.25, "(1(\\.0{1,2})?|0(\\.[0-9]{1,2})?)", 4, "float",
        "the evaluation rating: a number from 0 to 1 with at most 2 decimals", "1", 0.25, 0.25,
    ),
    (
        "labels:good=1,bad=0", "BAD", '"(good|bad)"', 6, "Literal['good', 'bad']",
        'the evaluation rating: one of "good", "bad"', '"good"', "bad", 0.0,
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", RATINGS, ids=lambda c: c[0])
def test_each_trace_rating_kind_is_one_behaviour_that_constrains_describes_checks_and_scores_as_before(case):
    from localjudge.agent.rating import RatingType

    spec, raw, regex, chars, type_name, described, example, checked, score = case
    r = RatingType.parse(spec)
    got = r.check(raw, "f", "t")
    assert (r.value_regex(), r.value_chars(), r.type_name(), r.describe(), r.example()) == (
        regex, chars, type_name, described, example,
    )  # fmt: skip
    assert (got, r.normalise(got)) == (checked, score) and type(got) is type(checked)


def test_the_rating_behaviours_never_test_the_rating_kind_by_name():
    text = (ROOT / "localjudge/agent/rating.py").read_text()
    behaviours = text[text.index("# ----") :]
    assert not re.search(r"\.kind\s*(==|!=|in)", behaviours)
