"""Session labels given inside a per-turn run over the view's HTTP API (labels/sessions.py): stored apart from the
turn labels, shown on every turn of the conversation, stale when the conversation changes, and refused in one
line where there is no session to label (a session-level run's row, a bad scope)."""

from __future__ import annotations

import pytest
from view_conversations_support import make_conversation_run
from view_support import ViewServer

from localjudge.labels.store import label_rows, latest_labels
from localjudge.store.db import Store
from localjudge.store.session_labels import latest_session_labels

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("sess")
    make_conversation_run(base / "turns", "turn", window=1)
    make_conversation_run(base / "sessions", "session")
    return base


def _post(server: ViewServer, run: str, body: dict) -> tuple[int, dict]:
    tok = server.csrf()
    status, data, _ = server.request(f"/api/runs/{run}/labels", "POST", body, {"X-CSRF-Token": tok})
    return status, data


def _queue(server: ViewServer, run: str, pos: int) -> dict:
    return server.request(f"/api/runs/{run}/queue?judge=conversation_completeness&order=random&pos={pos}")[1]["item"]


def test_a_session_label_is_kept_apart_from_the_turn_label_and_shown_on_every_turn_of_its_conversation(runs):
    server = ViewServer(str(runs / "turns"), str(runs / "sessions"))
    try:
        first = _queue(server, "turns", 0)
        cid, ri = first["conversation_id"], first["row_index"]
        assert first["session_label"] is None
        body = {"row_index": ri, "judge": "conversation_completeness", "value": "yes", "labeller": "ann"}
        assert _post(server, "turns", body)[0] == 200
        status, lab = _post(server, "turns", {**body, "value": "no", "scope": "session"})
        assert status == 200 and lab["conversation_id"] == cid and lab["value"] == "no"
        items = [_queue(server, "turns", p) for p in range(8)]
        same = [it for it in items if it and it["conversation_id"] == cid]
        assert len(same) >= 2 and all(it["session_label"] == "no" for it in same)  # every turn of the conversation
        assert [it["label"] for it in same if it["row_index"] == ri] == ["yes"]  # the turn keeps its own label
        assert all(it["label"] is None for it in same if it["row_index"] != ri)
    finally:
        server.stop()
    with Store(runs / "turns" / "results.sqlite") as st:
        run_id = st.latest_run() or ""
        assert [k[0] for k in latest_labels(st.conn, run_id)] == [ri]
        assert list(latest_session_labels(st.conn, run_id)) == [(cid, "conversation_completeness")]
    assert [r["id"] for r in label_rows(runs / "turns")] == [first["row_id"]]  # per-row estimates and align: turns only
    rows = label_rows(runs / "turns", sessions=True)
    assert sorted((r["id"], r.get("granularity"), r.get("turn_index")) for r in rows) == sorted(
        [(cid, "session", None), (first["row_id"], None, int(first["row_id"].rsplit(":", 1)[1]))]
    )


def test_a_session_label_goes_stale_when_its_conversation_changes(runs):
    with Store(runs / "turns" / "results.sqlite") as st:
        run_id = st.latest_run() or ""
        labs = latest_session_labels(st.conn, run_id)
        assert labs and not any(lab.stale for lab in labs.values())
        (cid, judge) = next(iter(labs))
        st.conn.execute(
            "UPDATE results SET record = json_set(record, '$.prompt_hash', 'other') WHERE run_id = ? AND conversation_id = ?",
            (run_id, cid),
        )
        st.conn.commit()
        assert latest_session_labels(st.conn, run_id)[(cid, judge)].stale
    assert [r for r in label_rows(runs / "turns", sessions=True) if r.get("granularity") == "session"] == []
    assert [r["stale"] for r in label_rows(runs / "turns", stale=True, sessions=True) if r.get("granularity") == "session"] == [
        True
    ]


@pytest.mark.parametrize(
    ("run", "extra", "says"),
    [
        ("sessions", {"scope": "session"}, "is a whole conversation (a session-level run)"),
        ("turns", {"scope": "everything"}, "field scope='everything' is not 'row'"),
        ("turns", {"scope": "session", "sample": "active", "probability": 0.5}, "field probability is for a row's label only"),
    ],
)
def test_a_session_label_where_there_is_no_session_is_refused_in_one_line(runs, run, extra, says):
    server = ViewServer(str(runs / "turns"), str(runs / "sessions"))
    try:
        ri = _queue(server, run, 0)["row_index"]
        body = {"row_index": ri, "judge": "conversation_completeness", "value": "yes", "labeller": "ann", **extra}
        status, data = _post(server, run, body)
        assert status == 400 and says in data["error"] and "\n" not in data["error"]
    finally:
        server.stop()
