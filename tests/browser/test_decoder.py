"""The decoder page in Chromium, on a desktop and a 390-px phone: train, then write word by word.

Its writing controls live in the page's fragment, so a click reruns the fragment alone: the text, the URL and
the bars must follow each click there, as they do in AppTest's full reruns.
"""

from __future__ import annotations

import re

import pytest

from devtools.browser import exceptions, settle

LINK = "decoder?steps=100&prompt=the+cat&temp=0&top_p=0.9"
#: JavaScript: how many px the main area is wider than the screen.
OVERFLOW_JS = """() => { const m = document.querySelector('[data-testid="stMain"]');
  return m.scrollWidth - m.clientWidth; }"""


def text_line(page) -> str:
    return page.locator('[data-testid="stMain"] p', has_text=re.compile(r"^Text: ")).first.inner_text()


def click_and_wait(page, button, old: str) -> str:
    button.click()
    page.wait_for_function("""(old) => { const p = Array.from(document.querySelectorAll('[data-testid="stMain"] p'))
      .find((e) => e.innerText.startsWith('Text: ')); return p && p.innerText !== old; }""", arg=old,
                           timeout=120_000)
    settle(page)
    return text_line(page)


def trained(page, app_url: str) -> None:
    page.goto(f"{app_url}/{LINK}")
    settle(page)
    train = page.get_by_role("button", name=re.compile("^Train"))
    if train.inner_text().strip().endswith("Train"):
        train.click()
    page.get_by_role("button", name=re.compile("Next word")).wait_for(timeout=120_000)
    settle(page)


def test_a_class_writes_word_by_word_on_a_desktop_and_a_phone(view, app_url, screenshot_dir):
    trained(view, app_url)
    assert not exceptions(view)
    assert view.evaluate(OVERFLOW_JS) <= 1
    assert text_line(view) == "Text: the cat …"
    assert "temp=0&top_p=0.9" in view.url  # the link's values stay in it, to be shared again
    one = click_and_wait(view, view.get_by_role("button", name=re.compile("Next word")), text_line(view))
    assert len(one.removeprefix("Text: ").split()) == 4 and "words=1" in view.url  # "the cat X …"
    done = click_and_wait(view, view.get_by_role("button", name=re.compile("Write to the end")), one)
    assert done.endswith("the end") and done.startswith(one.removesuffix(" …"))
    assert view.locator('[data-testid="stVegaLiteChart"]').count() >= 2  # curves and attention; no bars at the end
    if screenshot_dir is not None:
        view.screenshot(path=str(screenshot_dir / f"decoder-{view.view_name}.png"), full_page=True)
    again = click_and_wait(view, view.get_by_role("button", name=re.compile("Start over")), done)
    assert again == "Text: the cat …" and "words=0" in view.url or "words" not in view.url
    assert not exceptions(view)


def test_next_word_by_keyboard_and_a_temperature_step_rewrites_the_text(page, app_url):
    trained(page, app_url)
    page.get_by_role("button", name=re.compile("Next word")).focus()
    before = text_line(page)
    page.keyboard.press("Enter")
    page.wait_for_function("""(old) => Array.from(document.querySelectorAll('[data-testid="stMain"] p'))
      .some((e) => e.innerText.startsWith('Text: ') && e.innerText !== old)""", arg=before, timeout=120_000)
    settle(page)
    written = text_line(page)
    slider = page.get_by_role("slider", name=re.compile("Temperature"))
    slider.focus()
    page.keyboard.press("End")  # the hottest temperature, 3
    page.wait_for_function("() => location.search.includes('temp=3')", timeout=120_000)
    settle(page)
    hot = text_line(page)
    assert hot.split()[:3] == written.split()[:3]  # the prompt stays
    assert not exceptions(page)
    bars = page.locator('[data-testid="stVegaLiteChart"]')
    assert bars.count() == 3
    assert any(b.get_attribute("aria-label") and "likeliest" in b.get_attribute("aria-label")
               for b in (bars.nth(i) for i in range(bars.count()))) or pytest.fail("the bars have no name")


def test_a_prompt_that_ends_the_sentence_and_a_hand_written_temperature(view, app_url, screenshot_dir):
    """A link with a prompt that already ends the sentence draws every section on both screens; its hand-written
    temperature (``1.50``) is used and stays in the address as the option's own form, ``1.5``."""
    trained(view, app_url)
    view.goto(f"{app_url}/decoder?steps=100&prompt=the+cat+sat+on+the+mat+.&temp=1.50")
    settle(view)
    view.wait_for_function("() => location.search.includes('temp=1.5')", timeout=120_000)
    settle(view)
    assert not exceptions(view)
    assert "temp=1.5&" in view.url + "&" and "temp=1.50" not in view.url
    assert text_line(view) == "Text: the cat sat on the mat . — the end"
    main = view.locator('[data-testid="stMain"]')
    assert main.get_by_text("The prompt already ends the sentence, so nothing was written").count() == 1
    assert view.locator('[data-testid="stVegaLiteChart"]').count() == 2  # the curves and the attention maps
    assert view.evaluate(OVERFLOW_JS) <= 1
    if screenshot_dir is not None:
        view.screenshot(path=str(screenshot_dir / f"decoder-ended-{view.view_name}.png"), full_page=True)


def test_a_student_who_presses_train_while_another_trains_sees_their_place_then_their_run(page, shared_context,
                                                                                         app_url, screenshot_dir):
    """The process trains one run at a time (`ui.work_line`): a phone pressing Train while a desktop trains reads
    its place in line in the progress bar, inside the page's fragment, then its own run's steps, and both finish."""
    from devtools.browser import VIEWS
    from tests.helpers.browser_context import fresh_page

    first = page
    first.goto(f"{app_url}/decoder?steps=1200&seed=83")
    settle(first)
    with fresh_page(shared_context(**VIEWS["phone"]), app_url) as second:
        second.goto(f"{app_url}/decoder?steps=1200&seed=84")
        settle(second)
        first.get_by_role("button", name=re.compile("Train$")).click()
        first.get_by_text(re.compile(r"^step \d+ / 1200")).wait_for(timeout=120_000)
        second.get_by_role("button", name=re.compile("Train$")).click()
        line = second.get_by_text(re.compile(r"^Waiting in line: you are number 1 \(1 training now\)"))
        line.wait_for(timeout=60_000)
        if screenshot_dir is not None:
            second.screenshot(path=str(screenshot_dir / "decoder-waiting-in-line-phone.png"))
        second.get_by_text(re.compile(r"^step \d+ / 1200")).wait_for(timeout=180_000)
        for trained_page in (first, second):
            trained_page.get_by_role("button", name=re.compile("Next word")).wait_for(timeout=180_000)
            assert not exceptions(trained_page)
