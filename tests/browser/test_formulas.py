"""A formula KaTeX cannot draw is found: the check every page's load and random walk make (`tests/browser/
test_browser.py`, `tests.helpers.interactions.assert_clean`) sees both kinds of error KaTeX draws in red."""

from __future__ import annotations

from devtools.appserver import AppServer
from devtools.browser import katex_errors, settle


def test_a_parse_error_and_an_undefined_command_are_found_and_good_formulas_are_not(browser):
    with AppServer("tests/browser/apps/formulas.py") as server:
        page = browser.new_page()
        page.goto(server.url)
        settle(page)
        page.wait_for_selector(".katex-error", timeout=15_000)
        found = katex_errors(page)
        drawn = page.locator(".katex").count()
        page.close()
    assert len(found) == 2, found
    assert found[0].startswith("ParseError: KaTeX parse error: ") and found[0].endswith(r": \frac{QK^\top}{")
    assert found[1] == r"undefined command \softmx: \softmx(QK^\top)"
    assert drawn == 3  # the two good ones and the one with an undefined command; a parse error draws no formula
