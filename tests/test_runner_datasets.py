"""Dataset readers and the column → variable mapping, without any judge."""

from __future__ import annotations

import pytest

from localjudge.datasets import ColumnSpec, coerce, extract, open_dataset, parse_mapping, resolve_mapping
from localjudge.errors import InputError


def test_jsonl_columns_are_the_union_of_keys_and_malformed_lines_count_as_rows(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n{"b": 2}\nnot json\n{"a": 3, "c": [1, 2]}\n')
    ds = open_dataset(p)
    assert ds.columns == ["a", "b", "c"] and ds.count() == 4
    rows = list(ds)
    assert [r.source for r in rows] == ["d.jsonl:line 1", "d.jsonl:line 3", "d.jsonl:line 4", "d.jsonl:line 5"]
    assert rows[2].error.startswith("d.jsonl:line 4: malformed JSON (Expecting value at column 1)")
    assert rows[3].values == {"a": 3, "c": [1, 2]} and rows[3].row_id == "3"


def test_tsv_and_records_read_with_their_own_sources(tmp_path):
    p = tmp_path / "d.tsv"
    p.write_text("id\tinput\nx1\thello, world\n")
    rows = list(open_dataset(p))
    assert rows[0].values == {"id": "x1", "input": "hello, world"} and rows[0].row_id == "x1"
    recs = open_dataset([{"input": "a"}, "oops"])
    assert recs.columns == ["input"] and recs.count() == 2
    bad = list(recs)[1]
    assert bad.source == "records:row 1" and bad.error == "records:row 1: expected a dict, got a str"


def test_csv_header_problems_are_input_errors(tmp_path):
    for text, msg in (("", "empty CSV file"), ("a,a\n1,2\n", "duplicate columns a"), ("a,\n1,2\n", "an empty column name")):
        p = tmp_path / "d.csv"
        p.write_text(text)
        with pytest.raises(InputError, match=msg):
            open_dataset(p).count()


def test_mapping_items_take_list_and_text_kinds():
    assert parse_mapping(["context=docs:list", "input = q ", "output=a:text"]) == {
        "context": ColumnSpec("docs", "list"),
        "input": ColumnSpec("q"),
        "output": ColumnSpec("a", "text"),
    }
    assert parse_mapping({"x": "y"}) == {"x": ColumnSpec("y")}
    with pytest.raises(InputError, match="write judge_variable=column"):
        parse_mapping(["context"])


def test_judge_aliases_come_before_ours_and_explicit_entries_win():
    cols = ["question", "request", "expected", "expected_facts"]
    plan = resolve_mapping(
        "j", ["input", "ground_truth"], ["context"], cols, {}, {"input": ["request"], "ground_truth": ["expected_facts"]}
    )
    assert plan == {"input": ColumnSpec("request"), "ground_truth": ColumnSpec("expected_facts")}  # no context: left out
    plan = resolve_mapping("j", ["input"], [], cols, {"input": ColumnSpec("expected")})
    assert plan == {"input": ColumnSpec("expected")}


def test_coercion_keeps_lists_writes_numbers_as_text_and_names_wrong_types():
    assert coerce(["a", 2]) == (["a", "2"], None)
    assert coerce(3.5) == ("3.5", None) and coerce(7) == ("7", None)
    assert coerce(float("nan")) == (None, "empty") and coerce([]) == (None, "empty") and coerce(" ") == (None, "empty")
    assert coerce('["a", "b"]') == ('["a", "b"]', None)  # text stays text unless the mapping says list
    assert coerce('["a", "b"]', "list") == (["a", "b"], None)
    assert coerce("[]", "list") == (None, "empty")
    assert coerce('{"a": 1}', "list")[1] == "the mapping says list but the cell holds an object; write it as a JSON list"
    assert coerce(["a"], "text")[1].startswith("wrong type: a list, but the mapping says text")
    assert coerce("plain", "list")[1].startswith("the mapping says list but the cell is not a JSON list")
    assert coerce({"a": 1})[1] == "wrong type: an object; a judge variable takes text or a list of strings"
    assert coerce([["nested"]])[1] == "wrong type: a list holding a list; items must be strings"


def test_extract_names_source_column_and_variable():
    ds = open_dataset([{"q": "hi", "a": ""}])
    row = next(iter(ds))
    plan = {"input": ColumnSpec("q"), "output": ColumnSpec("a")}
    assert extract(row, plan, ["input", "output"]) == (
        {},
        ("empty_value", "records:row 0: column 'a' (variable 'output'): empty value; fill it in or drop the row"),
    )
    assert extract(row, plan, ["input"]) == ({"input": "hi"}, None)  # an empty optional value is left out
    assert extract(row, plan, ["input", "output"], allow_empty=["output"]) == ({"input": "hi", "output": ""}, None)


def test_json_column_kind_passes_structured_values_through():
    trace = {"info": {"trace_id": "t"}, "data": {"spans": [{"name": "llm"}]}}
    assert coerce(trace, "json") == (trace, None)
    assert coerce(trace, "auto")[1].startswith("wrong type")
    assert coerce("", "json") == (None, "empty")
    assert parse_mapping(["trace=col:json"])["trace"].kind == "json"
