"""What a step reruns, as the browser sees it: a slider's step reruns its page's fragment and not the router, a
widget of one section reruns that section alone, and a new seed redraws the charts in place.

Fragments rerun in the browser in a way AppTest's full reruns do not, so these drive Chromium: they read what a
step sends over the websocket, and what the charts show after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import parse_qs, urlparse

import pytest

from devtools.appserver import router_pages
from devtools.browser import PAGE_TEXT_JS, SHARE_LINK, exceptions, settle
from tests.helpers.browser_pages import SLIDER, main_numbers, open_page, open_watched, run_and_settle

PAGES = router_pages()
NO_SLIDER = {"exercise"}  # the one page without a slider


@pytest.mark.parametrize("rp", [p for p in PAGES if p.name not in NO_SLIDER],
                         ids=[p.name for p in PAGES if p.name not in NO_SLIDER])
def test_a_keyboard_slider_step_changes_a_number_reruns_only_the_page_and_the_link_follows(page, app_url, rp):
    """A keyboard step on the first slider changes a number on the page and reaches the URL.

    The page's widgets live in a fragment (`ui.layout.page_fragment`): a step is answered without the router.

    Only a run of the router sends a `navigation` message (the sidebar's page list). The page load must
    have sent one (else the check proves nothing) and the messages answering the step must not. The
    sidebar's share link is written by the fragment and must match the address bar after the step.
    """
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))

    def navigation_sent() -> bool:
        return any(ForwardMsg.FromString(f).WhichOneof("type") == "navigation" for f in frames if isinstance(f, bytes))

    open_watched(page, app_url, rp.url_path)
    assert navigation_sent(), "the page load sent no navigation: the check below would prove nothing"
    frames.clear()
    sliders = page.locator(SLIDER)
    assert sliders.count() > 0, f"{rp.title}: no slider"
    thumb = sliders.first
    before, numbers = page.url, main_numbers(page)
    at_max = thumb.input_value() == thumb.get_attribute("max")
    thumb.focus()

    def step() -> None:
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        page.wait_for_function("(before) => location.href !== before", arg=before)
    run_and_settle(page, step)
    assert exceptions(page) == []
    assert main_numbers(page) != numbers, f"{rp.title}: moving the first slider changed no number on the page"
    assert frames, "the step was not answered"
    assert not navigation_sent(), f"{rp.title}: a slider step reran the whole app, router included"
    link = page.locator(SHARE_LINK).inner_text().strip()
    assert parse_qs(urlparse(link).query) == parse_qs(urlparse(page.url).query), "the share link is a step behind"


#: Element types of the input widgets (their protos have a ``label``).
WIDGET_KINDS = {"button", "checkbox", "multiselect", "number_input", "radio", "selectbox", "slider", "text_area",
                "text_input"}


def sent_names(frames: list) -> list[str]:
    """Headings and widget labels of the elements sent in the messages `frames`.

    A heading is a heading element's text or a Markdown element's first line that starts with ``#``
    (`ui.layout.section`).
    """
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msgs = [ForwardMsg.FromString(f) for f in frames if isinstance(f, bytes)]
    elements = [m.delta.new_element for m in msgs if m.WhichOneof("type") == "delta"]
    names = []
    for e in elements:
        kind = e.WhichOneof("type")
        if kind == "heading":
            names.append(e.heading.body)
        elif kind == "markdown" and e.markdown.body.startswith("#"):
            names.append(e.markdown.body.splitlines()[0].lstrip("#").strip())
        elif kind in WIDGET_KINDS:
            names.append(getattr(e, kind).label)
    return names


def step_slider(label: str, key: str = "ArrowRight"):
    """Press `key` on the slider labelled `label` (a keyboard step, as a lecturer does)."""
    def act(page) -> None:
        page.locator('[data-testid="stSlider"]').filter(has_text=label).locator('input[type="range"]').focus()
        page.keyboard.press(key)
    return act


def pick_radio(label: str, option: str):
    def act(page) -> None:
        page.locator('[data-testid="stRadio"]').filter(has_text=label).get_by_text(option, exact=True).click()
    return act


def drop_wave_dimension(page) -> None:
    """Remove dimension 0 from the waves drawn (the default draws four, the most allowed)."""
    page.locator('[data-testid="stMultiSelect"]').filter(has_text="Dimensions to draw").get_by_role(
        "button", name="Remove 0", exact=True).click()


def answer_quiz(page) -> None:
    quiz = page.locator('[data-testid="stRadio"]').filter(has_text="which token does")
    quiz.locator('[data-testid="stRadioOption"]').first.click()


def train(page) -> None:
    page.get_by_role("button", name="Train", exact=True).click()
    page.wait_for_selector('[data-testid="stMain"] .vega-embed', timeout=120_000)
    settle(page)


class LocalWidget(NamedTuple):
    """A widget whose section is its own fragment, nested in the page's (`ui.layout.page_fragment`), or a quiz
    (`ui.quiz.predict_then_reveal`): a change of it must not send the page's other sections again."""

    url: str  # page and query
    act: Callable  # changes the widget
    url_key: str | None  # where the change shows in the URL (a quiz answer does not)
    may_send: tuple[str, ...]  # what the change may send again: its section's headings and widget labels (prefixes)
    shows: str  # text on the page (or in its HTML) after the change
    prepare: Callable | None = None  # run after the page load, before the change


LOCAL_WIDGETS = {
    "pretrained-layer": LocalWidget(
        "pretrained", step_slider("Layer"), "layer",
        ("3 · One head up close", "Layer", "Head", "Cross-check: the lesson's function gives the same map"),
        "layer 2 head 1"),
    "masked_attention-step": LocalWidget("masked_attention", step_slider("Generation step s"), "step",
                                         ("Generation step s",), "Step 5:"),
    "positional_encoding-dims": LocalWidget("positional_encoding", drop_wave_dimension, "dims",
                                            ("2 · Waves of different lengths", "Dimensions to draw"),
                                            "Frequencies: ω of dim 1 ="),
    "attention_cost-max_len": LocalWidget("attention_cost", step_slider("Longest sequence T"), "max_len",
                                          ("1 · Measure it", "Longest sequence T", "d_k", "Measure"), "T = 4,096"),
    "attention_cost-arch": LocalWidget("attention_cost", pick_radio("Model", "Llama-2-7B (32 layers × 32 heads)"),
                                       "arch", ("2 · At real context lengths", "Model"), "all 32 layers"),
    "worked_example-token": LocalWidget("", pick_radio("Explain the output of token", "cat"), "token",
                                        ("Explain the output of token",), "text{cat}"),
    "worked_example-quiz": LocalWidget("", answer_quiz, None, ("From the scaled scores alone", "Reveal"), "Reveal"),
    "transformer_block-layers": LocalWidget(
        "transformer_block", step_slider("Blocks stacked", "ArrowLeft"), "layers",
        ("5 · Why the residual, and why the norm", "Blocks stacked", "Residual connections", "Layer norms",
         "23 blocks, post-LN", "Reveal"), "23 blocks, residual on"),
    "training-ckpt": LocalWidget("training?steps=50", step_slider("Checkpoint", "ArrowLeft"), "ckpt",
                                 ("1 · Learning curves", "2 · Attention, checkpoint by checkpoint",
                                  "3 · Try your own input", "Checkpoint (training step)", "Your digits"),
                                 "at step", prepare=train),
}


@pytest.mark.parametrize("case", LOCAL_WIDGETS.values(), ids=LOCAL_WIDGETS.keys())
def test_a_widget_of_one_section_reruns_only_that_section(page, app_url, case):
    """A step of the widget redraws its section and sends no other section again; the share link follows it."""
    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))

    def others_sent() -> list[str]:
        return [name for name in sent_names(frames) if not name.startswith(case.may_send)]

    open_watched(page, app_url, case.url)
    if case.prepare:
        case.prepare(page)
    assert len(others_sent()) >= 3, "the page has too little else: the check would prove nothing"
    frames.clear()
    before = page.url

    def change() -> None:
        case.act(page)
        if case.url_key:
            page.wait_for_function("(before) => location.href !== before", arg=before)
    run_and_settle(page, change)
    assert exceptions(page) == []
    assert frames, "the change was not answered"
    assert others_sent() == [], "the change sent other sections of the page again"
    assert case.shows in page.evaluate(PAGE_TEXT_JS) + page.content()
    if case.url_key:
        assert case.url_key in parse_qs(urlparse(page.url).query)
        link = page.locator(SHARE_LINK).inner_text().strip()
        assert parse_qs(urlparse(link).query) == parse_qs(urlparse(page.url).query), "the share link is behind"


def test_the_whole_blocks_picture_of_the_model_and_its_deep_stack_are_not_sent_again_on_a_step(page, app_url):
    """No control changes the picture of the whole model at the top of the whole-block page, and the block's sliders
    do not change the deep stack: a step of the block's seed sends the block's stages again, and not that picture,
    its heading or its links, nor the stack's section, its controls or its question."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    open_watched(page, app_url, "transformer_block")
    initial = sent_names(frames)
    assert "0 · Where attention lives" in initial
    frames.clear()
    before = page.url
    page.locator(SLIDER).first.focus()

    def step() -> None:
        page.keyboard.press("ArrowRight")
        page.wait_for_function("(before) => location.href !== before", arg=before)
    run_and_settle(page, step)
    assert exceptions(page) == []
    names = sent_names(frames)
    assert "1 · The lesson's three tokens through one block" in names, "the step was not answered"
    assert "0 · Where attention lives" not in names
    assert "5 · Why the residual, and why the norm: a deep stack" in initial
    assert not {"5 · Why the residual, and why the norm: a deep stack", "Blocks stacked", "Reveal"} & set(names)
    kinds = [m.delta.new_element.WhichOneof("type") for m in (ForwardMsg.FromString(f) for f in frames
                                                              if isinstance(f, bytes)) if m.WhichOneof("type") == "delta"]
    assert "page_link" not in kinds, "the links beside the model's picture were sent again"


def test_the_whole_blocks_norm_placement_reaches_both_the_block_and_its_deep_stack(page, app_url):
    """The activation and the norms' placement sit outside the page's two fragments (the block's and the deep
    stack's), so a change of either redraws both: after picking pre-LN the block's first stage is the norm and the
    stack's question is about pre-LN blocks."""
    open_watched(page, app_url, "transformer_block")
    text = page.evaluate(PAGE_TEXT_JS) + page.content()  # the question is a radio's label
    assert "24 blocks, post-LN" in text and "1.1 · Attention" in text
    before = page.url

    def pick() -> None:
        pick_radio("Layer norm", "pre-LN (GPT-2)")(page)
        page.wait_for_function("(before) => location.href !== before", arg=before)
    run_and_settle(page, pick)
    assert exceptions(page) == []
    text = page.evaluate(PAGE_TEXT_JS) + page.content()
    assert "1.1 · Norm" in text, "the block was not redrawn"
    assert "24 blocks, pre-LN" in text and "24 blocks, post-LN" not in text, "the deep stack was not redrawn"


#: Each chart's drawing surface (an SVG, or a canvas for the many-celled charts) and what it shows.
DRAWINGS_JS = """() => Array.from(document.querySelectorAll('[data-testid=stMain] .vega-embed'), e => {
  const d = e.querySelector('canvas, svg');
  return {kept: d.dataset.drawnAt === 'seed 0', shows: d.tagName === 'CANVAS' ? d.toDataURL() : d.textContent};
})"""


@pytest.mark.parametrize("url_path", ["", "multi_head", "masked_attention"])
def test_a_seed_step_redraws_the_charts_in_place(page, app_url, url_path):
    """New numbers reach the charts already drawn (Vega swaps their data) instead of new charts being built."""
    open_page(page, app_url, url_path, "seed=0")
    page.evaluate("() => document.querySelectorAll('[data-testid=stMain] .vega-embed')"
                  ".forEach(e => { e.querySelector('canvas, svg').dataset.drawnAt = 'seed 0'; })")
    before = page.evaluate(DRAWINGS_JS)
    assert before
    page.locator(SLIDER).first.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URLSearchParams(location.search).get('seed') === '1'")
    settle(page)
    assert exceptions(page) == []
    after = page.evaluate(DRAWINGS_JS)
    assert [d["kept"] for d in after] == [True] * len(before), "a chart was rebuilt instead of updated in place"
    assert [d["shows"] for d in after] != [d["shows"] for d in before], "the charts still show seed 0's numbers"
