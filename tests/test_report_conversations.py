"""The HTML report on conversation runs: each result shows the conversation it judged as a transcript (roles, tool
calls with their arguments, tool results, the judged turn marked, texts escaped, long conversations cut with the
hidden turns counted), and the per-conversation aggregate is in its table (also for a run directory that did not
record it)."""

from __future__ import annotations

import html
import json
import re

import localjudge
from localjudge.engine.base import ScriptedEngine
from localjudge.report import build_report
from localjudge.report.transcripts import MAX_SHOWN


def _yes_for_turns(no: set[str]):
    """A scripted engine: `no` for a prompt whose last assistant text is in `no`, else `yes`."""

    def answer(messages, fmt):
        conv = json.loads(messages[-1].content.removeprefix("conversation: "))
        last = [m["content"] for m in conv if m["role"] == "assistant" and m["content"]][-1]
        return json.dumps({"rationale": f"judged {last}", "result": "no" if last in no else "yes"})

    return ScriptedEngine(answer)


TOOLS = {
    "id": "tools",
    "messages": [
        {"role": "user", "content": "Weather in <script>alert(1)</script> Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": "sunny, 21C"},
        {"role": "assistant", "content": "Sunny & 21C."},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You're welcome."},
    ],
}


def _long(n_units: int) -> dict:
    msgs = []
    for i in range(n_units):
        msgs += [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]
    return {"id": "long", "messages": msgs}


def _row_cells(html: str) -> list[str]:
    body = html.split('id="row-table"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr data-judge.*?</tr>", body, flags=re.S)


def test_a_per_turn_run_report_shows_each_results_transcript_with_tool_calls_and_the_judged_turn(tmp_path):
    run_dir = tmp_path / "r"
    localjudge.evaluate(
        [TOOLS], ["conversation_completeness"], engine=_yes_for_turns({"You're welcome."}), out=run_dir, conversation="turn"
    )
    html = build_report(run_dir, tmp_path / "r.html").read_text(encoding="utf-8")
    rows = _row_cells(html)
    assert len(rows) == 2
    first, second = rows
    # roles, the tool call with its arguments, the tool's result
    assert 'class="tag role-user"' in first and 'class="tag role-assistant"' in first and 'class="tag role-tool"' in first
    assert '<code class="tool-name">get_weather</code>' in first and "{&#34;city&#34;: &#34;Paris&#34;}" in first
    assert "sunny, 21C" in first
    # the first turn's transcript marks turns 0-3 as judged; the second's marks 4-5 and not the earlier ones
    assert re.findall(r'class="turn[^"]*judged" data-turn="(\d+)"', first) == ["0", "1", "2", "3"]
    assert re.findall(r'class="turn[^"]*judged" data-turn="(\d+)"', second) == ["4", "5"]
    # the user's text is shown escaped, never as a script
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in first
    assert "Sunny &amp; 21C." in first
    # each row's transcript box is summed up in one line: the last turns its judge saw (the default window holds all
    # six), roles and first words, the earlier ones counted, escaped
    assert re.findall(r"<summary>transcript: (.*?)</summary>", second) == [
        "(+2 earlier turns) | tool: sunny, 21C | assistant: Sunny &amp; 21C. | user: Thanks. | assistant: You&#39;re welcome."
    ]
    assert "<summary>transcript: user: Weather in &lt;script&gt;" in first and "→ get_weather(" in first


def test_a_long_conversations_transcript_is_cut_with_the_hidden_turns_counted(tmp_path):
    run_dir = tmp_path / "r"
    localjudge.evaluate([_long(20)], ["conversation_completeness"], engine=_yes_for_turns(set()), out=run_dir)
    html = build_report(run_dir, tmp_path / "r.html").read_text(encoding="utf-8")
    (row,) = _row_cells(html)
    shown = re.findall(r'data-turn="(\d+)"', row)
    assert len(shown) == MAX_SHOWN and shown[-1] == "39"  # a session shows its last turns, where its outcome is
    assert f"{40 - MAX_SHOWN} turns hidden before" in row
    assert "question 0<" not in row and "answer 19<" in row


def test_the_per_conversation_aggregate_is_in_the_report_also_when_run_json_lacks_it(tmp_path):
    run_dir = tmp_path / "r"
    localjudge.evaluate(
        [TOOLS, _long(3)],
        ["conversation_completeness"],
        engine=_yes_for_turns({"You're welcome.", "answer 1"}),
        out=run_dir,
        conversation="turn",
    )
    meta = json.loads((run_dir / "run.json").read_text())
    meta.pop("conversations", None)  # a run directory written before runs recorded the aggregate
    (run_dir / "run.json").write_text(json.dumps(meta))
    html = build_report(run_dir, tmp_path / "r.html").read_text(encoding="utf-8")
    section = html.split('id="conversations"', 1)[1].split("</section>", 1)[0]
    assert "<td>tools</td><td>2 / 2</td><td>0.500</td><td>0.000</td><td>50.0%</td>" in section
    assert "<td>long</td><td>3 / 3</td><td>0.667</td><td>0.000</td><td>66.7%</td>" in section


def test_a_run_directory_without_its_store_reports_without_transcripts(tmp_path):
    run_dir = tmp_path / "r"
    localjudge.evaluate([TOOLS], ["conversation_completeness"], engine=_yes_for_turns(set()), out=run_dir, conversation="turn")
    for f in run_dir.glob("results.sqlite*"):
        f.unlink()
    html = build_report(run_dir, tmp_path / "r.html").read_text(encoding="utf-8")
    assert len(_row_cells(html)) == 2 and 'class="transcript"' not in html


def test_the_report_and_view_render_a_turn_with_the_same_markup():
    """One renderer for a turn (conversations/transcript_html.py): the report's and view's transcripts of the same
    judged turn differ only in their container and escaping, so each turn div is equal once unescaped."""
    from localjudge.conversations.readers import from_messages
    from localjudge.conversations.transcript import build
    from localjudge.datasets import Position
    from localjudge.report.transcripts import transcript_html as report_html
    from localjudge.view.transcript import transcript_html as view_html

    messages = [m if m["role"] != "user" else {**m, "content": "Weather in Paris?"} for m in TOOLS["messages"]]
    t = build(from_messages(messages, id="tools"), Position("tools", 1, None, 0), {})
    pages = (str(report_html(t)), view_html(t, "/r"))
    turns = [html.unescape(h[h.index('<div class="turn') : h.rindex("</")]) for h in pages]  # to the container's end
    assert turns[0].count('" data-turn="') == len(t.turns) >= 4 and turns[0] == turns[1]
    assert '<span class="tag judged-mark">judged</span>' in turns[1] and '<pre class="turn-text"></pre>' not in turns[1]


def test_a_conversation_rows_disagreement_with_its_label_shows_a_transcript_preview_not_escaped_json(tmp_path):
    from localjudge.labels.agreement import agree
    from localjudge.report import load_run

    run_dir = tmp_path / "r"
    localjudge.evaluate(
        [TOOLS], ["conversation_completeness"], engine=_yes_for_turns({"You're welcome."}), out=run_dir, conversation="turn"
    )
    run = load_run(run_dir)
    labels = [{"id": r.row_id, "label": "no" if r.result.passed else "yes"} for r in run.rows]  # every row disagrees
    report = agree(run.rows, labels, "label", key="id")
    assert report.n_disagreements == 2
    html = build_report(run_dir, tmp_path / "r.html", agreements=[report]).read_text(encoding="utf-8")
    table = html.split('class="rows sortable disagree"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<td class="text">(?:(?!</td>).)*</td></tr>', table, flags=re.S)
    assert len(cells) == 2 and all("<b>transcript</b>: " in c for c in cells)
    assert "user: Weather in &lt;script&gt;" in cells[0] and "→ get_weather(" in cells[0]
    assert "&#34;role&#34;" not in table and '\\"role\\"' not in table  # no conversation as JSON text inside the cell
