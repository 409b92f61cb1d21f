"""Every page with the keyboard only (issue #35): Tab reaches every control, each with a focus that can be seen,
and never stops on one; the arrow keys set every slider and radio group; Tab with Enter or Space reveals a quiz
and checks the exercise."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from devtools.appserver import router_pages
from devtools.browser import VIEWS, exceptions, settle
from tests.helpers.browser_pages import open_watched, run_and_settle

PAGES = router_pages()
MAX_TABS = 400

#: The element a focus is drawn on: a switch's or radio option's label (its input is hidden), a data grid (its
#: canvas clips), else the focused element itself.
SHOWN_JS = """(e) => { const r = e.getBoundingClientRect();
  return (r.width < 4 || r.height < 4) ? (e.closest('label') || e.parentElement)
       : (e.closest('[data-testid="stDataFrame"]') || e); }"""
#: Where the keyboard is: a key that tells one stop from another.
FOCUS_JS = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const r = e.getBoundingClientRect();
  const host = e.closest('[data-testid]');
  const label = (e.getAttribute('aria-label') || '').slice(0, 60);
  return {key: [e.tagName, e.id, host && host.getAttribute('data-testid'), label,
                Math.round(r.x), Math.round(r.y + scrollY)].join('|')};
}"""
#: Every control of the page the walk did not reach: buttons, inputs, text areas and sliders, and of each radio
#: group one option (the arrow keys move within a group), that are drawn and enabled. Not those a widget takes out
#: of the order itself (``tabindex="-1"``: a multiselect's remove buttons, which Backspace in its input does), nor
#: those in a closed expander (its content is ``inert`` until it is opened; its summary is a stop).
UNREACHED_JS = """() => {
  const drawn = (e) => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden' && !e.disabled
      && !e.closest('[inert]');
  const controls = [...document.querySelectorAll('[data-testid="stMain"] :is(button, textarea, [role="slider"], '
      + 'input:not([type="radio"])):not([tabindex="-1"])')].filter(drawn);
  const missed = controls.filter(e => !e.hasAttribute('data-tabbed'));
  for (const group of document.querySelectorAll('[data-testid="stMain"] [role="radiogroup"]')) {
    if (!group.querySelector('input[data-tabbed]')) missed.push(group);
  }
  return missed.map(e => e.tagName + ' ' + (e.getAttribute('aria-label') || e.innerText || '').trim().slice(0, 50));
}"""
#: Takes away the marks of the stops the Tab walk reached, and the focus: the page as the walk found it.
UNMARK_JS = """() => { document.querySelectorAll('[data-tabbed]').forEach(e => e.removeAttribute('data-tabbed'));
  document.activeElement?.blur(); }"""
#: Tabs a stop may take before the focus moves on: a data grid (``st.dataframe``, ``st.data_editor``) takes a
#: few to leave its cells; anything more is a trap.
MAX_PRESSES_ON_ONE = 4
#: A focus is seen when at least this many pixels around the element change clearly (by more than 40 of 255).
MIN_CHANGED_PIXELS = 20


def focus_is_seen(page, tries: int = 3) -> bool:
    """Whether the keyboard's focus changes what is drawn: the element (`SHOWN_JS`) focused, then not. Looked at
    again after 0.3 s, up to `tries` times: a focus ring may still be fading in, a caret blinking."""
    for _ in range(tries):
        if _focus_changes_pixels(page):
            return True
        page.wait_for_timeout(300)
    return False


def _focus_changes_pixels(page) -> bool:
    shown = page.evaluate_handle(f"({SHOWN_JS})(document.activeElement)").as_element()
    box = shown.bounding_box() if shown else None
    if not box or box["width"] == 0 or box["height"] == 0:
        return False  # the focus is on something not drawn
    clip = {"x": max(box["x"] - 6, 0), "y": max(box["y"] - 6, 0),
            "width": box["width"] + 12, "height": box["height"] + 12}
    focused = Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("L")
    element = page.evaluate_handle("document.activeElement")
    page.evaluate("document.activeElement.blur()")
    unfocused = Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("L")
    element.as_element().focus()
    changed = ImageChops.difference(focused, unfocused).point(lambda v: 255 if v > 40 else 0)
    return sum(changed.histogram()[255:]) >= MIN_CHANGED_PIXELS


@pytest.mark.shared_load(on=VIEWS["desktop"], keeps=True)  # it only moves the focus, and takes its marks away
@pytest.mark.parametrize("rp", PAGES, ids=[p.name for p in PAGES])
def test_tab_reaches_every_control_with_a_focus_that_is_seen_and_never_stops(audited_page, rp):
    """Tab from the top of the page round to where it started: every button, input, slider and radio option of the
    page is a stop, each stop's focus is drawn (WCAG 2.4.7), the focus moves on (`MAX_PRESSES_ON_ONE`: 2.1.2),
    and Shift+Tab goes back. The marks it leaves on the stops are taken away at the end, pass or fail."""
    try:
        tab_round_the_page(audited_page, rp)
    finally:
        audited_page.evaluate(UNMARK_JS)


def tab_round_the_page(page, rp) -> None:
    stops: list[str] = []
    unseen: list[str] = []
    repeats = 0
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        here = page.evaluate(FOCUS_JS)
        if here is None:
            continue
        if stops and here["key"] == stops[-1]:
            repeats += 1
            assert repeats < MAX_PRESSES_ON_ONE, f"{rp.title}: the focus stays on {here['key']}"
            continue
        repeats = 0
        if here["key"] in stops:
            break  # round the page and back
        stops.append(here["key"])
        page.evaluate("document.activeElement.setAttribute('data-tabbed', '')")
        if not focus_is_seen(page):
            unseen.append(here["key"])
    else:
        raise AssertionError(f"{rp.title}: {MAX_TABS} Tabs never came back round")
    assert not unseen, f"{rp.title}: focus not seen on {unseen}"
    missed = page.evaluate(UNREACHED_JS)
    assert not missed, f"{rp.title}: Tab never reached {missed}"
    page.keyboard.press("Tab")
    before = page.evaluate(FOCUS_JS)["key"]
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUS_JS)["key"] == before, f"{rp.title}: Shift+Tab did not go back"


@pytest.mark.shared_load(on=VIEWS["desktop"])  # it changes the page: it comes after the Tab walk, which keeps it
@pytest.mark.parametrize("rp", PAGES, ids=[p.name for p in PAGES])
def test_the_arrow_keys_set_every_slider_and_radio_group(audited_page, rp):
    """Each key asks for a run, and the next control is pressed once that run has ended (`run_and_settle`): a
    control pressed while the page is being drawn again may lose its focus, and the key with it."""
    page = audited_page
    sliders = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]')
    for k in range(sliders.count()):
        thumb = sliders.nth(k)
        before = thumb.get_attribute("aria-valuetext")
        thumb.focus()
        key = "ArrowLeft" if thumb.input_value() == thumb.get_attribute("max") else "ArrowRight"
        run_and_settle(page, lambda key=key: page.keyboard.press(key))
        assert sliders.nth(k).get_attribute("aria-valuetext") != before, f"{rp.title}: slider {k} did not move"
    groups = page.locator('[data-testid="stMain"] [role="radiogroup"]')
    for k in range(groups.count()):
        checked = groups.nth(k).locator('input[type="radio"]:checked')
        if checked.count() == 0:  # a quiz before its answer: Space picks the first option
            groups.nth(k).locator('input[type="radio"]').first.focus()
            run_and_settle(page, lambda: page.keyboard.press("Space"))
        else:
            before = checked.get_attribute("value")
            checked.focus()
            run_and_settle(page, lambda: page.keyboard.press("ArrowDown"))
            assert groups.nth(k).locator('input[type="radio"]:checked').get_attribute("value") != before, (
                f"{rp.title}: radio group {k} did not change")
    assert exceptions(page) == []


def press_on(page, name: str, key: str) -> None:
    """Tab forward to the button called `name` and press `key` on it."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if page.evaluate("(n) => document.activeElement?.innerText?.trim().endsWith(n)", name):
            page.keyboard.press(key)
            return
    raise AssertionError(f"Tab never reached the button {name!r}")


QUIZ_PAGES = [p for p in PAGES if "predict_then_reveal(" in Path(p.file).read_text()]
#: Where a page asks its quiz only at some settings: the query string that asks it.
QUIZ_SETTINGS = {"positional_encoding": "?positions=64", "decoder": "?steps=100"}
#: Where a page asks its quiz only once a model is trained: the button that trains it at those settings.
TRAIN_FIRST = {"decoder": "Train"}


@pytest.mark.parametrize("rp", QUIZ_PAGES, ids=[p.name for p in QUIZ_PAGES])
def test_every_quiz_is_answered_and_revealed_with_the_keyboard(page, app_url, rp):
    """Each quiz of the page (a radio group with nothing picked yet): Space picks an answer, Tab goes on to its
    Reveal button, Enter reveals the computed answer."""
    open_watched(page, app_url, rp.url_path, QUIZ_SETTINGS.get(rp.name, "").lstrip("?"))
    if rp.name in TRAIN_FIRST and page.get_by_role("button", name=TRAIN_FIRST[rp.name], exact=True).count():
        page.get_by_role("button", name=TRAIN_FIRST[rp.name], exact=True).click()
        page.get_by_role("button", name="Trained", exact=True).wait_for(timeout=180_000)
        settle(page)
    quizzes = page.locator('[data-testid="stMain"] [role="radiogroup"]:not(:has(input:checked))')
    count = quizzes.count()
    assert count, f"{rp.title}: no quiz"
    for k in range(count):
        page.locator('[data-testid="stMain"] [role="radiogroup"]:not(:has(input:checked))').first.locator(
            'input[type="radio"]').first.focus()
        run_and_settle(page, lambda: page.keyboard.press("Space"))  # its run enables Reveal, a stop from then on
        press_on(page, "Reveal", "Enter")
        page.get_by_role("button", name="Try another answer").nth(k).wait_for()
    assert exceptions(page) == []


def test_the_exercise_is_checked_with_the_keyboard(page, app_url):
    page.goto(f"{app_url}/exercise")
    settle(page)
    page.locator(".st-key-exercise_code textarea").focus()
    press_on(page, "Check my code", "Space")
    page.get_by_text("checks passed").first.wait_for(timeout=60_000)  # the skeleton's report
