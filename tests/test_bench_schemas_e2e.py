"""scripts/benchmarks/bench_schemas_e2e.py (`bench.py schemas-e2e`, issue 23) on self-written schemas: the sample is
stratified and seeded, answers are judged by `jsonschema`, and a real `localjudge serve` (and llama-cpp-python's
own server, where its server extras are installed) answers through the bench with outcomes that add up."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from scripts.benchmarks import bench_schemas_e2e as e2e

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
LOOKBEHIND = {"type": "object", "properties": {"code": {"type": "string", "pattern": "(?<=x)y"}}, "required": ["code"]}
TINY = [("people", "person", PERSON), ("codes", "lookbehind", LOOKBEHIND)]


def _bench_tree(root: Path, sizes: dict[str, int]) -> Path:
    for cat, n in sizes.items():
        (root / "data" / cat).mkdir(parents=True)
        for i in range(n):
            (root / "data" / cat / f"s{i:03}.json").write_text(json.dumps({"type": "integer", "minimum": i}))
    (root / "data" / "Broken").mkdir()
    (root / "data" / "Broken" / "x.json").write_text("{not json")
    return root


def test_sample_takes_the_largest_categories_evenly_and_is_the_same_for_the_same_seed(tmp_path):
    sizes = {f"Cat{i}": 10 + i for i in range(10)}  # Cat0 and Cat1 are the two smallest
    root = _bench_tree(tmp_path, sizes)
    picked = e2e.pick(root, sample=16)
    cats = [c for c, _, _ in picked]
    assert sorted(set(cats)) == [f"Cat{i}" for i in range(2, 10)]
    assert all(cats.count(c) == 2 for c in set(cats))
    assert picked == e2e.pick(root, sample=16)
    assert [n for _, n, _ in picked] != [n for _, n, _ in e2e.pick(root, sample=16, seed=1)]
    assert {c for c, _, _ in e2e.pick(root, 4, categories=["Cat0"])} == {"Cat0"}
    with pytest.raises(SystemExit, match="Nope"):
        e2e.pick(root, 4, categories=["Nope"])


def test_answers_are_judged_valid_invalid_or_unchecked_by_jsonschema():
    assert e2e.validate('{"name": "Ann", "age": 3}', PERSON) == ("valid", "")
    outcome, why = e2e.validate('{"name": "Ann", "age": 3, "x": 1}', PERSON)
    assert outcome == "invalid" and "x" in why
    assert e2e.validate('{"name": "Ann", "age":', PERSON)[0] == "invalid"  # cut by max_tokens: not JSON
    assert e2e.validate("5", {"type": "nonsense"})[0] == "unchecked"  # not a schema jsonschema can check
    assert e2e.validate("5", {"$ref": "https://example.invalid/s.json"})[0] == "unchecked"
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "maximum": 5, "exclusiveMaximum": True}
    assert e2e.validate("5", draft4)[0] == "invalid"  # the schema's own draft, not 2020-12


def _check(records: list[dict], who: str) -> dict[str, int]:
    c = e2e.counts(records)
    assert c["n"] == len(TINY) == sum(c[k] for k in e2e.OUTCOMES)
    assert c["answered"] == c["valid"] + c["invalid"] + c["unchecked"]
    assert [(r["server"], r["category"], r["name"]) for r in records] == [(who, cat, name) for cat, name, _ in TINY]
    for r in records:
        assert r["answer_s"] >= 0 and r["max_tokens"] == 48
        if r["outcome"] in ("valid", "invalid"):
            assert r["answer"] is not None and r["ttft_s"] is not None and r["tokens"] >= 1
            assert r["t2_s"] is None or r["ttft_s"] <= r["t2_s"] <= r["answer_s"]
    return c


@pytest.mark.system
def test_localjudge_serve_answers_valid_or_declines_naming_the_feature_through_the_bench(tmp_path):
    records = e2e.run_contender("localjudge", TINY, max_tokens=48, timeout=120, out=tmp_path)
    c = _check(records, "localjudge")
    person, lookbehind = records
    assert person["outcome"] == "valid", person
    assert lookbehind["outcome"] == "declined" and lookbehind["status"] == 400
    assert "look-around" in lookbehind["message"], lookbehind["message"]
    assert c["invalid"] == 0
    assert e2e.load_records(tmp_path) == {"localjudge": json.loads(json.dumps(records))}
    table = "\n".join(e2e.report({"localjudge": records}))
    assert "| `localjudge serve` (llguidance) | **1** | 0 | 0 | 1 | 0 / 0 / 0 | 0 |" in table
    assert "localjudge declined 1: " in table


LLAMA_SERVER_NEEDS = ("fastapi", "pydantic_settings", "sse_starlette", "starlette_context")


@pytest.mark.system
@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in LLAMA_SERVER_NEEDS),
    reason="llama-cpp-python's server extras are not installed (the [test] extra has them: sse-starlette, starlette-context)",
)
def test_llama_cpp_python_server_answers_every_schema_through_the_bench_and_never_declines(tmp_path):
    records = e2e.run_contender("llamacpp", TINY, max_tokens=48, timeout=120, out=tmp_path)
    c = _check(records, "llamacpp")
    assert c["declined"] == 0 and c["answered"] + c["error"] == len(TINY), records
    assert records[0]["outcome"] == "valid", records[0]  # its grammar holds a plain object schema


@pytest.mark.system
def test_a_server_that_dies_on_a_schema_counts_it_as_an_error_and_the_bench_goes_on_with_a_new_one(tmp_path, monkeypatch):
    started: list = []
    real_start, real_ask = e2e.start, e2e.ask

    def start(*args, **kwargs):
        started.append(real_start(*args, **kwargs))
        return started[-1]

    def ask(*args, **kwargs):
        if len(started) == 1:  # the first server dies as the first schema is sent (as llama-cpp-python's segfaults)
            started[0][0].kill()
        return real_ask(*args, **kwargs)

    monkeypatch.setattr(e2e, "start", start)
    monkeypatch.setattr(e2e, "ask", ask)
    records = e2e.run_contender("localjudge", [TINY[0], ("people", "again", PERSON)], max_tokens=48, out=tmp_path)
    assert len(started) == 2 and all(proc.poll() is not None for proc, *_ in started)
    assert [r["outcome"] for r in records] == ["error", "valid"], records
    assert records[0]["server_exit"] == -9 and "restarted" in records[0]["message"]
    resumed = e2e.run_contender("localjudge", [TINY[0], ("people", "again", PERSON)], out=tmp_path, resume=True)
    assert resumed == json.loads(json.dumps(records)) and len(started) == 2  # nothing asked again, no server started
