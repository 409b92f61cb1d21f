"""Opening a page of the app in a test's browser, and reading what it shows."""

from __future__ import annotations

import re
from collections.abc import Callable

from devtools.browser import PAGE_TEXT_JS, settle
from tests.helpers.interactions import Traffic, wait_for_answer

#: The keyboard-focusable element of a Streamlit slider (react-aria renders a hidden range input).
SLIDER = '[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]'


def open_page(page, app_url: str, url_path: str, query: str = "") -> None:
    page.goto(f"{app_url}/{url_path}" + (f"?{query}" if query else ""))
    settle(page)


def main_numbers(page) -> list[str]:
    """Every number written on the page outside the sidebar (metrics, captions, LaTeX, chart labels)."""
    return re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", page.evaluate(PAGE_TEXT_JS))


def open_watched(page, app_url: str, url_path: str, query: str = "") -> None:
    """`open_page`, with the page's websocket traffic counted from before its load (``page.traffic``, for
    `run_and_settle`)."""
    page.traffic = Traffic(page)
    open_page(page, app_url, url_path, query)


def run_and_settle(page, act: Callable[[], object], ask_ms: int = 5_000) -> None:
    """`act()`, a step that asks for a run; then wait until that run has finished on the server (its
    ``script_finished`` on the websocket, counted by ``page.traffic``) and the page has settled. Fails if the step
    asked for no run, or its run did not finish."""
    before = page.traffic.counts()
    act()
    outcome = wait_for_answer(page, page.traffic, before, ask_ms)
    assert outcome == "rerun", f"the step's run: {outcome}"
