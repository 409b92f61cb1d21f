"""Every page with the keyboard only (issue #35): Tab reaches every control, focus is always visible and never
trapped, the arrow keys set every slider and radio, and Enter or Space reveal a quiz and check the exercise."""

from __future__ import annotations

import pytest

from devtools.appserver import router_pages
from devtools.browser import exceptions, settle

PAGES = router_pages()
MAX_TABS = 400

#: JavaScript: the focused element as {key, main, ring, kind, label}; null when nothing is focused. `ring` says
#: whether the focus is visible: an outline or a box shadow on the element or one of its 3 nearest ancestors
#: (Streamlit draws some widgets' focus ring on a wrapper).
FOCUS_JS = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  let e = el, ring = false;
  for (let k = 0; k < 4 && e && !ring; k++, e = e.parentElement) {
    const s = getComputedStyle(e);
    ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
  }
  if (!el.__walkId) el.__walkId = Math.random().toString(36).slice(2);
  return {key: el.__walkId, main: !!el.closest('[data-testid="stMain"]'), ring,
          container: el.matches('main, [data-testid="stMain"], [tabindex="-1"]'),
          kind: el.getAttribute('role') || (el.tagName.toLowerCase() + (el.type ? ':' + el.type : '')),
          label: (el.getAttribute('aria-label') || el.innerText || '').trim().slice(0, 50)};
}"""


def tab_walk(page, key: str = "Tab") -> list[dict]:
    """Press `key` until the focus comes back to where the walk started: every element it stopped on, in order."""
    stops: list[dict] = []
    for _ in range(MAX_TABS):
        page.keyboard.press(key)
        now = page.evaluate(FOCUS_JS)
        if now is None:
            continue
        if stops and now["key"] == stops[0]["key"]:
            return stops
        assert not stops or now["key"] != stops[-1]["key"], f"focus is trapped on {now['kind']} {now['label']!r}"
        stops.append(now)
    raise AssertionError(f"the focus did not come back round in {MAX_TABS} presses: trapped in a loop")


@pytest.mark.parametrize("rp", PAGES, ids=[p.name for p in PAGES])
def test_tab_reaches_every_control_with_a_visible_focus_and_comes_back_round(page, app_url, rp):
    page.goto(f"{app_url}/{rp.url_path}")
    settle(page)
    forward = tab_walk(page)
    in_main = [s for s in forward if s["main"] and not s["container"]]
    assert in_main, f"{rp.title}: Tab never reached the page"
    hidden = [f"{s['kind']} {s['label']!r}" for s in in_main if not s["ring"]]
    assert not hidden, f"{rp.title}: focus not visible on {hidden}"
    sliders = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]').count()
    assert sum(s["kind"] == "input:range" for s in in_main) == sliders, f"{rp.title}: a slider Tab cannot reach"
    back = tab_walk(page, "Shift+Tab")
    assert {s["key"] for s in back} == {s["key"] for s in forward}, f"{rp.title}: Shift+Tab walks another way"


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
