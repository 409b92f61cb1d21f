"""`devtools.browser.settle`, which every browser test and the benchmark rely on, waits for the whole run."""

from __future__ import annotations

from devtools.appserver import AppServer
from devtools.browser import PAGE_TEXT_JS, settle


def test_settle_waits_for_a_run_that_pauses_after_its_title(browser):
    with AppServer("tests/browser/apps/slow_first_run.py") as server:
        page = browser.new_page()
        page.goto(server.url)
        settle(page)
        assert "All drawn." in page.evaluate(PAGE_TEXT_JS)
        page.close()
