"""Writes formats_store.sqlite and formats_store.json: a store of synthetic results in every built-in format that
reports compare with labels, written by the localjudge this script imports, and what that localjudge reported on
it (each judge's label kind, label domain, pairwise-ness and agreement with labels). Made once, with the release
before the typed format spec (issue 30), by `PYTHONPATH=<that checkout> python tests/data/legacy/make_formats_store.py`;
tests/test_format_facts.py opens the store with today's code and expects the same report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from localjudge.formats import Choice, PairwiseJSON, Prometheus, ScoreJSON, ScoreLines, Statements, VerdictList, YesNoJSON
from localjudge.store.db import Store
from localjudge.store.results import JudgeResult, Record, ResultRow

HERE = Path(__file__).parent
N = 8

JUDGES: dict[str, Any] = {
    "yes_no_fast": (YesNoJSON(), YesNoJSON().fast()),
    "score_10": (ScoreJSON(1, 10), ScoreJSON(1, 10)),
    "score_dec": (ScoreJSON(0, 1, 2), ScoreJSON(0, 1, 2)),
    "score_lines": (ScoreLines(0, 4), ScoreLines(0, 4)),
    "choice": (Choice(["good", "ok", "bad"], {"good": 1.0, "ok": 0.5, "bad": 0.0}), None),
    "pairwise": (PairwiseJSON(), None),
    "prometheus_rel": (Prometheus(mode="relative"), None),
    "prometheus_abs": (Prometheus(), None),
    "statements": (Statements(), None),
    "two_stage": ([Statements(), VerdictList(3)], VerdictList(3)),
}
VALUES: dict[str, list[Any]] = {
    "yes_no_fast": ["yes", "no"],
    "score_10": [1, 4, 7, 10],
    "score_dec": [0.0, 0.25, 0.75, 1.0],
    "score_lines": [0, 1, 3, 4],
    "choice": ["good", "ok", "bad"],
    "pairwise": [1, 2],
    "prometheus_rel": [1, 2],
    "prometheus_abs": [1, 3, 5],
    "statements": [["a"], ["b", "c"]],
    "two_stage": [["yes", "no", "yes"], ["no", "no", "no"]],
}


def row(judge: str, i: int) -> ResultRow:
    declared, used = JUDGES[judge]
    fmt = used or declared
    spec = [f.spec() for f in declared] if isinstance(declared, list) else declared.spec()
    value = VALUES[judge][i % len(VALUES[judge])]
    failed = i == N - 1  # the last row failed before its prompt was rendered: no record
    record = None if failed else Record(
        model_id="synthetic", model_sha256="0" * 64, judge_version="v1", format=spec, prompt_hash=f"h{i}",
        decode_options={}, seed=0, localjudge_version="test",
    )  # fmt: skip
    name = " + ".join(f.describe() for f in declared) if failed and isinstance(declared, list) else fmt.describe()
    result = JudgeResult(
        judge=judge, judge_version="v1", format=name, value=None if failed else value,
        score=None if failed or not isinstance(value, (int, float)) else float(value) / 10,
        unscored_reason="prompt_too_long" if failed else None, model_id="synthetic",
    )  # fmt: skip
    return ResultRow(
        run_id="run", row_index=i, row_id=f"r{i}", source=f"data.jsonl:{i + 1}", judge=judge,
        inputs={"input": f"question {i}"}, cache_key=None if failed else f"k{judge}{i}", record=record, result=result,
    )  # fmt: skip


def labels_of(judge: str) -> list[dict[str, Any]]:
    """A label per row: the judge's value on even rows, another of its values on odd ones."""
    vals = VALUES[judge]
    out = []
    for i in range(N):
        v = vals[i % len(vals)] if i % 2 == 0 else vals[(i + 1) % len(vals)]
        out.append({"id": f"r{i}", "label": v if not isinstance(v, list) else "yes"})
    return out


def report(store: Store) -> dict[str, Any]:
    """What the reports read from the store: kind, domain, pairwise-ness, agreement (or its error) per judge."""
    from localjudge.errors import InputError
    from localjudge.judges.pairwise import is_pairwise_format
    from localjudge.labels.agreement import agree, judge_kind
    from localjudge.labels.store import judge_domain

    rows = list(store.iter_results("run"))
    out: dict[str, Any] = {}
    for judge in JUDGES:
        mine = [r for r in rows if r.judge == judge]
        entry: dict[str, Any] = {}
        try:
            entry["kind"] = list(judge_kind(mine))
        except InputError as e:
            entry["kind"] = str(e)
        dom = judge_domain(mine)
        entry["domain"] = dom.model_dump() if dom is not None else None
        entry["domain_last_first"] = (lambda d: d.model_dump() if d is not None else None)(judge_domain(mine[::-1]))
        entry["pairwise"] = [is_pairwise_format(r.result.format) for r in mine]
        try:
            entry["agreement"] = agree(mine, labels_of(judge), "label").model_dump(mode="json")
        except InputError as e:
            entry["agreement"] = str(e)
        out[judge] = entry
    return out


def main() -> None:
    path = HERE / "formats_store.sqlite"
    path.unlink(missing_ok=True)
    with Store(path) as st:
        st.new_run({}, run_id="run")
        for judge in JUDGES:
            for i in range(N):
                st.put(row(judge, i))
        expected = report(st)
    (HERE / "formats_store.json").write_text(json.dumps(expected, indent=1, sort_keys=True, default=str) + "\n")
    print(f"wrote {path} (schema {st.schema_version})", file=sys.stderr)


if __name__ == "__main__":
    main()
