"""`localjudge view` on conversation runs over HTTP: a result shown as its chat transcript (turns, tool calls and
results, the judged turn or call highlighted, the judge's window marked), hostile turn text escaped, a 10,000-turn
conversation rendered as a bounded page, and `labels export` carrying the conversation id and turn index."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from view_conversations_support import CONVERSATIONS, make_conversation_run
from view_support import HOSTILE, ViewServer

from localjudge.cli import main
from localjudge.conversations.model import Conversation, Turn
from localjudge.conversations.stored import put_conversations
from localjudge.store.db import Store
from localjudge.view.transcript import MAX_EXPAND, MAX_SHOWN

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def turn_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("conv") / "turns"
    make_conversation_run(out, "turn", window=1)
    return out


def turns_of(html: str) -> dict[int, str]:
    """Turn index -> its div's class, as the row page renders the transcript."""
    return {int(i): cls for cls, i in re.findall(r'<div class="(turn[^"]*)" data-turn="(\d+)"', html)}


def test_a_per_turn_result_shows_its_conversation_as_a_transcript_with_tool_calls_and_the_judged_window(turn_run):
    server = ViewServer(str(turn_run))
    try:
        status, html, _ = server.request("/runs/turns/rows/1")  # weather, its second unit (turns 4-7)
        assert status == 200 and 'id="transcript"' in html and 'data-granularity="turn"' in html
        cls = turns_of(html)
        assert sorted(cls) == list(range(8))  # a short conversation is shown whole
        assert [i for i, c in cls.items() if "judged" in c] == [4, 5, 6, 7]
        assert [i for i, c in cls.items() if "in-window" in c] == [4, 5, 6, 7]  # --window 1: only its own unit
        assert html.count('class="tool-name">get_weather</code>') == 2 and "{&quot;city&quot;: &quot;Rome&quot;}" in html
        assert "24C, clear" in html and "result of c2" in html
        _, q, _ = server.request("/api/runs/turns/queue?judge=conversation_completeness&order=uncertain&pos=0")
        t = q["item"]["transcript"]
        assert t["granularity"] == "turn" and t["hidden_before"] == 0 and t["hidden_after"] == t["total_turns"] - len(t["turns"])
        assert [x["index"] for x in t["turns"] if x["judged"]] == list(range(t["judged"][0], t["judged"][1]))
    finally:
        server.stop()


def test_the_rows_table_shows_a_turn_as_a_transcript_preview_not_escaped_json(turn_run):
    server = ViewServer(str(turn_run))
    try:
        _, page, _ = server.request("/api/runs/turns/rows?per=50")
        by_row = {it["row_index"]: it for it in page["items"]}
        weather = by_row[1]  # weather's second unit: the turns its judge saw (--window 1), roles and first words
        assert weather["transcript_preview"] is True
        assert (
            weather["inputs"]
            == 'user: And in Rome? | assistant: Checking. → get_weather({"city": "Rome"}) | tool: 24C, clear | assistant: 24C and clear in Rome.'
        )
        assert all(it["transcript_preview"] and '\\"role\\"' not in it["inputs"] for it in page["items"])
        assert all(len(it["inputs"]) <= 400 for it in page["items"])
    finally:
        server.stop()


def test_a_tool_call_result_highlights_its_call(tmp_path):
    from localjudge import evaluate

    data = [
        {"id": "w", "messages": CONVERSATIONS[0]["messages"], "expected_tool_calls": [{"name": "get_weather", "arguments": {}}]}
    ]
    evaluate(data, ["tool_call_exact"], conversation="tool_call", out=tmp_path / "calls")
    server = ViewServer(str(tmp_path / "calls"))
    try:
        _, html, _ = server.request("/runs/calls/rows/1")
        assert re.findall(r'<div class="tool-call judged" data-call="(\d+)"', html) == ["1"]
        assert "judged" in turns_of(html)[5] and 'data-granularity="tool_call"' in html
    finally:
        server.stop()


def test_hostile_turn_text_is_escaped_on_the_row_page(turn_run):
    server = ViewServer(str(turn_run))
    try:
        _, html, _ = server.request("/runs/turns/rows/2")  # the hostile conversation
        section = html[html.index('id="transcript"') : html.index("</section>", html.index('id="transcript"'))]
        for h in HOSTILE:
            assert h not in section
        assert "&lt;/script&gt;&lt;script&gt;window.__pwned=1&lt;/script&gt;" in section
        assert "&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;" in section
        assert "<script" not in section and "<img" not in section and '<a href="javascript' not in section
    finally:
        server.stop()


def test_a_ten_thousand_turn_conversation_renders_a_bounded_page_with_the_hidden_turns_counted(tmp_path):
    out = tmp_path / "long"
    make_conversation_run(out, "session")
    turns = [Turn(role="user" if i % 2 == 0 else "assistant", content=f"turn {i} " + "x" * 50) for i in range(10_000)]
    with Store(out / "results.sqlite") as st:
        put_conversations(st, st.latest_run() or "", [("math", Conversation(id="math", turns=turns))])
    server = ViewServer(str(out))
    try:
        status, html, _ = server.request("/runs/long/rows/2")  # math: a session result
        shown = turns_of(html)
        assert status == 200 and len(shown) == MAX_SHOWN and max(shown) == 9_999  # the end of the conversation
        assert f"{10_000 - MAX_SHOWN} turns hidden before" in html and "?expand=" in html
        assert len(html) < 200_000
        _, wider, _ = server.request("/runs/long/rows/2?expand=100")
        assert len(turns_of(wider)) == MAX_SHOWN + 100 and f"{10_000 - MAX_SHOWN - 100} turns hidden before" in wider
        _, most, _ = server.request("/runs/long/rows/2?expand=1000000000")
        assert len(turns_of(most)) == MAX_SHOWN + MAX_EXPAND
        assert server.request("/runs/long/rows/2?expand=lots")[0] == 400
        _, q, _ = server.request("/api/runs/long/queue?judge=conversation_completeness&order=uncertain&pos=2")
        assert (
            len(q["item"]["transcript"]["turns"]) == MAX_SHOWN and q["item"]["transcript"]["hidden_before"] == 10_000 - MAX_SHOWN
        )
    finally:
        server.stop()


def test_labels_export_carries_the_conversation_id_and_turn_index(turn_run, tmp_path):
    server = ViewServer(str(turn_run))
    try:
        hdr = {"X-CSRF-Token": server.csrf()}
        body = {"row_index": 4, "judge": "conversation_completeness", "value": "no", "labeller": "ann", "sample": "uncertain"}
        assert server.request("/api/runs/turns/labels", "POST", body, hdr)[0] == 200
    finally:
        server.stop()
    res = CliRunner().invoke(main, ["labels", "export", str(turn_run), "-o", str(tmp_path / "l.jsonl")])
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(x) for x in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert (row["conversation_id"], row["turn_index"], row["label"]) == ("math", 1, "no") and "tool_call_index" not in row
