"""`labels import` reads back the session labels `labels export` wrote from a per-turn run: into a per-turn run
holding the conversation they are session labels again (the view's queue, the export and `agree` see what the
first run had), checked like a turn label (one line naming the line and the field), the same after a re-import;
into a session-level run they are that conversation's row label, as a record found by `id` always was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from view_conversations_support import make_conversation_run
from view_support import ViewServer

from localjudge.cli import main
from localjudge.labels.importing import import_labels
from localjudge.labels.store import Label, add_label, export_labels, label_rows, latest_labels
from localjudge.store.db import Store
from localjudge.store.session_labels import SessionLabel, add_session_label, latest_session_labels

JUDGE = "conversation_completeness"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A labelled per-turn run `a` (one turn label, one session label), an unlabelled re-run `b` of the same data,
    a session-level run `s`, and `a`'s export."""
    base = tmp_path_factory.mktemp("imp")
    for name in ("a", "b"):
        make_conversation_run(base / name, "turn", window=1)
    make_conversation_run(base / "s", "session")
    with Store(base / "a" / "results.sqlite") as st:
        rid = st.latest_run() or ""
        row_id = st.conn.execute("SELECT row_id FROM results WHERE run_id = ? AND row_index = 1", (rid,)).fetchone()[0]
        with st._transaction():
            add_label(
                st.conn, Label(run_id=rid, row_index=1, judge=JUDGE, row_id=row_id, value="yes", labeller="ann", sample="browse")
            )
            add_session_label(st.conn, SessionLabel(run_id=rid, conversation_id="math", judge=JUDGE, value="no",
                                                    comment="never checked", labeller="ann", sample="random"))  # fmt: skip
    export_labels(base / "a", base / "a.jsonl")
    return base


def _state(run_dir: Path) -> tuple[list, list]:
    with Store(run_dir / "results.sqlite") as st:
        rid = st.latest_run() or ""
        turns = [(k, lab.value, lab.labeller, lab.created) for k, lab in latest_labels(st.conn, rid).items()]
        whole = [(k, lab.value, lab.comment, lab.labeller, lab.sample, lab.created, lab.stale)
                 for k, lab in latest_session_labels(st.conn, rid).items()]  # fmt: skip
    return turns, whole


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.system
def test_exported_turn_and_session_labels_import_into_a_rerun_as_the_same_labels_for_the_queue_export_and_agree(runs):
    assert [r["granularity"] for r in _rows(runs / "a.jsonl") if "granularity" in r] == ["session"]
    rep = import_labels(runs / "b", runs / "a.jsonl")
    assert (rep.imported, rep.skipped) == (2, 0)
    assert _state(runs / "b") == _state(runs / "a") and _state(runs / "b")[1][0][0] == ("math", JUDGE)
    export_labels(runs / "b", runs / "b.jsonl")
    assert _rows(runs / "b.jsonl") == _rows(runs / "a.jsonl")
    again = import_labels(runs / "b", runs / "a.jsonl")  # idempotent: the latest labels stay what they were
    assert again.imported == 2 and _state(runs / "b") == _state(runs / "a")
    server = ViewServer(str(runs / "b"))
    try:
        items = [server.request(f"/api/runs/b/queue?judge={JUDGE}&order=random&pos={p}")[1]["item"] for p in range(8)]
    finally:
        server.stop()
    math = [it for it in items if it and it["conversation_id"] == "math"]
    assert math and all(it["session_label"] == "no" for it in math)
    assert all(it["session_label"] is None for it in items if it and it["conversation_id"] != "math")
    cli = CliRunner()
    for name in ("a", "b"):
        res = cli.invoke(
            main,
            [
                "agree",
                str(runs / "s"),
                "--labels",
                str(runs / f"{name}.jsonl"),
                "--label-column",
                "label",
                "-o",
                str(runs / f"ag-{name}.json"),
            ],
        )
        assert res.exit_code == 0, res.output
    joined = json.loads((runs / "ag-b.json").read_text())
    assert joined == json.loads((runs / "ag-a.json").read_text()) and joined["join"]["n_matched"] == 1  # the session row


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"label": "maybe"}, "field value"),
        ({"judge": "other_judge"}, "field judge='other_judge'"),
        ({"id": "nowhere", "conversation_id": "nowhere"}, "field id='nowhere' is not a conversation of the run"),
        ({"stale": True}, "field stale"),
        ({"sample": "active", "probability": 0.5}, "field probability is for a row's label only"),
    ],
)
def test_a_bad_session_record_is_refused_in_one_line_naming_its_line_and_field_and_skip_bad_counts_it(
    runs, tmp_path, change, field
):
    out = tmp_path / "c"
    make_conversation_run(out, "turn", window=1)
    session = next(r for r in _rows(runs / "a.jsonl") if r.get("granularity") == "session")
    f = tmp_path / "in.jsonl"
    f.write_text(json.dumps({**session, "stale": False}) + "\n" + json.dumps({**session, **change}) + "\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f)])
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1 and "line 2" in lines[0] and field in lines[0], res.output
    assert _state(out) == ([], [])
    res = CliRunner().invoke(main, ["labels", "import", str(out), str(f), "--skip-bad"])
    assert res.exit_code == 0 and "imported 1 labels" in res.output and "skipped 1 bad records" in res.output, res.output
    assert [k for k, *_ in _state(out)[1]] == [("math", JUDGE)]


def test_a_session_record_imported_into_a_session_level_run_labels_that_conversations_row(runs, tmp_path):
    session = next(r for r in _rows(runs / "a.jsonl") if r.get("granularity") == "session")
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(session) + "\n", encoding="utf-8")
    assert import_labels(runs / "s", f).imported == 1
    assert [(r["id"], r["label"], r["comment"]) for r in label_rows(runs / "s")] == [("math", "no", "never checked")]
    assert _state(runs / "s")[1] == []
