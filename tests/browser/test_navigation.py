"""The sidebar's page list in Chromium (`ui.navigation`): what a screen reader, a keyboard and a phone get of it.

A screen reader finds a landmark "App pages" holding one list per section, named by its heading, with one item
per routed page and the current page's link marked; a keyboard reaches the links in the router's order, then the
sidebar's presenter switch; on a 390-px phone the links are tap targets, and following one opens the page and
closes the sidebar that covered it.
"""

from __future__ import annotations

import re

import pytest

from devtools.appserver import router_pages
from devtools.browser import SHARE_LINK, VIEWS, exceptions, settle

PAGES = router_pages()
SECTIONS = ["The lesson", "Build this", "Beyond the lesson"]
#: JavaScript: the sidebar's open state (Streamlit marks it on the sidebar element).
COLLAPSED_JS = """() => document.querySelector('[data-testid="stSidebar"]').getAttribute('data-collapsed')"""


def open_sidebar(page) -> None:
    """Open the sidebar if it is closed (a phone opens with it closed)."""
    if page.evaluate(COLLAPSED_JS) == "true":
        page.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"] button'
                     ).first.tap()
        page.wait_for_function(f"() => ({COLLAPSED_JS})() === 'false'")


def the_list(page):
    """The page list as a screen reader gets it: the landmark, then per section its list's name and items' text."""
    nav = page.get_by_role("navigation", name="App pages")
    lists = nav.get_by_role("list")
    return nav, [(lists.nth(i).get_attribute("aria-labelledby") and
                  page.locator("#" + lists.nth(i).get_attribute("aria-labelledby")).inner_text(),
                  [t.strip() for t in lists.nth(i).get_by_role("listitem").all_inner_texts()])
                 for i in range(lists.count())]


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
@pytest.mark.parametrize("rp", [PAGES[1], PAGES[3], PAGES[-1]], ids=lambda p: p.name)
def test_the_page_list_is_a_named_list_per_section_with_the_current_page_marked(view, app_url, rp):
    view.goto(f"{app_url}/{rp.url_path}")
    settle(view)
    assert exceptions(view) == []
    assert view.locator('[data-testid="stSidebarNav"]').count() == 0, "Streamlit's own list is drawn too"
    open_sidebar(view)
    nav, sections = the_list(view)
    assert [name for name, _ in sections] == SECTIONS
    items = sum((texts for _, texts in sections), [])
    assert [t.split("\n")[-1] for t in items] == [p.title for p in PAGES]  # each after its icon's name
    current = nav.locator('a[aria-current="page"]')
    assert current.count() == 1 and current.inner_text().endswith(rp.title)
    links = nav.get_by_role("link")
    assert links.count() == len(PAGES)
    for k in range(links.count()):
        box = links.nth(k).bounding_box()
        assert box["height"] >= 24 and box["width"] >= 24, f"{links.nth(k).inner_text()}: {box}"
        assert links.nth(k).locator('[data-testid="stIconMaterial"]').is_visible()


def test_on_a_phone_a_link_opens_its_page_and_closes_the_sidebar(browser, app_url):
    context = browser.new_context(**VIEWS["phone"])
    phone = context.new_page()
    try:
        phone.goto(f"{app_url}/multi_head?seed=3")
        settle(phone)
        open_sidebar(phone)
        assert "seed=3" in phone.locator(SHARE_LINK).inner_text()  # the sidebar's own controls are still there
        assert phone.get_by_role("switch", name="Presenter mode").is_visible()
        nav = phone.get_by_role("navigation", name="App pages")
        landing = nav.get_by_role("link", name="Worked example")
        assert landing.evaluate("a => a.href") == f"{app_url}/"  # opened in a new tab, it leads to the landing page
        nav.get_by_role("link", name="Order and permutation").tap()
        phone.wait_for_url(f"{app_url}/permutation**")
        phone.wait_for_function(f"() => ({COLLAPSED_JS})() === 'true'", timeout=5_000)
        settle(phone)
        assert phone.locator('[data-testid="stMain"] h1').first.inner_text().startswith("Order and permutation")
        open_sidebar(phone)
        assert nav.locator('a[aria-current="page"]').inner_text().endswith("Order and permutation")
        nav.get_by_role("link", name="Worked example").tap()
        phone.wait_for_url(re.compile(re.escape(app_url) + r"/(\?.*)?$"))  # a page switch keeps the query
        phone.wait_for_function(f"() => ({COLLAPSED_JS})() === 'true'", timeout=5_000)
    finally:
        context.close()


def test_on_a_desktop_a_link_leaves_the_sidebar_open(page, app_url):
    """The sidebar sits beside the page there: it stays as it was."""
    page.goto(f"{app_url}/multi_head")
    settle(page)
    page.get_by_role("navigation", name="App pages").get_by_role("link", name="Positional encoding").click()
    page.wait_for_url(f"{app_url}/positional_encoding")
    settle(page)
    assert page.evaluate(COLLAPSED_JS) == "false"


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_the_keyboard_reaches_the_links_in_the_routers_order_then_presenter_mode(page, app_url):
    page.goto(f"{app_url}/soft_lookup")
    settle(page)
    stops = []
    for _ in range(len(PAGES) + 3):  # Streamlit's "Skip to main content" and the sidebar's close button come first
        page.keyboard.press("Tab")
        stops.append(page.evaluate("() => (document.activeElement.getAttribute('aria-label') "
                                   "|| document.activeElement.innerText || '').trim().split('\\n').pop()"))
        if stops[-1] == PAGES[-1].title:
            break
    assert stops[-len(PAGES):] == [p.title for p in PAGES], stops
    page.keyboard.press("Tab")
    assert "Presenter mode" in page.evaluate("() => document.activeElement.closest('label')?.innerText || ''")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")  # on the last page's link
    page.wait_for_url(f"{app_url}/{PAGES[-1].url_path}")


def test_on_a_phone_the_multi_head_pages_trained_head_link_opens_the_real_model_on_that_head(browser, app_url):
    """The multi-head page's link to a head the real model's numbers found (ui.real_model) opens the real-model page
    within the session on that layer and head, and the link left in the address is that view's."""
    from urllib.parse import parse_qs, urlparse

    from ui.real_model import specialised_heads

    head = specialised_heads()[0]
    layer_no, head_no = head.layer + 1, head.head + 1
    context = browser.new_context(**VIEWS["phone"])
    phone = context.new_page()
    try:
        phone.goto(f"{app_url}/multi_head")
        settle(phone)
        phone.get_by_role("link", name=f"Layer {layer_no}, head {head_no} up close").tap()
        phone.wait_for_url(f"{app_url}/pretrained**")
        settle(phone)
        assert exceptions(phone) == []
        query = parse_qs(urlparse(phone.url).query)
        # a value equal to the slider's default (1) is left out of the address, as every bound widget does
        assert (query.get("layer", ["1"]), query.get("head", ["1"])) == ([str(layer_no)], [str(head_no)]), phone.url
        for label, value in (("Layer", layer_no), ("Head", head_no)):
            slider = phone.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider")
            assert slider.first.input_value() == str(value), label
        assert f"layer {layer_no}, head {head_no}" in phone.content()  # the close-up's title
    finally:
        context.close()
