"""`localjudge view` in a real Chromium driven by selenium through Debian's chromedriver.

Checked: labelling 10 rows with the keyboard alone, persisted across a reload and exported; `agree` gives the
same kappa from the export, from the run directory and in the browser panel; a run in progress gains rows
without a reload; hostile text renders as text on every page; no page logs a console error. One test does
the acceptance path on the quick-start run with the real default model.

CI set-up: `apt-get install -y chromium chromium-driver` (scripts/test.sh does it when run as root).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from view_support import HOSTILE, ViewServer, add_rows, make_panel_run, make_run

from localjudge.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="chromium and chromedriver are not installed; `apt-get install -y chromium chromium-driver` (Debian)",
)
pytestmark = [pytest.mark.system, pytestmark]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DOC = Path(__file__).resolve().parents[1] / "docs" / "view.md"


def quickstart_command() -> list[str]:
    """The `localjudge run ... --out runs/quickstart` line of docs/view.md, as arguments."""
    import shlex

    line = next(x for x in DOC.read_text(encoding="utf-8").splitlines() if x.startswith("localjudge run "))
    return shlex.split(line)[1:]


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    """One headless Chromium for the module (fresh profile), its console log readable."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=Service(DRIVER))
    d.set_page_load_timeout(30)
    yield d
    d.quit()


def console_errors(driver) -> list[str]:
    """SEVERE entries of the browser log since the last call (CSP violations and uncaught errors land here)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def leave(driver) -> None:
    """Leave the app (its pages poll) before its server stops, and drop what the log holds."""
    driver.get("about:blank")
    driver.get_log("browser")


def wait(driver, cond, timeout: float = 20):
    """`cond` until truthy; an element replaced by the page's live refresh (stale) or not there yet is retried."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (StaleElementReferenceException, NoSuchElementException)
    return WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=ignored).until(cond)


def act(driver, do) -> None:
    """Run `do(driver)` (a click, a select), retried while the live refresh replaces the element under it."""
    wait(driver, lambda d: do(d) or True)


def press(driver, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def text_of(driver, element_id: str) -> str:
    return driver.find_element("id", element_id).text


def label_with_keys(driver, keys: list[str]) -> None:
    """Give one label per key on the labelling page, waiting for each to be saved and the next row shown."""
    for k in keys:
        before = text_of(driver, "l-pos")
        press(driver, k)
        wait(driver, lambda d, b=before: text_of(d, "l-pos") != b and text_of(d, "l-pos") != "")


def set_labeller(driver, name: str) -> None:
    from selenium.webdriver.common.keys import Keys

    press(driver, "l")
    wait(driver, lambda d: d.switch_to.active_element.get_attribute("id") == "labeller")
    press(driver, Keys.END, *[Keys.BACKSPACE] * 40, name, Keys.ENTER)


def test_ten_rows_labelled_with_the_keyboard_persist_export_and_give_the_same_kappa_everywhere(driver, tmp_path, monkeypatch):
    run = make_run(tmp_path / "r", 30)
    server = ViewServer(str(run))
    try:
        driver.get(server.url + "/runs/r/label")
        wait(driver, lambda d: "of 30" in text_of(d, "l-pos"))
        assert "uncertain first" in text_of(driver, "active-order")
        set_labeller(driver, "ann")
        label_with_keys(driver, list("yynynyyny"))
        press(driver, "o")  # the random order: its labels are kept apart in the statistics
        wait(driver, lambda d: "random sample" in text_of(d, "active-order"))
        label_with_keys(driver, ["n", "y"])
        press(driver, "u")  # undo the last one: 10 labels remain
        wait(driver, lambda d: text_of(d, "c-saved") == "undone")
        driver.refresh()
        wait(driver, lambda d: "10 labelled" in text_of(d, "l-pos"))
        status, st, _ = server.request("/api/runs/r/status")
        assert status == 200 and st["labels"] == 10
        _, agreement, _ = server.request("/api/runs/r/agreement?judge=polite")
        assert agreement["by_sample"] == {"uncertain": 9, "random": 1}
        press(driver, "y", "n", "y", "n", "y")  # typed faster than the saves: each key still labels its own row
        wait(driver, lambda d: "15 labelled" in text_of(d, "l-pos"))
        assert server.request("/api/runs/r/status")[1]["labels"] == 15
        press(driver, "u", "u", "u", "u", "u")  # and five undos take them back
        wait(driver, lambda d: "10 labelled" in text_of(d, "l-pos"))
        kappa = agreement["all"]["cohen_kappa"]

        driver.get(server.url + "/runs/r/agreement")
        wait(driver, lambda d: d.find_elements("css selector", "tr[data-part=all][data-stat=kappa]"))
        shown = wait(driver, lambda d: d.find_element("css selector", "tr[data-part=all][data-stat=kappa] td").text)
        assert shown.startswith(f"{kappa:.3f} [")
        assert len(driver.find_elements("css selector", "#a-disagree tbody tr")) == agreement["all"]["n_disagreements"]
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()

    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    res = cli.invoke(main, ["labels", "export", str(run), "-o", "labels.jsonl"])
    assert res.exit_code == 0, res.output
    assert len((tmp_path / "labels.jsonl").read_text().splitlines()) == 10
    from_file = cli.invoke(main, ["agree", str(run), "--labels", "labels.jsonl", "--label-column", "label", "-o", "a1.json"])
    from_dir = cli.invoke(main, ["agree", str(run), "--labels", str(run), "-o", "a2.json"])
    assert from_file.exit_code == 0 and from_dir.exit_code == 0, from_file.output + from_dir.output
    k1 = json.loads((tmp_path / "a1.json").read_text())
    k2 = json.loads((tmp_path / "a2.json").read_text())
    assert k1["cohen_kappa"] == k2["cohen_kappa"] == kappa and k1["n_used"] == k2["n_used"] == 10
    assert k1["cohen_kappa_ci"] == k2["cohen_kappa_ci"] is not None
    assert re.search(r"Cohen's kappa\s+-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]", from_dir.output)


def test_a_run_in_progress_gains_rows_in_the_open_page_without_a_reload(driver, tmp_path):
    run = make_run(tmp_path / "live", 5, status="running", planned=20)
    server = ViewServer(str(run))
    try:
        driver.get(server.url + "/runs/live")
        wait(driver, lambda d: text_of(d, "row-count") == "5 results")
        assert text_of(driver, "status") == "running"
        marker = driver.execute_script("window.__same_page = 1; return 1")
        add_rows(run, 5, 12)
        wait(driver, lambda d: text_of(d, "row-count") == "12 results")
        assert driver.execute_script("return window.__same_page") == marker  # no reload happened
        wait(driver, lambda d: text_of(d, "cells") == "12 / 20 results")
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()


def test_hostile_rows_render_as_text_on_every_page(driver, tmp_path):
    run = make_run(tmp_path / "evil", 6, hostile=HOSTILE * 2)
    server = ViewServer(str(run))
    try:
        tok = server.csrf()
        for i in range(3):  # labels that disagree with the judge: hostile rationales in the agreement panel
            _, verdict, _ = server.request(f"/api/runs/evil/row/{i}")
            judged = verdict["results"][0]["result"]["value"]
            body = {
                "row_index": i,
                "judge": "polite",
                "value": "no" if judged == "yes" else "yes",
                "labeller": "x",
                "sample": "random",
            }
            assert server.request("/api/runs/evil/labels", "POST", body, {"X-CSRF-Token": tok})[0] == 200
        pages = [
            "/",
            "/runs/evil",
            "/runs/evil/rows/0",
            "/runs/evil/rows/1",
            "/runs/evil/rows/2",
            "/runs/evil/label",
            "/runs/evil/agreement",
        ]
        for page in pages:
            driver.get(server.url + page)
            if page == "/runs/evil":
                wait(driver, lambda d: text_of(d, "row-count") == "6 results")
            if page.endswith("/agreement"):
                wait(driver, lambda d: len(d.find_elements("css selector", "#a-disagree tbody tr")) == 3)
            if page.endswith("/label"):
                wait(driver, lambda d: "of 6" in text_of(d, "l-pos"))
            body = driver.find_element("tag name", "body").text
            assert driver.execute_script("return window.__pwned") is None, page
            assert not driver.find_elements("css selector", "main img, main script, main a[href^='javascript']"), page
            if page != "/":
                assert any(h in body for h in HOSTILE), page  # shown, as text
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()


def test_quickstart_run_on_the_default_model_labelled_in_the_browser_agrees_in_cli_and_panel(
    driver, engine, tmp_path, monkeypatch
):
    """The acceptance path: the quick-start run (10 rows x 2 judges, real model, expected scores), all 20 cells
    labelled with the keyboard alone, then `localjudge agree runs/quickstart --labels runs/quickstart`: the same
    kappa and interval in the CLI and in the browser panel."""
    from selenium.webdriver.support.ui import Select

    monkeypatch.chdir(tmp_path)
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    n_rows = len((EXAMPLES / "rag_sample.jsonl").read_text().splitlines())
    assert n_rows == 10  # 20 cells: the acceptance asks for 20 labels
    command = quickstart_command()  # docs/view.md's first command, run as the user would
    res = CliRunner().invoke(main, command)
    assert res.exit_code == 0, res.output
    server = ViewServer("--runs-root", str(tmp_path / "runs"))
    panel: dict[str, str] = {}
    try:
        driver.get(server.url + "/")
        wait(driver, lambda d: "quickstart" in d.find_element("id", "runs").text)
        act(driver, lambda d: d.find_element("link text", "quickstart").click())
        wait(driver, lambda d: text_of(d, "row-count") == "20 results")
        driver.get(server.url + "/runs/quickstart/label")
        wait(driver, lambda d: "of 10" in text_of(d, "l-pos"))
        set_labeller(driver, "new user")

        for judge, keys in (("groundedness", "ynynyynnyn"), ("correctness", "yynnyynyny")):
            if judge == "correctness":
                press(driver, "g")  # the next judge, from the keyboard
            wait(driver, lambda d, j=judge: Select(d.find_element("id", "l-judge")).first_selected_option.text == j)
            wait(driver, lambda d: "0 labelled" in text_of(d, "l-pos"))
            label_with_keys(driver, list(keys[:-1]))
            press(driver, keys[-1])
            wait(driver, lambda d: "10 labelled" in text_of(d, "l-pos"))
        assert server.request("/api/runs/quickstart/status")[1]["labels"] == 20
        for judge in ("groundedness", "correctness"):
            driver.get(server.url + "/runs/quickstart/agreement")
            act(driver, lambda d, j=judge: Select(d.find_element("id", "a-judge")).select_by_value(j))
            wait(driver, lambda d: "10 labels" in text_of(d, "a-counts"))
            panel[judge] = wait(driver, lambda d: d.find_element("css selector", "tr[data-part=all][data-stat=kappa] td").text)
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()
    res = CliRunner().invoke(main, ["agree", "runs/quickstart", "--labels", "runs/quickstart"])
    assert res.exit_code == 0, res.output
    for judge in ("groundedness", "correctness"):
        rep = json.loads((tmp_path / f"agreement-{judge}.json").read_text())
        assert rep["n_used"] + rep["n_unscored"] == 10
        if rep["cohen_kappa"] is None:
            assert panel[judge].startswith("n/a"), (judge, panel[judge])
            continue
        lo, hi = rep["cohen_kappa_ci"]
        shown = f"{rep['cohen_kappa']:.3f} [{lo:.3f}, {hi:.3f}]"
        assert panel[judge] == shown, (judge, panel[judge], shown)  # the same kappa and interval as the CLI
        assert shown in res.output
    assert "Cohen's kappa" in res.output


def test_a_panel_is_labelled_as_one_judge_in_the_browser_and_each_member_is_scored(driver, tmp_path):
    """A scripted panel of three: the labelling card shows the members' verdicts, the keyboard labels the panel's
    judge, and the agreement page lists each member against the same labels (the API's figures)."""
    make_panel_run(tmp_path / "pan", 12)
    server = ViewServer(str(tmp_path / "pan"))
    try:
        driver.get(server.url + "/runs/pan/label")
        wait(driver, lambda d: "of 12" in text_of(d, "l-pos"))
        assert [o.text for o in driver.find_elements("css selector", "#l-judge option")] == ["relevance_to_query"]
        assert "m0:" in text_of(driver, "c-members") and "m2:" in text_of(driver, "c-members")
        set_labeller(driver, "ann")
        label_with_keys(driver, list("yynyn"))
        wait(driver, lambda d: "5 labelled" in text_of(d, "l-pos"))
        _, a, _ = server.request("/api/runs/pan/agreement?judge=relevance_to_query")
        driver.get(server.url + "/runs/pan/agreement")
        wait(driver, lambda d: len(d.find_elements("css selector", "#a-members tr[data-member]")) == 3)
        for m in ("m0", "m1", "m2"):
            acc = a["members"][m]["accuracy"]
            cell = driver.find_element("css selector", f"#a-members tr[data-member={m}] td.accuracy").text
            assert cell.startswith(f"{acc:.3f} ["), (m, cell, acc)
        driver.get(server.url + "/runs/pan")
        wait(driver, lambda d: text_of(d, "row-count") == "12 results")
        members = driver.find_elements("css selector", "#row-table td.members")
        assert len(members) == 12 and all("m1:" in td.text for td in members)
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()


def test_screenshots_of_runs_row_labelling_agreement_and_a_panel_are_small_pngs(driver, tmp_path):
    """The five screenshots of docs/view.md (the fifth a panel run's page); `LJ_VIEW_SCREENSHOTS=docs/img pytest -k screenshots` refreshes them."""
    import os

    out = Path(os.environ.get("LJ_VIEW_SCREENSHOTS") or tmp_path)
    runs = tmp_path / "runs"
    run = make_run(runs / "quickstart", 40, judges=("groundedness", "correctness"))
    make_run(runs / "nightly", 40, judges=("groundedness",), status="running", planned=100)
    make_panel_run(runs / "panel", 30)
    server = ViewServer("--runs-root", str(runs))
    try:
        tok = {"X-CSRF-Token": server.csrf()}
        for i in range(16):
            _, row, _ = server.request(f"/api/runs/quickstart/row/{i}")
            judged = row["results"][0]["result"]["value"]
            value = judged if i % 4 else ("no" if judged == "yes" else "yes")
            body = {
                "row_index": i,
                "judge": "correctness",
                "value": value,
                "labeller": "ann",
                "sample": "random" if i % 2 else "uncertain",
            }
            server.request("/api/runs/quickstart/labels", "POST", body, tok)
        driver.set_window_size(1100, 720)
        shots = {
            "view-runs.png": ("/", lambda d: "quickstart" in text_of(d, "runs")),
            "view-row.png": ("/runs/quickstart/rows/3", lambda d: "Inputs" in d.find_element("tag name", "main").text),
            "view-label.png": ("/runs/quickstart/label", lambda d: "of 40" in text_of(d, "l-pos")),
            "view-agreement.png": ("/runs/quickstart/agreement?judge=correctness", None),
            "view-panel.png": ("/runs/panel", lambda d: "30 results" in text_of(d, "row-count")),
        }
        for name, (path, ready) in shots.items():
            driver.get(server.url + path)
            if name == "view-agreement.png":
                from selenium.webdriver.support.ui import Select

                act(driver, lambda d: Select(d.find_element("id", "a-judge")).select_by_value("correctness"))
                ready = lambda d: "16 labels" in text_of(d, "a-counts")  # noqa: E731
            wait(driver, ready)
            if name == "view-label.png":
                set_labeller(driver, "ann")
            if name == "view-panel.png":  # the figures and the members' verdicts, with a split row in sight
                assert driver.find_elements("css selector", "#trust-figures tr[data-member=m2]")
                assert driver.find_elements("css selector", "#row-table td.members.disagree")
                driver.execute_script("document.getElementById('trust-figures').scrollIntoView()")
            driver.save_screenshot(str(out / name))
            data = (out / name).read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 150_000, (name, len(data))
        assert console_errors(driver) == []
    finally:
        driver.set_window_size(1280, 900)
        leave(driver)
        server.stop()
    assert run.is_dir()


def test_the_align_button_runs_align_on_the_labels_so_far_and_shows_held_out_figures(driver, tmp_path):
    """Real model (1 thread): 12 labelled rows of a relevance judge, align from the panel's button."""
    from selenium.webdriver.support.ui import Select

    run = make_run(tmp_path / "al", 12, judges=("relevance_to_query",))
    labels = [{"row_index": i, "judge": "relevance_to_query", "label": "yes" if i % 2 else "no"} for i in range(12)]
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    assert CliRunner().invoke(main, ["labels", "import", str(run), str(tmp_path / "l.jsonl"), "--labeller", "ann"]).exit_code == 0
    server = ViewServer(str(run), "--align-model", "smollm2-135m", "--threads", "1")
    try:
        driver.get(server.url + "/runs/al/agreement")
        act(driver, lambda d: Select(d.find_element("id", "a-judge")).select_by_value("relevance_to_query"))
        wait(driver, lambda d: "12 labels" in text_of(d, "a-counts"))
        driver.find_element("id", "align-btn").click()
        wait(driver, lambda d: text_of(d, "align-status") in ("running", "done") or "failed" in text_of(d, "align-status"))
        wait(driver, lambda d: text_of(d, "align-status") != "running", timeout=420)
        report = text_of(driver, "align-report")
        assert text_of(driver, "align-status") == "done", text_of(driver, "align-status")
        assert "held out" in report and "before" in report and "after" in report
        assert (run / "aligned" / "relevance_to_query" / "align_report.json").is_file()
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()


def test_labelling_by_keyboard_shrinks_the_pass_rate_interval_and_says_how_many_more_labels_reach_the_width(driver, tmp_path):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    from localjudge.labels.store import label_rows

    run = make_run(tmp_path / "r", 60)
    server = ViewServer(str(run))
    half = re.compile(r"±(\d+\.\d) points, n=(\d+) labels")
    try:
        driver.get(server.url + "/runs/r/label")
        wait(driver, lambda d: "of 60" in text_of(d, "l-pos"))
        wait(driver, lambda d: "no PPI++ estimate" in text_of(d, "t-ppi"))  # the panel is read after the row
        width = driver.find_element("id", "l-width")
        width.click()
        width.send_keys(Keys.END, *[Keys.BACKSPACE] * 10, "0.15", Keys.TAB)
        set_labeller(driver, "ann")
        press(driver, "o")  # the random order: the sample the PPI++ interval is made from
        wait(driver, lambda d: "random sample" in text_of(d, "active-order"))
        seen: list[tuple[int, float]] = []
        for n in (4, 8, 16):
            label_with_keys(driver, list("yynyynynyyynnyny"[seen[-1][0] if seen else 0 : n]))
            got = wait(driver, lambda d, n=n: (m := half.search(text_of(d, "t-ppi"))) and int(m.group(2)) == n and m)
            seen.append((n, float(got.group(1))))
        assert seen[0][1] > seen[1][1] > seen[2][1]
        assert re.search(r"\d+ more labels to reach ±0\.15 \(PPI\+\+; labels alone: \d+ more\)", text_of(driver, "t-budget"))
        assert "pass rate by labels only" in text_of(driver, "t-lines")

        act(driver, lambda d: Select(d.find_element("id", "l-order")).select_by_value("active"))
        wait(driver, lambda d: "active" in text_of(d, "active-order"))
        press(driver, Keys.ESCAPE)  # leave the order menu: keys label again
        wait(driver, lambda d: d.switch_to.active_element.get_attribute("id") != "l-order")
        _, first, _ = server.request("/api/runs/r/queue?judge=polite&order=active")  # its first unlabelled row
        wait(driver, lambda d: text_of(d, "c-head").startswith(f"row {first['item']['row_index']} "))
        items = [server.request(f"/api/runs/r/queue?judge=polite&order=active&pos={k}")[1]["item"] for k in range(first["n"])]
        gaps = [abs(it["expected_score"] - 0.5) for it in items]
        assert gaps == sorted(gaps)  # the most uncertain drawn row first
        label_with_keys(driver, ["y", "n", "y"])
        active = {r["row_index"]: r["probability"] for r in label_rows(run, "polite") if r["sample"] == "active"}
        probs = {it["row_index"]: it["probability"] for it in items}
        assert len(active) == 3 and all(active[r] == probs[r] for r in active)
        wait(driver, lambda d: "pass rate by active labels (Horvitz–Thompson)" in text_of(d, "t-lines"))
        assert console_errors(driver) == []
    finally:
        leave(driver)
        server.stop()
