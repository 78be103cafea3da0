"""`localjudge view` on conversation runs in a real Chromium (the fixtures of test_view_browser.py): the label card
shows the chat transcript with its tool calls, a turn (per-turn run) and a session (session-level run) are labelled by
keyboard with the same keys as any row, and `agree` reports the labels of each granularity."""

from __future__ import annotations

import json

from click.testing import CliRunner
from test_view_browser import console_errors, driver, label_with_keys, leave, press, pytestmark, set_labeller, text_of, wait
from view_conversations_support import make_conversation_run
from view_support import ViewServer

from localjudge.cli import main

__all__ = ["driver", "pytestmark"]  # the module's Chromium and its skip when Chromium is missing


def _label_run(drv, run, rid: str, keys: list[str]) -> None:
    server = ViewServer(str(run))
    try:
        drv.get(f"{server.url}/runs/{rid}/label")
        wait(drv, lambda d: d.find_elements("css selector", "#c-transcript .turn"))
        turns = drv.find_elements("css selector", "#c-transcript .turn")
        assert turns and all(t.find_element("css selector", ".tag").text in {"user", "assistant", "tool"} for t in turns)
        assert drv.find_elements("css selector", "#c-transcript .turn.judged")
        set_labeller(drv, "ann")
        label_with_keys(drv, keys)
        wait(drv, lambda d: f"{len(keys)} labelled" in text_of(d, "l-pos"))
        assert console_errors(drv) == []
    finally:
        leave(drv)
        server.stop()


def test_the_label_card_shows_the_transcript_with_tool_calls_and_a_hostile_turn_as_text(driver, tmp_path):
    run = tmp_path / "turns"
    make_conversation_run(run, "turn", window=1)
    server = ViewServer(str(run))
    try:
        driver.get(f"{server.url}/runs/turns/label")
        wait(driver, lambda d: d.find_elements("css selector", "#c-transcript .turn"))
        for _ in range(6):  # j: the next item, until one whose transcript has tool calls
            if driver.find_elements("css selector", "#c-transcript .tool-call"):
                break
            before = text_of(driver, "l-pos")
            press(driver, "j")
            wait(driver, lambda d, b=before: text_of(d, "l-pos") != b)
        calls = driver.find_elements("css selector", "#c-transcript .tool-call")
        assert calls and calls[0].find_element("css selector", ".tool-name").text in {"get_weather", "lookup"}
        seen = set()
        for _ in range(6):  # every item of the queue: the hostile conversation's card shows its text as text
            seen.add(driver.find_element("id", "transcript").get_attribute("data-conversation"))
            if "</script><script>window.__pwned=1</script>" in text_of(driver, "c-transcript"):
                break
            before = text_of(driver, "l-pos")
            press(driver, "j")
            wait(driver, lambda d, b=before: text_of(d, "l-pos") != b)
        assert "hostile" in seen | {driver.find_element("id", "transcript").get_attribute("data-conversation")}
        assert '<img src=x onerror="window.__pwned=2">' in text_of(driver, "c-transcript")
        assert driver.execute_script("return window.__pwned === undefined")
        driver.get(f"{server.url}/runs/turns/rows/2")  # the hostile conversation, server-rendered
        wait(driver, lambda d: d.find_elements("css selector", "#transcript .turn"))
        assert driver.execute_script("return window.__pwned === undefined")
        assert "</script><script>window.__pwned=1</script>" in driver.find_element("id", "transcript").text
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()


def test_a_turn_and_a_session_labelled_by_keyboard_reach_agree(driver, tmp_path, monkeypatch):
    turns, sessions = tmp_path / "turns", tmp_path / "sessions"
    make_conversation_run(turns, "turn", window=1)
    make_conversation_run(sessions, "session")
    _label_run(driver, turns, "turns", ["y", "n"])  # two turns
    _label_run(driver, sessions, "sessions", ["n"])  # one session
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    for run, n in ((turns, 2), (sessions, 1)):
        res = cli.invoke(main, ["agree", str(run), "--labels", str(run), "-o", f"{run.name}.json"])
        assert res.exit_code == 0, res.output
        rep = json.loads((tmp_path / f"{run.name}.json").read_text())
        assert rep["n_used"] == n and rep["judge"] == "conversation_completeness"
        granularity = "turn" if run is turns else "session"
        assert rep["granularity"] == granularity and f"granularity: {granularity} (one label per " in res.output
        out = cli.invoke(main, ["labels", "export", str(run), "-o", f"{run.name}.jsonl"])
        assert out.exit_code == 0, out.output
        rows = [json.loads(x) for x in (tmp_path / f"{run.name}.jsonl").read_text().splitlines()]
        assert len(rows) == n and all(r["conversation_id"] in {"weather", "hostile", "math"} for r in rows)
        assert all(("turn_index" in r) == (run is turns) for r in rows)


def test_a_session_labelled_by_keyboard_inside_a_per_turn_run_joins_a_session_run_and_never_the_turns(
    driver, tmp_path, monkeypatch
):
    turns, sessions = tmp_path / "turns", tmp_path / "sessions"
    make_conversation_run(turns, "turn", window=1)
    make_conversation_run(sessions, "session")
    server = ViewServer(str(turns))
    try:
        driver.get(f"{server.url}/runs/turns/label")
        wait(driver, lambda d: d.find_elements("css selector", "#c-transcript .turn"))
        assert "s then a value key labels the" in text_of(driver, "help")
        set_labeller(driver, "ann")
        label_with_keys(driver, ["y"])  # one turn; the card moves to the next turn
        wait(driver, lambda d: d.find_element("id", "c-session").is_displayed())
        conv = text_of(driver, "c-conv")
        assert text_of(driver, "c-slabel") == "—"
        press(driver, "s")
        wait(driver, lambda d: "press a value key" in text_of(d, "c-saved"))
        press(driver, "n")  # the whole conversation of the turn on the card, not the turn
        wait(driver, lambda d: text_of(d, "c-slabel") == "no")
        assert text_of(driver, "c-label") == "—" and "1 labelled" in text_of(driver, "l-pos")
        driver.refresh()  # stored: shown again on the conversation's turns
        wait(driver, lambda d: d.find_element("id", "c-session").is_displayed() and text_of(d, "c-conv") == conv)
        assert text_of(driver, "c-slabel") == "no"
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    out = cli.invoke(main, ["labels", "export", str(turns), "-o", "turns.jsonl"])
    assert out.exit_code == 0, out.output
    rows = [json.loads(x) for x in (tmp_path / "turns.jsonl").read_text().splitlines()]
    session = [r for r in rows if r.get("granularity") == "session"]
    assert len(rows) == 2 and len(session) == 1
    assert session[0]["id"] == session[0]["conversation_id"] == conv and session[0]["turn_index"] is None
    assert session[0]["label"] == "no" and session[0]["labeller"] == "ann"
    res = cli.invoke(main, ["agree", str(sessions), "--labels", "turns.jsonl", "--label-column", "label", "-o", "s.json"])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "s.json").read_text())
    assert rep["n_used"] == 1 and rep["granularity"] == "session"  # the session label, not the turn's
    res = cli.invoke(main, ["agree", str(sessions), "--labels", str(turns), "-o", "d.json"])  # the run directory
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "d.json").read_text())
    assert rep["n_used"] == 1 and rep["granularity"] == "session"
    res = cli.invoke(main, ["agree", str(turns), "--labels", str(turns), "-o", "t.json"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "t.json").read_text())["n_used"] == 1  # the turn label only
