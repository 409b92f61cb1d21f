"""Every page with the keyboard only (issue #35): the arrow keys set every slider and radio group, and Tab with
Enter or Space reveals a quiz and checks the exercise.

Not yet here: a Tab walk over every page asserting a visible focus and no trap. Its first run found focus shown
only by a border colour on text inputs (which the walk did not count) and the focus staying on a chart canvas
on the cost page; both are open in docs/accessibility.md."""

from __future__ import annotations

import pytest

from devtools.appserver import router_pages
from devtools.browser import exceptions, settle

PAGES = router_pages()
MAX_TABS = 400

@pytest.mark.parametrize("rp", PAGES, ids=[p.name for p in PAGES])
def test_the_arrow_keys_set_every_slider_and_radio_group(page, app_url, rp):
    page.goto(f"{app_url}/{rp.url_path}")
    settle(page)
    sliders = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]')
    for k in range(sliders.count()):
        thumb = sliders.nth(k)
        before = thumb.get_attribute("aria-valuetext")
        thumb.focus()
        page.keyboard.press("ArrowLeft" if thumb.input_value() == thumb.get_attribute("max") else "ArrowRight")
        settle(page)
        assert sliders.nth(k).get_attribute("aria-valuetext") != before, f"{rp.title}: slider {k} did not move"
    groups = page.locator('[data-testid="stMain"] [role="radiogroup"]')
    for k in range(groups.count()):
        checked = groups.nth(k).locator('input[type="radio"]:checked')
        if checked.count() == 0:  # a quiz before its answer: Space picks the first option
            groups.nth(k).locator('input[type="radio"]').first.focus()
            page.keyboard.press("Space")
        else:
            before = checked.get_attribute("value")
            checked.focus()
            page.keyboard.press("ArrowDown")
            settle(page)
            assert groups.nth(k).locator('input[type="radio"]:checked').get_attribute("value") != before, (
                f"{rp.title}: radio group {k} did not change")
        settle(page)
    assert exceptions(page) == []


def press_on(page, name: str, key: str) -> None:
    """Tab forward to the button called `name` and press `key` on it."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if page.evaluate("(n) => document.activeElement?.innerText?.trim().endsWith(n)", name):
            page.keyboard.press(key)
            return
    raise AssertionError(f"Tab never reached the button {name!r}")


def test_a_quiz_is_answered_and_revealed_with_the_keyboard(page, app_url):
    page.goto(f"{app_url}/")
    settle(page)
    quiz = page.locator('[data-testid="stRadio"]').filter(has_text="which token does")
    quiz.locator('input[type="radio"]').first.focus()
    page.keyboard.press("Space")
    settle(page)
    press_on(page, "Reveal", "Enter")
    page.get_by_role("button", name="Try another answer").first.wait_for()


def test_the_exercise_is_checked_with_the_keyboard(page, app_url):
    page.goto(f"{app_url}/exercise")
    settle(page)
    page.locator(".st-key-exercise_code textarea").focus()
    press_on(page, "Check my code", "Space")
    page.get_by_text("checks passed").first.wait_for(timeout=60_000)  # the skeleton's report
