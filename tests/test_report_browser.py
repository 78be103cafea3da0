"""The report in a real browser: headless Chromium (Debian's `chromium` package) driven over the
DevTools protocol on a pipe (--remote-debugging-pipe; no extra Python packages).

Checked: the page loads with no console errors, no uncaught exceptions and no network request
other than the file itself; the charts are there; filters (from the URL hash and from the
controls) and sorting work; text from the run never runs as script. One test does this for a real
small run on the default model.

CI set-up: `apt-get install -y chromium` (Debian/Ubuntu; run as root or with sudo).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from localjudge import evaluate
from localjudge.judges import get_judge
from localjudge.judges.pairwise import BothOrders
from localjudge.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed; install it with "
    "`apt-get install -y chromium` (Debian) to run the browser checks of the report",
)
pytestmark = [pytest.mark.system, pytestmark]


class Browser:
    """Headless Chromium and one page, spoken to with CDP messages over fds 3 (in) and 4 (out)."""

    def __init__(self, user_data_dir: Path):
        r_cmd, w_cmd = os.pipe()
        r_out, w_out = os.pipe()
        # move the child's ends above 10 so dup2 onto 3 and 4 cannot clobber them
        child_in, child_out = fcntl.fcntl(r_cmd, fcntl.F_DUPFD_CLOEXEC, 10), fcntl.fcntl(w_out, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(r_cmd)
        os.close(w_out)

        def wire() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={user_data_dir}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            [CHROMIUM, *flags], close_fds=False, preexec_fn=wire, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        os.close(child_in)
        os.close(child_out)
        self.w, self.r = w_cmd, r_out
        self.buf, self.next_id, self.events = b"", 0, []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.page(f"{domain}.enable")

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def page(self, method: str, params: dict | None = None) -> dict:
        return self.send(method, params, session=self.session)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            if select.select([self.r], [], [], left)[0]:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def open(self, url: str) -> None:
        """Load `url` as a new document (via about:blank, so a hash-only change reloads too)."""
        for target in ("about:blank", url):
            self.events.clear()
            self.page("Page.navigate", {"url": target})
            deadline = time.time() + 30
            while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
                self.events.append(self._read(deadline))
        self.js("1")  # flush events queued during load

    def js(self, expression: str) -> Any:
        res = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in res:
            raise AssertionError(f"script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors/warnings, uncaught exceptions, error log entries, failed loads."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: {[a.get('value') for a in p.get('args', [])]}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')} {p['exceptionDetails'].get('exception', {})}")
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']}")
            elif m == "Network.loadingFailed":
                out.append(f"load failed: {p.get('errorText')}")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


VISIBLE = "document.querySelectorAll('#row-table tbody tr:not([hidden])').length"


def check_loads_cleanly(browser: Browser, path: Path, n_judges: int) -> None:
    browser.open(path.as_uri())
    assert browser.problems() == []
    assert browser.requests() == [path.as_uri()], "the report must not fetch anything"
    assert browser.js("document.body.dataset.ready") == "yes"
    charts = browser.js("[...document.querySelectorAll('svg.chart')].map(s => s.getAttribute('class'))")
    assert charts.count("chart pass-rate") == 1 and charts.count("chart distribution") == n_judges
    assert browser.js("document.querySelectorAll('svg.chart rect.bar').length") >= n_judges
    box = browser.js(
        "(() => { const r = document.querySelector('svg.chart.distribution').getBoundingClientRect();"
        " return [r.width, r.height]; })()"
    )
    assert box[0] > 200 and box[1] > 40, "charts are laid out with a real size"


# ------------------------------------------------------------------------------ a scripted run


@pytest.fixture(scope="module")
def scripted_report(tmp_path_factory):
    from test_report import make_runs

    from localjudge.labels.agreement import agreements_for_run
    from localjudge.report import load_run

    d = tmp_path_factory.mktemp("browser-runs")
    runs = make_runs(d)
    run = load_run(runs["current"])
    reports, _ = agreements_for_run(run, runs["data"], "label")
    return build_report(run, d / "report.html", compare=runs["base"], agreements=reports)


def test_report_loads_in_chromium_without_errors_and_shows_its_charts(browser, scripted_report):
    check_loads_cleanly(browser, scripted_report, n_judges=3)
    assert browser.js("document.querySelectorAll('svg.chart.outcome').length") == 1
    assert browser.js("!!document.getElementById('compare') && !!document.getElementById('agreement')")
    assert browser.js(VISIBLE) == 18


def test_text_from_the_run_never_runs_as_script(browser, scripted_report):
    browser.open(scripted_report.as_uri())
    assert browser.js("window.__xss === undefined")
    assert browser.js("document.body.textContent.includes('window.__xss=1')")


def test_filters_from_the_url_hash_apply_on_load(browser, scripted_report):
    browser.open(scripted_report.as_uri() + "#judge=relevance_to_query&status=fail")
    assert browser.js(VISIBLE) == 2
    assert browser.js("document.getElementById('row-count').textContent") == "2 of 18 rows"
    judges = browser.js("[...document.querySelectorAll('#row-table tbody tr:not([hidden])')].map(r => r.dataset.judge)")
    assert set(judges) == {"relevance_to_query"}
    browser.open(scripted_report.as_uri() + "#q=" + "Question%203%3F")
    assert browser.js(VISIBLE) == 3  # row q3 under each of the three judges
    browser.open(scripted_report.as_uri() + "#verdict=unscored")
    assert browser.js(VISIBLE) == 1
    assert browser.problems() == []


def test_filter_controls_and_sorting_work_and_update_the_hash(browser, scripted_report):
    browser.open(scripted_report.as_uri())
    browser.js(
        "(() => { const s = document.getElementById('f-judge'); s.value = 'coherence'; s.dispatchEvent(new Event('change')); })()"
    )
    assert browser.js(VISIBLE) == 6
    assert browser.js("location.hash") == "#judge=coherence"
    browser.js(
        "(() => { const q = document.getElementById('f-q'); q.value = 'WRONG ANSWER'; q.dispatchEvent(new Event('input')); })()"
    )
    assert browser.js(VISIBLE) == 1
    browser.js("(() => { const q = document.getElementById('f-q'); q.value = ''; q.dispatchEvent(new Event('input')); })()")
    browser.js("document.querySelectorAll('#row-table thead th')[3].click()")  # score, ascending
    asc = browser.js(
        "[...document.querySelectorAll('#row-table tbody tr:not([hidden]) td:nth-child(4)')].map(td => parseFloat(td.dataset.v))"
    )
    assert asc == sorted(asc) and len(asc) == 6 and asc[0] < asc[-1]
    browser.js("document.querySelectorAll('#row-table thead th')[3].click()")  # descending
    desc = browser.js(
        "[...document.querySelectorAll('#row-table tbody tr:not([hidden]) td:nth-child(4)')].map(td => parseFloat(td.dataset.v))"
    )
    assert desc == sorted(asc, reverse=True)
    assert browser.problems() == []


def test_a_think_block_is_collapsed_until_opened_and_never_runs_as_script(browser, tmp_path):
    from test_report import POLITE, XSS

    from localjudge.engine.base import ScriptedEngine
    from localjudge.judges.registry import judge_from_dict

    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "x", "reply": "hi"}) + "\n")
    answer = "<think>\nweigh " + XSS + '\n</think>\n{"rationale": "fine", "result": "yes"}'
    evaluate(data, [judge_from_dict(POLITE)], engine=ScriptedEngine([answer]), out=tmp_path / "run")
    browser.open(build_report(tmp_path / "run", tmp_path / "report.html").as_uri())
    shown = "(() => { const p = document.querySelector('details.think pre'); return p.closest('details').open && p.checkVisibility(); })()"
    assert browser.js("document.querySelectorAll('details.think').length") == 1 and browser.js(shown) is False
    browser.js("document.querySelector('details.think summary').click()")
    assert browser.js(shown) is True and browser.js("window.__xss === undefined")
    assert browser.js("document.querySelector('details.think pre').textContent") == "weigh " + XSS
    assert browser.problems() == []


# ------------------------------------------------------------------------------ a real small run


@pytest.mark.slow
def test_report_of_a_real_small_run_on_the_default_model_works_in_chromium(browser, engine, tmp_path):
    rows = [
        {
            "id": "paris",
            "question": "What is the capital of France?",
            "answer": "Paris is the capital of France.",
            "context": "France's capital is Paris.",
            "answer_1": "Paris.",
            "answer_2": "Berlin.",
        },
        {
            "id": "water",
            "question": "At what temperature does water boil at sea level?",
            "answer": "About 100 °C.",
            "context": "Water boils at 100 °C at sea level.",
            "answer_1": "50 °C.",
            "answer_2": "100 °C.",
        },
        {
            "id": "sky",
            "question": "Why is the sky blue?",
            "answer": "Because of Rayleigh scattering of sunlight.",
            "context": "Shorter wavelengths scatter more in air.",
            "answer_1": "Rayleigh scattering.",
            "answer_2": "It reflects the ocean.",
        },
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    # short rationales keep this test to ~9 judgements of a few seconds each
    run = evaluate(
        data,
        ["relevance_to_query", BothOrders(get_judge("pairwise"))],
        engine=engine,
        out=tmp_path / "run",
        options={"field_tokens": 24},
    )
    assert run.counts.evaluated == 6 and run.counts.failed == 0
    out = build_report(tmp_path / "run", tmp_path / "report.html")
    check_loads_cleanly(browser, out, n_judges=2)
    assert browser.js(VISIBLE) == 6
    assert "position consistency" in browser.js("document.getElementById('pairwise').textContent")
    browser.open(out.as_uri() + "#judge=pairwise")
    assert browser.js(VISIBLE) == 3
    raw = browser.js("[...document.querySelectorAll('#row-table tbody tr:not([hidden]) pre')].map(p => p.textContent)")
    assert all("[forward]" in t and "[swapped]" in t and "better_response" in t for t in raw)
    assert browser.problems() == []
