"""Nested fragments in the browser: a section that is a fragment of its own, first drawn by a rerun of the page's.

`ui.layout.page_fragment` nests: the worked example's "explain the output" and the real-model page's close-up
are fragments inside the page's. When such a section first appears during a rerun of the page's fragment (the
lecturer steps "Reveal up to" back and forward, or a new sentence moves the close-up), it has no place
reserved in the sidebar, outside its body. AppTest only runs whole scripts, so these paths are driven here.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from devtools.browser import SHARE_LINK, app_console_errors, exceptions
from tests.helpers.browser_pages import open_watched, run_and_settle


def click_and_settle(page, name: str) -> None:
    run_and_settle(page, page.get_by_role("button", name=name, exact=True).click)


def assert_clean_and_linked(page, what: str) -> None:
    assert exceptions(page) == [], f"after {what}"
    assert app_console_errors(page) == [], f"after {what}"
    link = page.locator(SHARE_LINK).inner_text().strip()
    assert parse_qs(urlparse(link).query) == parse_qs(urlparse(page.url).query), f"share link behind after {what}"


def pick_token(page, token: str) -> None:
    def pick() -> None:
        page.locator('[data-testid="stRadio"]').filter(has_text="Explain the output of token").get_by_text(
            token, exact=True).click()
        page.wait_for_function("(t) => location.search.includes('token=' + t)", arg=token)
    run_and_settle(page, pick)


def test_stepping_back_and_forward_to_the_output_and_explaining_a_token(page, app_url):
    open_watched(page, app_url, "")
    click_and_settle(page, "Previous")
    assert_clean_and_linked(page, "Previous")
    click_and_settle(page, "Next")
    assert_clean_and_linked(page, "Previous then Next")
    pick_token(page, "cat")
    assert_clean_and_linked(page, "picking a token")
    assert "text{cat}" in page.content()


def test_revealing_the_output_step_by_step_from_the_first_stage(page, app_url):
    open_watched(page, app_url, "", "reveal=X")
    for step in range(5):
        click_and_settle(page, "Next")
        assert_clean_and_linked(page, f"Next #{step + 1}")
    pick_token(page, "sat")
    assert_clean_and_linked(page, "picking a token")
    assert "text{sat}" in page.content()


def test_a_new_sentence_on_the_real_model_page_then_a_head_step(page, app_url):
    open_watched(page, app_url, "pretrained")
    box = page.get_by_role("textbox", name="Your text")
    box.fill("Good morning, everyone.")  # no repeated or split word: one habit fewer, so the close-up moves up

    def enter() -> None:
        box.press("Enter")
        page.wait_for_function("() => location.search.includes('morning')")
    run_and_settle(page, enter)
    assert_clean_and_linked(page, "a new sentence")
    layer = page.locator('[data-testid="stSlider"]').filter(has_text="Layer").locator('input[type="range"]')
    layer.focus()

    def step() -> None:
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => location.search.includes('layer=2')")
    run_and_settle(page, step)
    assert_clean_and_linked(page, "a layer step")
    assert "layer 2 head 1" in page.content()  # the close-up's cross-check



def press_left(page, label: str) -> None:
    """One ArrowLeft on the slider labelled `label`, as a student steps it with the keyboard; wait for the run."""
    page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").focus()
    run_and_settle(page, lambda: page.keyboard.press("ArrowLeft"))


def test_a_shorter_sentence_after_a_generation_step_keeps_the_step_in_range(page, app_url):
    """The generation step's maximum follows "Tokens T", so each T gives Streamlit a new step slider, and
    Streamlit keeps the last one's value under the key. From T = 6 down to 4, then the step from 4 to 3, then T to
    3: Streamlit used to restore the kept 4, above the new maximum, and showed an exception box for the section."""
    open_watched(page, app_url, "masked_attention")
    for what in ("Tokens T", "Tokens T", "Generation step s", "Tokens T"):
        press_left(page, what)
        assert_clean_and_linked(page, f"a step of {what}")
    assert parse_qs(urlparse(page.url).query)["seq_len"] == ["3"]
    step = page.locator('[data-testid="stSlider"]').filter(has_text="Generation step s").get_by_role("slider")
    assert (step.input_value(), step.get_attribute("max")) == ("3", "3")
