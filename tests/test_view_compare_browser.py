"""The compare page of two stored runs with labels, opened in real Chromium: the PPI++ difference new − base and its
95 % interval read off the page are the ones /api/compare (and `report --compare`) give."""

from __future__ import annotations

from test_view_browser import console_errors, driver, leave, wait  # noqa: F401  (driver is a fixture)
from test_view_browser import pytestmark as browser_mark
from test_view_compare_trust import two_labelled_runs

pytestmark = browser_mark  # Chromium: the system tier, skipped where it is missing


def test_the_compare_page_shows_the_ppi_difference_and_its_interval_for_two_labelled_runs(driver, tmp_path):  # noqa: F811
    server, got = two_labelled_runs(tmp_path, range(40), range(40))
    try:
        driver.get(server.url + "/compare?a=base&b=new")
        ppi = wait(driver, lambda d: d.find_element("id", "d-0-ppi")).text
        labels = driver.find_element("id", "d-0-labels").text
        reason = driver.find_element("id", "d-1-reason").text
        assert not console_errors(driver)
        leave(driver)
    finally:
        server.stop()
    want = got["judges"][0]["ppi"]
    lo, hi = (x * 100 for x in want["interval"])
    assert ppi == f"{want['estimate'] * 100:+.1f} pt [{lo:+.1f}, {hi:+.1f}]"
    assert lo < want["estimate"] * 100 < hi
    lo_only = got["judges"][0]["labels_only"]
    assert labels.startswith(f"{lo_only['estimate'] * 100:+.1f} pt [")
    assert reason == "the judge is not in the base run"
