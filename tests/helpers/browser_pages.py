"""Opening a page of the app in a test's browser, and reading what it shows."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator

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


@contextlib.contextmanager
def server_stalled(server, seconds: float) -> Iterator[None]:
    """The app server (an `AppServer`) stopped for `seconds` from the start of the block, as a loaded machine holds
    it back: what the browser sends meanwhile waits in its socket, and a page that asked for a run shows none yet,
    so a wait for the page to be still ends before the run has begun. Leaving the block waits for the server to go
    on."""
    pid = server.proc.pid
    os.kill(pid, signal.SIGSTOP)
    resume = threading.Timer(seconds, os.kill, (pid, signal.SIGCONT))
    resume.start()
    try:
        yield
    finally:
        resume.join()
