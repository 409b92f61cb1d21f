"""Headless Chromium (Debian's) driven by Playwright, and waiting for Streamlit to settle."""

from __future__ import annotations

import os
import time
from pathlib import Path

#: Debian's Chromium, the browser as a student runs it (headless): what the benchmarks time.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
#: Chromium's headless shell (Debian's `chromium-headless-shell`): the same Blink and V8 from the same release,
#: built without the desktop browser's windowing, profile and extension layers. The tests use it when it is
#: installed, since a page load costs less CPU there (docs/development.md); otherwise they use `CHROMIUM`.
HEADLESS_SHELL = os.environ.get("CHROMIUM_HEADLESS_SHELL", "/usr/bin/chromium-headless-shell")
#: Why a browser test is skipped on a machine without either.
NO_CHROMIUM = "no Chromium at /usr/bin/chromium-headless-shell or /usr/bin/chromium " \
              "(apt-get install -y chromium-headless-shell chromium)"
LAUNCH_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
#: The full browser's own headless mode; the shell has only one.
FULL_BROWSER_ARGS = ["--headless=new"]
#: The sidebar's share link (`ui.layout.show_share_link`): its text, as inline code.
SHARE_LINK = '[data-testid="stSidebar"] [data-testid="stMarkdown"] code'
#: Console errors that come from the closed network here, not from the app.
BENIGN_CONSOLE = ("Failed to load resource", "ERR_NAME_NOT_RESOLVED", "ERR_INTERNET_DISCONNECTED")


#: The two screens every page is checked on: a desktop, and a 390-px phone (a touch screen at device scale 2).
VIEWS = {"desktop": {"viewport": {"width": 1440, "height": 900}},
         "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                   "device_scale_factor": 2}}


def chromium_available() -> bool:
    return Path(HEADLESS_SHELL).exists() or Path(CHROMIUM).exists()


def browser_for_tests() -> str:
    """The Chromium the tests drive: the headless shell when installed, else the full browser."""
    return HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else CHROMIUM


def launch(playwright, *, for_tests: bool = False):
    """Headless Chromium: the full browser, or with `for_tests` the one `browser_for_tests` names."""
    binary = browser_for_tests() if for_tests else CHROMIUM
    extra = [] if binary == HEADLESS_SHELL else FULL_BROWSER_ARGS
    return playwright.chromium.launch(executable_path=binary, args=LAUNCH_ARGS + extra)


#: JavaScript expression: true while the app is not settled. The script is running or has not run yet
#: (Streamlit's `data-test-script-state` on the app root; the status widget alone appears only after a
#: delay, so a slow first run could look finished between two of its elements), or elements are stale,
#: or skeletons stand in for elements still to come.
APP_BUSY_JS = """(() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const state = app ? app.getAttribute('data-test-script-state') : 'initial';
  return ['initial', 'running', 'rerunRequested'].includes(state)
    || !!document.querySelector('[data-testid="stStatusWidget"], [data-stale="true"], [data-testid="stSkeleton"]');
})()"""


def settle(page, timeout_ms: int = 90_000, interval_ms: int = 200, poll_ms: int = 50) -> None:
    """Wait until the page's script has run, nothing is stale, every chart is drawn and the page is stable.

    Every page starts with a title (h1), so its presence means the page script
    has started drawing; `APP_BUSY_JS` then says whether the run is over (asked in
    the browser every `poll_ms`), and the text must stay the same over two
    checks of a settled page, `interval_ms` apart.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    page.wait_for_selector('[data-testid="stMain"] h1', timeout=timeout_ms)
    deadline, previous = time.monotonic() + timeout_ms / 1000, None
    while (left_ms := (deadline - time.monotonic()) * 1000) > 0:
        try:
            text = page.wait_for_function(SETTLED_TEXT_JS, timeout=left_ms, polling=poll_ms).json_value()[0]
        except PlaywrightTimeoutError:
            return
        if text == previous:
            return
        previous = text
        page.wait_for_timeout(interval_ms)


def after_frames(page, frames: int = 2) -> None:
    """Return once the page has drawn `frames` more animation frames: what it queued for its next frame is done."""
    page.evaluate("""(n) => new Promise((done) => {
      const tick = (k) => (k ? requestAnimationFrame(() => tick(k - 1)) : done());
      tick(n);
    })""", frames)


#: JavaScript function: [charts with a non-empty canvas or svg, charts present]. One call, however many charts.
CHARTS_DRAWN_JS = """() => {
  const charts = Array.from(document.querySelectorAll('.vega-embed'));
  const drawn = charts.filter((chart) => {
    const el = chart.querySelector('canvas, svg');
    const box = el && el.getBoundingClientRect();
    return !!box && box.width > 5 && box.height > 5;
  }).length;
  return [drawn, charts.length];
}"""


def charts_drawn(page) -> tuple[int, int]:
    """(charts with a non-empty canvas/svg, charts present)."""
    drawn, present = page.evaluate(CHARTS_DRAWN_JS)
    return drawn, present


#: JavaScript: the text the page shows in its main area (HTML and chart SVG labels), without the
#: widgets' own labels and values, so that moving a slider only counts once the page has redrawn.
PAGE_TEXT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return '';
  const clone = main.cloneNode(true);
  clone.querySelectorAll('[data-testid="stSlider"], [data-testid="stWidgetLabel"], input, textarea')
    .forEach(e => e.remove());
  const svgText = Array.from(main.querySelectorAll('.vega-embed svg text')).map(t => t.textContent);
  return clone.textContent + ' ' + svgText.join(' ');
}"""

#: JavaScript: false while the app is busy or a chart is not drawn yet (`APP_BUSY_JS`, `CHARTS_DRAWN_JS`), else
#: [the page's text] (`PAGE_TEXT_JS`), in a list so that an empty text still ends the wait.
SETTLED_TEXT_JS = """() => {
  if (""" + APP_BUSY_JS + """) return false;
  const [drawn, present] = (""" + CHARTS_DRAWN_JS + """)();
  return drawn === present && [(""" + PAGE_TEXT_JS + """)()];
}"""

#: JavaScript predicate: the app is idle, every chart is drawn, and the page text differs from `before`.
IDLE_AND_CHANGED_JS = """(before) => {
  if (""" + APP_BUSY_JS + """) return false;
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return false;
  for (const e of main.querySelectorAll('.vega-embed')) {
    const g = e.querySelector('canvas, svg');
    if (!g || g.getBoundingClientRect().width < 5) return false;
  }
  return before === null || (""" + PAGE_TEXT_JS + """)() !== before;
}"""

#: Init script (`page.add_init_script`) for repaint timing: records when a key is pressed and when any canvas of the
#: page is drawn on (a chart on a canvas repaints without touching the DOM).
REPAINT_INIT_JS = """(() => {
  window.__pressedAt = 0; window.__paintedAt = 0;
  document.addEventListener('keydown', () => { window.__pressedAt = performance.now(); }, true);
  const P = CanvasRenderingContext2D.prototype;
  for (const m of ['fill', 'stroke', 'fillText', 'strokeText', 'fillRect', 'clearRect', 'drawImage']) {
    const draw = P[m];
    P[m] = function (...args) { window.__paintedAt = performance.now(); return draw.apply(this, args); };
  }
})();"""

#: JavaScript: from now on, every change to the main area's DOM counts as painting.
WATCH_MAIN_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  new MutationObserver(() => { window.__paintedAt = performance.now(); })
    .observe(main, {subtree: true, childList: true, attributes: true, characterData: true});
}"""

#: JavaScript predicate: nothing was painted for `quiet_ms` since the last key press, the app is idle and the
#: page text differs from `before`. Polled every 50 ms rather than every frame: the text is read only once quiet.
REPAINTED_JS = """([before, quiet_ms]) => {
  if (window.__paintedAt < window.__pressedAt || performance.now() - window.__paintedAt < quiet_ms) return false;
  if (""" + APP_BUSY_JS + """) return false;
  return (""" + PAGE_TEXT_JS + """)() !== before;
}"""


def exceptions(page) -> list[str]:
    """The text of every exception box the app shows."""
    return page.locator('[data-testid="stException"]').all_inner_texts()


#: JavaScript: every formula KaTeX could not render, as "its message: its source". A parse error becomes KaTeX's
#: error element (``.katex-error``, its message as the title); an undefined command is drawn in KaTeX's error
#: colour (#cc0000) inside a formula that renders otherwise (MathML ``mstyle mathcolor``), its source in the
#: formula's annotation. Both are red text on the student's screen.
KATEX_ERRORS_JS = """() => [
  ...Array.from(document.querySelectorAll('.katex-error'), e => `${e.title}: ${e.textContent}`),
  ...Array.from(document.querySelectorAll('.katex-mathml mstyle[mathcolor="#cc0000"]'), e => {
    const source = e.closest('math').querySelector('annotation');
    return `undefined command ${e.textContent}: ${source ? source.textContent : ''}`;
  }),
]"""


def katex_errors(page) -> list[str]:
    """Every formula on the page that KaTeX drew as an error (`KATEX_ERRORS_JS`)."""
    return page.evaluate(KATEX_ERRORS_JS)


def app_console_errors(page) -> list[str]:
    """The console errors a page collected (as a list `page.console_errors`), without the benign ones of a
    machine offline (`BENIGN_CONSOLE`)."""
    return [e for e in page.console_errors if not any(b in e for b in BENIGN_CONSOLE)]


#: JavaScript: every chart, formula or table box that scrolls sideways, as [has tabindex 0, its name].
SCROLL_BOXES_JS = """() => Array.from(document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stVegaLiteChart"], [data-testid="stMain"] .katex-display, '
    + '[data-testid="stMain"] [data-testid="stMarkdownContainer"] table, '
    + '[data-testid="stMain"] [data-testid="stTable"] > div'))
  .filter((box) => box.scrollWidth > box.clientWidth + 1)
  .map((box) => [box.getAttribute('tabindex') === '0',
                 box.tagName === 'TABLE' ? 'table' : (box.getAttribute('aria-label') || '')])"""


def scroll_boxes(page, timeout_ms: int = 5_000) -> list[list]:
    """`SCROLL_BOXES_JS` once every box is focusable and named, or as it is when `timeout_ms` runs out.

    `ui.accessibility` marks a box in the animation frame after it changed; on a loaded machine a box drawn
    last can take a while, and a caller that asserts on the result still fails if it never happens."""
    deadline = time.monotonic() + timeout_ms / 1000
    boxes = page.evaluate(SCROLL_BOXES_JS)
    while not all(focusable and name for focusable, name in boxes) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
        boxes = page.evaluate(SCROLL_BOXES_JS)
    return boxes
