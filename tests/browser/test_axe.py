"""axe-core's WCAG 2.1 A and AA rules on every page (issue #35): desktop and phone, normal and presenter mode, a quiz
before and after its reveal, and the exercise's report.

axe comes with the PyPI package `axe-playwright-python` (pinned in requirements-dev.txt): nothing is fetched at
test time. Target: no violation of any impact on any element, so any violation fails; nothing is excluded. Each
is printed (``-s`` shows them).
"""

from __future__ import annotations

import inspect

import pytest

from devtools.appserver import router_pages
from devtools.browser import VIEWS, exceptions, scroll_boxes, settle
from tests.helpers.browser_context import fresh_page
from tests.helpers.browser_pages import open_watched, run_and_settle

PAGES = router_pages()
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def audit(page) -> list[dict]:
    """axe's violations on the page as it is, every element included (Streamlit's own page list, which axe found
    to be a broken list, is hidden and the sidebar draws the pages itself: `ui.navigation`)."""
    from axe_playwright_python.sync_playwright import Axe

    scroll_boxes(page)  # the scroll boxes (`ui.accessibility`) are made focusable and named a frame after they change
    return Axe().run(page, options={"runOnly": {"type": "tag", "values": AXE_TAGS},
                                    "resultTypes": ["violations"]}).response["violations"]


def report(where: str, violations: list[dict]) -> list[str]:
    """One line per violation, "impact rule ×nodes: help (first target)", printed and returned."""
    lines = [f"{v['impact']} {v['id']} x{len(v['nodes'])}: {v['help']} ({v['nodes'][0]['target']})"
             for v in violations]
    for line in lines:
        print(f"axe {where}: {line}")
    return lines


@pytest.fixture(params=list(VIEWS))
def view(request, shared_context, app_url):
    with fresh_page(shared_context(**VIEWS[request.param]), app_url) as pg:
        pg.view_name = request.param
        yield pg


@pytest.mark.shared_load(screen="view", screens=VIEWS, keeps=True)  # axe reads the page, changing nothing in it
@pytest.mark.parametrize("query", ["", "present=true"], ids=["normal", "presenter"])
@pytest.mark.parametrize("rp", PAGES, ids=[p.name for p in PAGES])
@pytest.mark.parametrize("view", list(VIEWS))
def test_every_page_has_no_axe_violation(audited_page, rp, query, view):
    assert exceptions(audited_page) == []
    assert report(f"{rp.name} {view} {query or 'normal'}", audit(audited_page)) == []


def test_a_revealed_quiz_has_no_axe_violation(view, app_url):
    """After the reveal the choice is locked (a disabled radio group), and its question and options stay readable
    (`ui.accessibility`: Streamlit draws a disabled widget's text at 2.6:1)."""
    view.goto(f"{app_url}/")
    settle(view)
    quiz = view.locator('[data-testid="stRadio"]').filter(has_text="which token does")
    quiz.locator('[data-testid="stRadioOption"]').first.click()
    settle(view)
    # this quiz's (on a phone Streamlit also keeps a hidden copy of a button with help, in its tooltip target)
    view.locator('[data-testid="stMain"] button:not([disabled]):visible', has_text="Reveal").first.click()
    view.get_by_role("button", name="Try another answer").first.wait_for()
    settle(view)
    assert report(f"quiz revealed {view.view_name}", audit(view)) == []


def test_the_numbers_tables_have_no_axe_violation(view, app_url):
    """The "Show the numbers" tables (`ui.numbers_tables`), wider than a phone: each scrolls in its own
    box a keyboard reaches."""
    open_watched(view, app_url, "masked_attention")
    expanders = view.get_by_text("Show the numbers")  # one per fragment: the matrices, then the step's bars
    for k in range(expanders.count()):  # opening one sends its tables in a run: audited once every run has ended
        run_and_settle(view, expanders.nth(k).click)
    view.locator('[data-testid="stTable"]').first.wait_for()
    assert report(f"numbers tables {view.view_name}", audit(view)) == []


def test_the_exercise_report_has_no_axe_violation(view, app_url):
    import core.exercise_solution as solution

    view.goto(f"{app_url}/exercise")
    settle(view)
    code = view.locator(".st-key-exercise_code textarea")
    code.fill(inspect.getsource(solution))
    code.blur()
    view.get_by_role("button", name="Check my code").click()
    view.get_by_text("All 6 checks pass").wait_for(timeout=60_000)
    settle(view)
    assert report(f"exercise report {view.view_name}", audit(view)) == []


def test_the_audit_sees_a_violation_the_app_would_own(page, app_url):
    """The audit is live: text made too light on the page is reported (else a green run would prove nothing)."""
    page.goto(f"{app_url}/multi_head")
    settle(page)
    page.evaluate("""() => document.querySelectorAll('[data-testid="stMain"] p')
                                   .forEach((p) => { p.style.color = '#bbbbbb'; })""")
    assert any("color-contrast" in line for line in report("planted", audit(page)))
