"""A seeded random walk over a page's widgets, as a restless student makes it (#24); `random_walk` runs one.

Starting on a page that is open: about `STEPS` interactions chosen at random (`random.Random(seed)`, a fixed
seed per page) among the widgets the page shows at that moment, found through Streamlit's `data-testid`s: a
keyboard step on a slider (Home, End, ←, →), a click on a radio option or a toggle, an option picked in a select
box (the Export menu's, which a step opens first) or a multiselect, a click on a safe button (never Train or
Measure, nor a download), text typed into a box and committed (a sentence or numbers, and once an invalid entry,
which the page must answer with an error message, not an exception), a click at a random point of a chart. Every
kind the page offers comes at least once. After each step the walk waits for the run the step asked for (the
browser's `rerun_script` message, the server's `script_finished`, then `settle`) and asserts no exception box and
no new console error. At the end it reloads the page from its URL, as a shared link opens it, and checks again.

A failure names the page, the seed and every step so far (kind, widget, what was done, the URL after it).
Replay it with ``RANDOM_INTERACTIONS_SEED=<seed> python -m pytest tests/browser/test_browser.py -k <page>``;
other numbers explore other sequences, and ``RANDOM_INTERACTIONS_STEPS`` makes walks longer.
"""

from __future__ import annotations

import os
import random
import re
import time
import zlib
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import Error as PlaywrightError

from devtools.browser import app_console_errors, charts_drawn, exceptions, katex_errors, settle

#: Interactions per page at least: more when the page offers more kinds of widget, plus one to open a menu.
#: Every step is a rerun the test waits for, on top of the two page loads: mind the suite's 10-minute budget
#: (the browser tier's times are in docs/performance.md).
STEPS = int(os.environ.get("RANDOM_INTERACTIONS_STEPS", "4"))
#: Replaces every page's own seed (to replay a failure, or to explore other sequences).
SEED_OVERRIDE = os.environ.get("RANDOM_INTERACTIONS_SEED")

MAIN = '[data-testid="stMain"]'
SLIDERS = f'{MAIN} [data-testid="stSlider"]'
RADIOS = f'{MAIN} [data-testid="stRadio"]'
TOGGLES = '[data-testid="stCheckbox"]'  # the page's toggles and the sidebar's Presenter mode
SELECTS = '[data-testid="stSelectbox"], [data-testid="stMultiSelect"]'  # also inside the open Export menu
BUTTONS = f'{MAIN} [data-testid="stButton"] button'
POPOVERS = f'{MAIN} [data-testid="stPopoverButton"]'
TEXTS = f'{MAIN} [data-testid="stTextInput"] input, {MAIN} [data-testid="stTextArea"] textarea'
CHARTS = f"{MAIN} .vega-embed"
OPTIONS = '[role="listbox"] [role="option"]'
ERROR_BOX = f'{MAIN} [data-testid="stAlertContentError"]'

#: Buttons that answer at once. Any other (Train and Stop, Measure: seconds of CPU each) is never clicked;
#: download buttons are another element (`stDownloadButton`) and are not looked at.
SAFE_BUTTONS = re.compile(r"Previous|Next|Reveal|Try another answer|Shuffle|Check my code|Reset to the skeleton"
                          r"|I give up, show me|Back to the lesson's example|Show L\d+ H\d+")
SENTENCES = ["the cat sat on the mat", "attention is all you need", "a dog chased the red ball",
             "good morning everyone", "time flies like an arrow", "she reads books at night"]
#: For the exercise's editor: runs, but forgets the scaling (the checker reports it; nothing raises).
CODE = ("import torch\n\n\ndef scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    return torch.softmax(Q @ K.transpose(-2, -1), dim=-1) @ V\n")
INVALID_TEXTS = ["", "   "]

#: What can be interacted with right now, in one call; `i` indexes the matches of the selectors above.
WIDGETS_JS = """() => {
  const all = (sel) => Array.from(document.querySelectorAll(sel));
  const text = (e) => (e ? e.innerText : '').trim();
  const label = (w) => text(w && w.querySelector('[data-testid="stWidgetLabel"]')).split('\\n')[0];
  const name = (e) => text(e).split('\\n').filter((l) => l.trim() && !/^[a-z_]+$/.test(l)).join(' ').trim();
  const hidden = (e) => { const r = e.getBoundingClientRect(); return r.width === 0 || r.height === 0; };
  return {
    slider: all('%(SLIDERS)s').map((w, i) => {
      const t = w.querySelector('input[type="range"]');
      return {i, label: label(w), value: t.value, disabled: t.disabled || hidden(w)};
    }),
    radio: all('%(RADIOS)s').map((w, i) => {
      const inputs = Array.from(w.querySelectorAll('input[type="radio"]'));
      return {i, label: label(w), options: Array.from(w.querySelectorAll('[data-testid="stRadioOption"]'), text),
              checked: inputs.findIndex((r) => r.checked), disabled: inputs.some((r) => r.disabled) || hidden(w)};
    }),
    toggle: all('%(TOGGLES)s').map((w, i) => {
      const t = w.querySelector('input');
      return {i, label: text(w), checked: t.checked, disabled: t.disabled || hidden(w),
              sidebar: !!w.closest('[data-testid="stSidebar"]')};
    }),
    select: all('%(SELECTS)s').map((w, i) => ({i, label: label(w), multi: w.dataset.testid === 'stMultiSelect',
      menu: !!w.closest('[data-testid="stPopoverBody"]'), disabled: hidden(w),
      chips: Array.from(w.querySelectorAll('[aria-label^="Remove "]'), (b) => b.getAttribute('aria-label'))})),
    button: all('%(BUTTONS)s').map((b, i) => ({i, label: name(b), disabled: b.disabled || hidden(b)})),
    popover: all('%(POPOVERS)s').map((b, i) => ({i, label: name(b), disabled: hidden(b),
      open: b.getAttribute('aria-expanded') === 'true'})),
    text: all('%(TEXTS)s').map((t, i) => ({i, value: t.value, area: t.tagName === 'TEXTAREA',
      label: label(t.closest('[data-testid="stTextInput"], [data-testid="stTextArea"]')),
      disabled: t.disabled || hidden(t)})),
    chart: all('%(CHARTS)s').map((e, i) => ({i, label: `chart ${i + 1}`,
      disabled: !e.querySelector('canvas, svg') || hidden(e)})),
  };
}""" % dict(SLIDERS=SLIDERS, RADIOS=RADIOS, TOGGLES=TOGGLES, SELECTS=SELECTS,  # noqa: UP031 (JS braces)
            BUTTONS=BUTTONS, POPOVERS=POPOVERS, TEXTS=TEXTS, CHARTS=CHARTS)

KINDS = ("slider", "radio", "toggle", "select", "button", "text", "chart")


def page_seed(name: str) -> int:
    """The page's own seed, from its name (stable when the router reorders its pages)."""
    return int(SEED_OVERRIDE) if SEED_OVERRIDE else zlib.crc32(name.encode()) % 100_000


class Traffic:
    """The app's websocket traffic, counted: reruns the browser asked for, runs the server finished."""

    def __init__(self, page) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.requested = self.finished = 0

        def sent(payload) -> None:
            if isinstance(payload, bytes) and BackMsg.FromString(payload).WhichOneof("type") == "rerun_script":
                self.requested += 1

        def received(payload) -> None:
            if isinstance(payload, bytes) and ForwardMsg.FromString(payload).WhichOneof("type") == "script_finished":
                self.finished += 1

        page.on("websocket", lambda ws: (ws.on("framesent", sent), ws.on("framereceived", received)))

    def counts(self) -> tuple[int, int]:
        return self.requested, self.finished


def wait_for_answer(page, traffic: Traffic, before: tuple[int, int], ask_ms: int) -> str:
    """Wait for the run a step asked for, then `settle`; say what happened.

    `ask_ms`: how long the step may take to send its rerun (0 when it changed nothing; a click on a chart
    reruns only if the chart is selectable). Playwright delivers the websocket events while it waits, so the
    loop polls in 25 ms slices and returns as soon as the message is there.
    """
    requested, finished = before
    waited = 0
    while traffic.requested == requested and waited < ask_ms:
        page.wait_for_timeout(25)
        waited += 25
    outcome = "no rerun"
    if traffic.requested > requested:
        waited = 0
        while traffic.finished == finished and waited < 60_000:
            page.wait_for_timeout(25)
            waited += 25
        outcome = "rerun" if traffic.finished > finished else "rerun asked, not finished in 60 s"
    settle(page, interval_ms=100)  # the run is known to be over (or never asked for): only the drawing is left
    return outcome


@dataclass
class Walk:
    """One page's random walk: its random numbers and what it has done so far."""

    rng: random.Random
    log: list[str] = field(default_factory=list)
    texts: int = 0  # text entries so far
    invalid_text_done: bool = False


# Each step acts on one widget `w` (a dict from WIDGETS_JS) and returns
# (what it did, how long its rerun may take to be asked for in ms, a check to run once settled or None).

def step_slider(page, walk: Walk, w: dict):
    key = walk.rng.choice(["Home", "End", "ArrowLeft", "ArrowRight", "ArrowRight"])
    thumb = page.locator(SLIDERS).nth(w["i"]).locator('input[type="range"]')
    thumb.focus()
    page.keyboard.press(key)
    after = thumb.input_value()
    return f"{key} ({w['value']} -> {after})", 2000 if after != w["value"] else 0, None


def step_radio(page, walk: Walk, w: dict):
    j = walk.rng.randrange(len(w["options"]))
    page.locator(RADIOS).nth(w["i"]).locator('[data-testid="stRadioOption"]').nth(j).click()
    return f"click {w['options'][j]!r}", 2000 if j != w["checked"] else 0, None


def step_toggle(page, walk: Walk, w: dict):
    page.locator(TOGGLES).nth(w["i"]).locator("label").first.click()
    return f"click ({'on -> off' if w['checked'] else 'off -> on'})", 2000, None


def step_select(page, walk: Walk, w: dict):
    box = page.locator(SELECTS).nth(w["i"])
    if w["multi"] and len(w["chips"]) > 1 and walk.rng.random() < 0.4:
        chip = walk.rng.choice(w["chips"])
        box.get_by_role("button", name=chip, exact=True).click()
        return chip, 2000, None
    if w["menu"]:  # the open menu floats by its button, which an earlier step may have scrolled out of view
        page.locator(f'{POPOVERS}[aria-expanded="true"]').first.scroll_into_view_if_needed()
    field_ = box.locator("input").first
    field_.scroll_into_view_if_needed()  # the list closes when the page scrolls: scroll first, then open it
    options = page.locator(OPTIONS)
    for _ in range(2):  # a second click, should the list have closed at once (a late scroll)
        field_.click()
        try:
            options.first.wait_for(timeout=1000)
            break
        except PlaywrightError:
            pass
    else:  # e.g. a multiselect at its limit lists no option
        page.keyboard.press("Escape")
        return "opened, no option to pick", 300, None
    texts = options.all_inner_texts()
    selected = options.evaluate_all("(os) => os.map((o) => o.ariaSelected === 'true')")
    choices = [j for j, t in enumerate(texts) if not t.startswith("You can only select")]
    if not choices:  # a multiselect at its limit lists only that message: take one away instead
        page.keyboard.press("Escape")
        if not w["chips"]:
            return f"opened, no option to pick ({texts[0]!r})", 300, None
        chip = walk.rng.choice(w["chips"])
        box.get_by_role("button", name=chip, exact=True).click()
        return f"full, {chip}", 2000, None
    j = walk.rng.choice([j for j in choices if not selected[j]] or choices)
    options.nth(j).click()
    if w["multi"]:
        page.keyboard.press("Escape")
    return f"pick {texts[j]!r}", 0 if selected[j] else 2000, None


def step_button(page, walk: Walk, w: dict):
    page.locator(BUTTONS).nth(w["i"]).click()
    return "click", 3000, None


def step_popover(page, walk: Walk, w: dict):
    page.locator(POPOVERS).nth(w["i"]).click()
    return "close" if w["open"] else "open", 2000, None


def text_value(page, walk: Walk, w: dict, invalid: bool) -> str:
    if invalid:
        return walk.rng.choice([t for t in INVALID_TEXTS if t != w["value"]])
    if w["area"]:
        return CODE
    if w["label"] == "Permutation":  # an ordering of the sentence's positions
        sentence = page.get_by_role("textbox", name="Sentence", exact=True).input_value()
        order = list(range(max(1, len(sentence.split()))))
        walk.rng.shuffle(order)
        return ", ".join(map(str, order))
    return walk.rng.choice([s for s in SENTENCES if s != w["value"]])


def step_text(page, walk: Walk, w: dict):
    """Type into a box and commit it (Enter; Ctrl+Enter in an editor). One entry of a page is invalid."""
    invalid = not walk.invalid_text_done and (walk.texts > 0 or walk.rng.random() < 0.5)
    value = text_value(page, walk, w, invalid)
    box = page.locator(TEXTS).nth(w["i"])
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Backspace")
    if w["area"]:
        box.fill(value)  # typed key by key, the editor's own indentation would pile up on the code's
        page.keyboard.press("Control+Enter")
    else:
        page.keyboard.type(value)
        page.keyboard.press("Enter")
    walk.texts += 1
    walk.invalid_text_done |= invalid
    return (f"type {value!r}{' (invalid)' if invalid else ''}", 2000 if value != w["value"] else 0,
            error_shown if invalid and not w["area"] else None)


def check_within(page, check, timeout_ms: int = 10_000) -> str | None:
    """`check(page)`, asked again every 100 ms until it passes or `timeout_ms` is over; its last answer.

    One step can ask for two runs: a click into a text box while the export menu is open closes the menu (a run
    of its own) before the text is committed (another). `wait_for_answer` returns when the first has finished,
    so what the second draws (an invalid entry's error message) may still be on its way.
    """
    waited = 0
    while (problem := check(page)) and waited < timeout_ms:
        page.wait_for_timeout(100)
        waited += 100
    return problem


def error_shown(page) -> str | None:
    """After an invalid entry the page says what is wrong: an error message (`st.error`), not an exception."""
    return None if page.locator(ERROR_BOX).count() else "the invalid entry showed no error message"


def step_chart(page, walk: Walk, w: dict):
    surface = page.locator(CHARTS).nth(w["i"]).locator("canvas, svg").first
    surface.scroll_into_view_if_needed()
    box = surface.bounding_box()
    if not box or box["width"] < 5 or box["height"] < 5:
        return "not drawn, skipped", 0, None
    fx, fy = walk.rng.uniform(0.1, 0.9), walk.rng.uniform(0.1, 0.9)
    page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
    return f"click at ({fx:.2f}, {fy:.2f}) of {box['width']:.0f}x{box['height']:.0f} px", 400, None


STEPPERS = {"slider": step_slider, "radio": step_radio, "toggle": step_toggle, "select": step_select,
            "button": step_button, "text": step_text, "chart": step_chart, "popover": step_popover}


def on_page(widgets: dict) -> dict[str, list[dict]]:
    """The widgets of each kind on the page, usable now or not (only safe buttons; the sidebar's Presenter
    mode, a run of the whole app, only on a page without a toggle of its own)."""
    found = dict(widgets)
    found["button"] = [w for w in widgets["button"] if SAFE_BUTTONS.fullmatch(w["label"])]
    found["radio"] = [w for w in widgets["radio"] if w["options"]]
    found["toggle"] = [w for w in widgets["toggle"] if not w["sidebar"]] or widgets["toggle"]
    return {kind: ws for kind, ws in found.items() if ws}


def usable(widgets: dict) -> dict[str, list[dict]]:
    """The widgets each kind of step can act on now: those present, enabled and shown."""
    now = {kind: [w for w in ws if not w["disabled"]] for kind, ws in on_page(widgets).items()}
    return {kind: ws for kind, ws in now.items() if ws}


def plan(rng: random.Random, widgets: dict) -> list[str]:
    """The kinds of the steps: every kind the page offers at least once (a text box twice, so that one entry
    can be invalid), the rest at random, in a random order. An Export menu offers a select box.

    The two slowest steps come once, not again at random: the select box of a menu (two steps: open, pick)
    and the sidebar's Presenter mode (a run of the whole app), the toggle of a page without its own."""
    found = on_page(widgets)
    offered = [k for k in KINDS if k in found or (k == "select" and "popover" in found)]
    kinds = offered + ["text"] * ("text" in offered)
    again = [k for k in offered if not (k == "select" and "select" not in found)
             and not (k == "toggle" and all(w["sidebar"] for w in found["toggle"]))]
    kinds += rng.choices(again or offered, k=max(0, STEPS - len(kinds)))
    rng.shuffle(kinds)
    return kinds


def fail_message(rp, seed: int, walk: Walk, page, what: str) -> str:
    return (f"{rp.title}, seed {seed}: {what}\nURL now: {page.url}\nsteps:\n  " + "\n  ".join(walk.log)
            + f"\nreplay: RANDOM_INTERACTIONS_SEED={seed} python -m pytest tests/browser/test_browser.py"
            f" -k {rp.name}")


def assert_clean(page, rp, seed: int, walk: Walk, errors_before: int, what: str) -> None:
    boxes = exceptions(page)
    assert boxes == [], fail_message(rp, seed, walk, page, f"exception box after {what}:\n" + "\n".join(boxes))
    new_errors = app_console_errors(page)[errors_before:]
    assert new_errors == [], fail_message(rp, seed, walk, page, f"console error after {what}: {new_errors}")
    formulas = katex_errors(page)
    assert formulas == [], fail_message(rp, seed, walk, page, f"formula KaTeX cannot draw after {what}: {formulas}")


def random_walk(page, traffic: Traffic, rp, charts_expected: bool) -> None:
    """Walk the open page `rp` (a `router_pages` entry) at random, then reload it from its URL; fail on the first
    exception box or console error, or a chart missing after the reload. `traffic` must have been watching the page
    since before it was opened."""
    seed = page_seed(rp.name)
    walk = Walk(random.Random(seed))
    page.set_default_timeout(15_000)  # an interaction that cannot be done fails soon, with the steps so far
    walk.log.append(f"0. open -> {page.url}")
    kinds = plan(walk.rng, page.evaluate(WIDGETS_JS))
    n, most = 0, len(kinds) + 3
    while kinds and n < most:
        n += 1
        now = usable(page.evaluate(WIDGETS_JS))
        if not now:
            break
        kind = kinds.pop(0)
        if kind == "select" and "select" not in now and "popover" in now:
            kind = "popover"  # the select box lives in the Export menu: open it now, pick at the next step
            kinds.insert(0, "select")
        if kind not in now:  # e.g. Reveal before the quiz is answered
            kind = walk.rng.choice(sorted(set(now) - {"popover"}) or sorted(now))
        target = walk.rng.choice(now[kind])
        label = target["label"] if len(target["label"]) <= 60 else target["label"][:57] + "..."
        errors_before = len(app_console_errors(page))
        started = time.perf_counter()
        try:
            before = traffic.counts()
            what, ask_ms, check = STEPPERS[kind](page, walk, target)
            outcome = wait_for_answer(page, traffic, before, ask_ms)
        except PlaywrightError as exc:
            walk.log.append(f"{n}. {kind} {label!r}: could not be done")
            pytest.fail(fail_message(rp, seed, walk, page, f"step {n} failed: {exc}"))
        walk.log.append(f"{n}. {kind} {label!r}: {what} [{outcome}, {time.perf_counter() - started:.1f} s]"
                        f" -> {page.url}")
        print(walk.log[-1])
        assert_clean(page, rp, seed, walk, errors_before, f"step {n}")
        if check and (problem := check_within(page, check)):
            pytest.fail(fail_message(rp, seed, walk, page, f"after step {n}, {problem}"))
    errors_before = len(app_console_errors(page))
    page.goto(page.url)
    settle(page)
    walk.log.append(f"reload -> {page.url}")
    assert_clean(page, rp, seed, walk, errors_before, "reloading the page from its URL")
    drawn, charts = charts_drawn(page)
    if charts_expected:
        assert charts > 0, fail_message(rp, seed, walk, page, "no chart after the reload")
    assert drawn == charts, fail_message(rp, seed, walk, page, f"only {drawn} of {charts} charts drawn")
