"""Labels stay bound to what they judged: running other data into a labelled run directory is refused in one line
with the labels unchanged; a label whose row changed is stale (shown, exported with `stale`, left out of `agree`
and counted); labels of a store written before the binding get it from their row when the store is migrated;
`labels import` checks every record like the view's label API (one line per bad record, nothing written, or
only the good ones with --skip-bad); and the labelling card says nothing of an expected score a judge lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from view_support import ViewServer, make_run, result_row

from localjudge.cli import main
from localjudge.labels.store import Label, add_label, label_rows, latest_labels
from localjudge.store.db import MIGRATIONS, Store, connect, migrate

ANSWER = json.dumps({"rationale": "fine", "result": "yes"})
JUDGE = "relevance_to_query"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(data: Path, out: Path):
    args = ["run", str(data), "-j", JUDGE, "--model", "scripted:", "--option", f"response={ANSWER}", "--out", str(out)]
    return CliRunner().invoke(main, args)


def data_rows(n: int) -> list[dict]:
    return [{"id": f"c{i}", "input": f"Question {i}?", "output": f"Answer {i}."} for i in range(n)]


def stored(out: Path) -> list[tuple[int, str, str]]:
    with Store(out / "results.sqlite") as st:
        return [(r.row_index, r.row_id, r.inputs["input"]) for r in st.iter_results(st.latest_run() or "")]


def test_other_data_into_a_labelled_run_directory_is_refused_in_one_line_and_the_labels_stay(tmp_path: Path):
    out = tmp_path / "run"
    assert run(write_jsonl(tmp_path / "a.jsonl", data_rows(6)), out).exit_code == 0
    write_jsonl(tmp_path / "l.jsonl", [{"id": "c0", "judge": JUDGE, "label": "no"}])
    assert CliRunner().invoke(main, ["labels", "import", str(out), str(tmp_path / "l.jsonl")]).exit_code == 0
    before = stored(out)
    other = write_jsonl(
        tmp_path / "other.jsonl", [{"input": "What is 2+2?", "output": "4"}, {"input": "Hi?", "output": "Hello."}]
    )
    res = run(other, out)
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1 and "other data" in res.output and "--out" in res.output
    assert stored(out) == before  # no row replaced
    [lab] = label_rows(out)
    assert (lab["row_index"], lab["id"], lab["input"], lab["label"]) == (0, "c0", "Question 0?", "no")
    # the same data resumes as before, and a new directory takes the other data
    again = run(tmp_path / "a.jsonl", out)
    assert again.exit_code == 0 and "0 judged now" in again.output, again.output
    assert run(other, tmp_path / "run2").exit_code == 0


@pytest.mark.system
def test_a_label_whose_row_changed_is_stale_shown_exported_and_left_out_of_agree(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    rows = data_rows(4)
    assert run(write_jsonl(tmp_path / "a.jsonl", rows), out).exit_code == 0
    write_jsonl(tmp_path / "l.jsonl", [{"row_index": i, "judge": JUDGE, "label": "yes"} for i in range(4)])
    cli = CliRunner()
    assert cli.invoke(main, ["labels", "import", str(out), "l.jsonl"]).exit_code == 0
    rows[1]["output"] = "Another answer."  # the row is edited and the run resumed: row 1 is judged again
    assert run(write_jsonl(tmp_path / "a.jsonl", rows), out).exit_code == 0
    assert [lab["row_index"] for lab in label_rows(out)] == [0, 2, 3]
    res = cli.invoke(main, ["labels", "export", str(out), "-o", "e.jsonl"])
    assert res.exit_code == 0 and "4 labels, 1 of them stale" in res.output
    exported = [json.loads(x) for x in Path("e.jsonl").read_text().splitlines()]
    assert [(e["row_index"], e["stale"]) for e in exported] == [(0, False), (1, True), (2, False), (3, False)]
    res = cli.invoke(main, ["agree", str(out), "--labels", str(out), "-o", "a.json"])
    assert res.exit_code == 0, res.output
    assert json.loads(Path("a.json").read_text())["n_used"] == 3
    assert "1 label left out as stale" in res.output
    res = cli.invoke(main, ["agree", str(out), "--labels", "e.jsonl", "--label-column", "label", "-o", "b.json"])
    assert res.exit_code == 0 and json.loads(Path("b.json").read_text())["n_used"] == 3, res.output
    server = ViewServer(str(out))
    try:
        _, page, _ = server.request("/api/runs/run/rows?per=10")
        assert [it["label_stale"] for it in page["items"]] == [False, True, False, False]
        _, q, _ = server.request(f"/api/runs/run/queue?judge={JUDGE}&order=random&pos=0")
        assert q["n_labelled"] == 3
        _, row, _ = server.request("/runs/run/rows/1")
        assert "stale: the row changed since" in row
        _, agreement, _ = server.request(f"/api/runs/run/agreement?judge={JUDGE}")
        assert agreement["n_labels"] == 3 and agreement["n_stale"] == 1
    finally:
        server.stop()


def test_labels_of_a_store_written_before_the_binding_get_the_binding_of_their_row(tmp_path: Path):
    path = tmp_path / "results.sqlite"
    old = Store.__new__(Store)  # a store at schema version 2 (results and labels, no binding), as localjudge wrote it
    old.path, old.conn = path, connect(path)
    migrate(old.conn, MIGRATIONS[:2])
    for i in range(2):
        r = result_row("r", i)
        old.put(r.model_copy(update={"record": r.record.model_copy(update={"prompt_hash": f"p{i}"})}))
    old.conn.execute(
        "INSERT INTO labels (run_id, row_index, judge, row_id, value, comment, labeller, sample, created) "
        "VALUES ('r', 0, 'polite', 'r0', '\"no\"', NULL, 'ann', 'browse', '2025-01-01T00:00:00+0000')"
    )
    old.close()
    with Store(path) as st:
        assert st.schema_version == len(MIGRATIONS)
        [lab] = latest_labels(st.conn, "r").values()
        assert (lab.value, lab.prompt_hash, lab.judge_version, lab.stale) == ("no", "p0", "v1", False)
        r = result_row("r", 0)
        st.put(r.model_copy(update={"record": r.record.model_copy(update={"prompt_hash": "other"})}))
        assert latest_labels(st.conn, "r")[(0, "polite")].stale
        new = Label(run_id="r", row_index=0, judge="polite", row_id="", value="yes", labeller="bo", sample="browse")
        fresh = add_label(st.conn, new)
        assert (fresh.prompt_hash, fresh.row_id) == ("other", "r0")
        assert not latest_labels(st.conn, "r")[(0, "polite")].stale


HOSTILE = [
    ({"row_index": "abc", "label": "yes"}, "row_index"),
    ('{"row_index": 1e400, "judge": "polite", "label": "yes"}', "row_index"),
    ({"row_index": [1], "label": "yes"}, "row_index"),
    ({"row_index": 1.5, "label": "yes"}, "row_index"),
    ({"row_index": 1, "label": "yes", "comment": 7}, "comment"),
    ('{"row_index": 1, "judge": "polite", "label": "yes", "labeller": "\\ud800"}', "labeller"),
    ({"row_index": 1, "label": "maybe"}, "value"),
    ({"row_index": 1, "label": {"x": [1, 2]}}, "value"),
    ('{"row_index": 1, "judge": "polite", "label": NaN}', "value"),
    ({"row_index": 1, "label": "yes", "labeller": "x" * 5_000_000}, "labeller"),
    ({"row_index": 1, "label": "yes", "labelled_at": "9999-99-99<script>"}, "labelled_at"),
]


@pytest.mark.parametrize(("record", "field"), HOSTILE, ids=[f"{f}-{i}" for i, (_, f) in enumerate(HOSTILE)])
def test_labels_import_refuses_a_bad_record_in_one_line_naming_file_line_and_field_and_writes_nothing(
    tmp_path: Path, record, field
):
    out = make_run(tmp_path / "r", 4)
    good = json.dumps({"row_index": 0, "judge": "polite", "label": "no"})
    bad = record if isinstance(record, str) else json.dumps({"judge": "polite", **record})
    f = tmp_path / "in.jsonl"
    f.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f)])
    assert res.exit_code == 2 and res.exception is None or isinstance(res.exception, SystemExit), res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and str(f) in lines[0] and "line 2" in lines[0] and f"field {field}" in lines[0], res.output
    assert len(lines[0]) < 600 and "Traceback" not in res.output
    assert label_rows(out) == []
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f), "--skip-bad"])
    assert res.exit_code == 0 and "imported 1 labels" in res.output and "skipped 1 bad records" in res.output, res.output
    assert [(lab["row_index"], lab["label"]) for lab in label_rows(out)] == [(0, "no")]
    assert CliRunner().invoke(main, ["agree", str(out), "--labels", str(out), "-o", str(tmp_path / "a.json")]).exit_code == 0


def test_labels_import_of_a_csv_reads_numbers_from_text_and_refuses_a_row_index_that_is_not_one(tmp_path: Path):
    out = make_run(tmp_path / "r", 4)
    f = tmp_path / "in.csv"
    f.write_text("row_index,judge,label\n0,polite,yes\nx,polite,no\n2,polite,no\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f)])
    assert res.exit_code == 2 and "line 3" in res.output and "field row_index" in res.output and "'x'" in res.output, res.output
    assert label_rows(out) == []
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f), "--skip-bad"])
    assert res.exit_code == 0 and "imported 2 labels" in res.output
    assert [(lab["row_index"], lab["label"]) for lab in label_rows(out)] == [(0, "yes"), (2, "no")]


@pytest.mark.system
def test_the_labelling_card_says_nothing_of_an_expected_score_the_judge_does_not_give(tmp_path: Path):
    out = make_run(tmp_path / "r", 2)
    with Store(out / "results.sqlite") as st:
        r = result_row(st.latest_run() or "", 0)
        st.put(
            r.model_copy(update={"result": r.result.model_copy(update={"value": "yes", "score": 1.0, "expected_score": None})})
        )
    server = ViewServer(str(out))
    try:
        _, q, _ = server.request("/api/runs/r/queue?judge=polite&order=random&pos=0")
        _, q1, _ = server.request("/api/runs/r/queue?judge=polite&order=uncertain")
        items = {it["row_index"]: it for it in (q["item"], q1["item"])}
        for p in range(2):
            it = server.request(f"/api/runs/r/queue?judge=polite&order=random&pos={p}")[1]["item"]
            items[it["row_index"]] = it
        assert items[0]["verdict"] == "yes (score 1)"
        assert items[1]["verdict"].startswith(f"{items[1]['value']} (score ") and ", expected 0." in items[1]["verdict"]
        _, page, _ = server.request("/runs/r/rows/0")
        assert "expected score" not in page
        assert "expected score" in server.request("/runs/r/rows/1")[1]
    finally:
        server.stop()


def test_labels_import_refuses_a_label_exported_as_stale(tmp_path: Path):
    out = make_run(tmp_path / "r", 3)
    f = write_jsonl(
        tmp_path / "e.jsonl",
        [
            {"row_index": 0, "judge": "polite", "label": "yes", "stale": False},
            {"row_index": 1, "judge": "polite", "label": "no", "stale": True},
        ],
    )
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f)])
    assert res.exit_code == 2 and "line 2" in res.output and "field stale" in res.output and label_rows(out) == [], res.output


def test_labels_import_refuses_a_record_whose_id_and_row_index_name_different_rows(tmp_path: Path):
    """A label file from another run (reordered data, another export) whose `id` is not the row at its `row_index`
    is refused naming both, never put on the row at that index; without `row_index` it is matched by `id`."""
    out = make_run(tmp_path / "r", 3)
    f = tmp_path / "in.jsonl"
    f.write_text(
        '{"row_index": 0, "id": "r0", "judge": "polite", "label": "yes"}\n'
        '{"row_index": 1, "id": "r2", "judge": "polite", "label": "no"}\n',
        encoding="utf-8",
    )
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f)])
    assert res.exit_code == 2 and "line 2" in res.output and "field id='r2' is not the row at row_index=1" in res.output
    assert "'r1'" in res.output and label_rows(out) == []
    f.write_text('{"id": "r2", "judge": "polite", "label": "no"}\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f)])
    assert res.exit_code == 0, res.output
    assert [(lab["row_index"], lab["label"]) for lab in label_rows(out)] == [(2, "no")]
