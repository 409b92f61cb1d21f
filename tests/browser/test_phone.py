"""Every page on a phone (issue #35): a 390x844 touch screen and a 320-px one, in Chromium.

The page never scrolls sideways: Streamlit scrolls its main area itself, so that is what is measured. A chart,
formula or table wider than the screen scrolls inside its own box (`ui.accessibility.scroll_boxes`), which a
keyboard can reach and a screen reader can name. Tap targets are at least 24 px; chart text drawn as SVG is at
least 11 px (text on a canvas is checked in the specs sent, `tests/ui/test_display.py`).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from devtools.appserver import router_pages
from devtools.browser import SHARE_LINK, VIEWS, after_frames, exceptions, scroll_boxes, settle
from tests.helpers.browser_context import fresh_page

PAGES = router_pages()
#: The 390-px phone is the axe audit's (`VIEWS`): the two audits of a page on it share one load (`audited_page`).
PHONES = {"390": VIEWS["phone"], "320": {**VIEWS["phone"], "viewport": {"width": 320, "height": 640}}}
#: JavaScript: how many px the main area is wider than the screen (what a student would scroll sideways).
OVERFLOW_JS = """() => { const m = document.querySelector('[data-testid="stMain"]');
  return m.scrollWidth - m.clientWidth; }"""

#: JavaScript: the visible controls of the main area smaller than 24x24 px (WCAG 2.5.8), as "kind text WxH".
#: A slider is tapped anywhere on its track, so the track is measured, not its thumb.
SMALL_TARGETS_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const targets = main.querySelectorAll(
    'button, [data-baseweb="slider"], [data-baseweb="select"], [data-baseweb="radio"], '
    + '[data-baseweb="checkbox"], input:not([type="range"]):not([type="radio"]):not([type="checkbox"]), '
    + 'textarea, summary, [tabindex="0"]:not(input)');
  const small = [];
  for (const el of targets) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    if (r.width < 24 || r.height < 24)
      small.push(`${el.tagName.toLowerCase()} "${(el.innerText || el.getAttribute('aria-label') || '').slice(0, 30)}"`
                 + ` ${Math.round(r.width)}x${Math.round(r.height)}`);
  }
  return small;
}"""

#: JavaScript: the font sizes (px) of chart text drawn as SVG that are below 11 px.
SVG_TEXT_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] .vega-embed svg text'))
  .map((t) => parseFloat(getComputedStyle(t).fontSize)).filter((px) => px < 11)"""


@pytest.fixture(params=list(PHONES), ids=[f"{w}px" for w in PHONES])
def phone(request, shared_context, app_url):
    with fresh_page(shared_context(**PHONES[request.param]), app_url) as pg:
        pg.phone_width = PHONES[request.param]["viewport"]["width"]
        yield pg


def open_on(page, app_url: str, url_path: str, query: str = "") -> None:
    page.goto(f"{app_url}/{url_path}" + (f"?{query}" if query else ""))
    settle(page)
    after_frames(page)  # the scroll boxes are marked on the next animation frame


@pytest.mark.shared_load(screen="phone", screens=PHONES, keeps=True)  # it only reads the page
@pytest.mark.parametrize("query", ["", "present=true"], ids=["normal", "presenter"])
@pytest.mark.parametrize("rp", PAGES, ids=[p.name for p in PAGES])
@pytest.mark.parametrize("phone", list(PHONES), ids=[f"{w}px" for w in PHONES])
def test_every_page_fits_a_phone_and_what_is_wider_scrolls_in_a_named_box_a_keyboard_reaches(audited_page, rp, query,
                                                                                              phone):
    phone_width, phone = PHONES[phone]["viewport"]["width"], audited_page
    after_frames(phone)  # the scroll boxes are marked on the next animation frame
    assert exceptions(phone) == []
    assert phone.evaluate(OVERFLOW_JS) <= 0, f"{rp.title}: the page scrolls sideways on a {phone_width}-px phone"
    boxes = scroll_boxes(phone)
    assert all(focusable and name for focusable, name in boxes), f"{rp.title}: a scroll box without tabindex/name"
    assert phone.evaluate(SMALL_TARGETS_JS) == [], f"{rp.title}: tap targets under 24 px"
    assert phone.evaluate(SVG_TEXT_JS) == [], f"{rp.title}: chart text under 11 px"


def test_a_chart_resized_with_no_element_added_is_marked_again(phone, app_url):
    """A box can turn wider than the screen, or fit again, with no element added (Vega resizing its canvas, a
    formula's fonts arriving late): it is made focusable when it scrolls and plain when it fits."""
    open_on(phone, app_url, "soft_lookup")
    box = phone.query_selector('[data-testid="stMain"] [data-testid="stVegaLiteChart"][data-a11y-scroll]')
    assert box is not None, "no chart scrolls on a phone: the check below would prove nothing"
    drawing = box.query_selector("canvas, svg")
    drawing.evaluate("d => { d.dataset.width = d.style.width; d.style.width = '100px'; }")
    phone.wait_for_function("b => !b.hasAttribute('data-a11y-scroll') && !b.hasAttribute('tabindex')", arg=box,
                            timeout=3_000)
    drawing.evaluate("d => { d.style.width = d.dataset.width; }")
    phone.wait_for_function("b => b.hasAttribute('data-a11y-scroll') && b.getAttribute('tabindex') === '0'", arg=box,
                            timeout=3_000)


def test_a_wide_chart_scrolls_by_keyboard_inside_its_box(phone, app_url):
    """The multi-head page's Q, K, V chart is wider than a phone: focused, the arrow keys scroll it, not the page."""
    open_on(phone, app_url, "multi_head")
    box = phone.locator('[data-testid="stMain"] [data-testid="stVegaLiteChart"][tabindex="0"]').first
    assert box.count() == 1, "no chart scrolls inside its own box: the check below would prove nothing"
    box.focus()
    for _ in range(5):
        phone.keyboard.press("ArrowRight")
    # the browser scrolls smoothly: the box moves over the next frames, not by the time the last key is up
    phone.wait_for_function("b => b.scrollLeft > 0", arg=box.element_handle(), timeout=3_000)
    assert phone.evaluate(OVERFLOW_JS) <= 0


def test_on_a_phone_the_controls_are_on_the_page_and_link_presenter_mode_and_export_work(phone, app_url):
    """A student reaches every control without opening the sidebar (only presenter mode lives there); the
    sidebar opens on a phone with the share link; presenter mode fits; the export menu opens on the screen."""
    open_on(phone, app_url, "multi_head", "seed=3")
    sidebar_widgets = phone.locator('[data-testid="stSidebar"] [data-testid="stWidgetLabel"]').all_inner_texts()
    assert [t.strip() for t in sidebar_widgets] == ["Presenter mode"]
    assert phone.locator('[data-testid="stMain"] [data-testid="stSlider"]').count() >= 4
    phone.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"] button').first.tap()
    link = phone.locator(SHARE_LINK)
    link.wait_for(state="visible")
    assert "seed=3" in link.inner_text()
    phone.locator('[data-testid="stSidebarCollapseButton"] button').tap()  # it covers the page on a phone
    phone.locator('[data-testid="stSidebar"][aria-expanded="false"], [data-testid="stSidebar"][data-collapsed="true"]'
                  ).wait_for(state="attached")
    open_on(phone, app_url, "multi_head", "seed=3&present=true")
    assert phone.evaluate(OVERFLOW_JS) <= 0
    export = phone.get_by_role("button", name="Export charts and matrices")
    choice = phone.locator('[data-testid="stPopoverBody"] [data-testid="stSelectbox"]')
    for _ in range(3):  # on a loaded machine a tap can land while the page still moves: tap again, as a user would
        export.scroll_into_view_if_needed()
        export.tap()
        try:
            choice.wait_for(state="visible", timeout=5_000)
            break
        except PlaywrightTimeoutError:
            continue
    assert choice.is_visible(), "the export menu did not open after three taps"
    box = choice.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= phone.phone_width + 1, "the export menu is off the screen"
    assert phone.locator('[data-testid="stPopoverBody"] [data-testid="stDownloadButton"]').count() == 1


def test_after_a_short_run_the_training_pages_numbers_open_on_a_phone(phone, app_url):
    """The training page's results are a fragment of their own: on a phone, a short run's "Show the numbers" opens
    in that fragment's rerun, with the curves and every head's map as tables, and the page still fits."""
    open_on(phone, app_url, "training", "steps=50")
    phone.get_by_role("button", name="Train", exact=True).tap()
    phone.wait_for_selector('[data-testid="stMain"] .vega-embed', timeout=120_000)
    settle(phone)
    summary = phone.locator('[data-testid="stMain"] summary', has_text="Show the numbers").first
    summary.scroll_into_view_if_needed()
    summary.tap()
    phone.wait_for_selector('[data-testid="stMain"] [data-testid="stTable"]', timeout=30_000)
    settle(phone)
    after_frames(phone)  # the scroll boxes are marked on the next animation frame
    headings = phone.locator('[data-testid="stMain"] [data-testid="stExpanderDetails"] strong').all_inner_texts()
    assert any("layer 1 · head 1" in h for h in headings) and any("layer 1 · head 2" in h for h in headings), headings
    assert phone.locator('[data-testid="stMain"] [data-testid="stTable"]').count() >= 4  # 2 curves' tables, 2 maps
    assert exceptions(phone) == []
    assert phone.evaluate(OVERFLOW_JS) <= 0, f"the training page scrolls sideways on a {phone.phone_width}-px phone"
    assert all(focusable and name for focusable, name in scroll_boxes(phone))
