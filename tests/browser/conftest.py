"""Fixtures for the browser tests: the app served by `streamlit run`, and headless Chromium."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from devtools.appserver import AppServer
from devtools.browser import VIEWS, chromium_available, launch

#: Where the browser tests save screenshots of what they checked, to look at: only when SCREENSHOT_DIR is set
#: (``SCREENSHOT_DIR=/tmp/attention-screenshots python -m pytest -m browser``); they assert nothing.
SCREENSHOT_DIR = Path(os.environ["SCREENSHOT_DIR"]) if os.environ.get("SCREENSHOT_DIR") else None
#: What Streamlit Community Cloud sets whatever `.streamlit/config.toml` says: the browser tests serve the app
#: with these values, so every page is checked the way it runs there.
COMMUNITY_CLOUD_CONFIG = {
    "STREAMLIT_SERVER_RUN_ON_SAVE": "true",
    "STREAMLIT_RUNNER_FAST_RERUNS": "true",
    "STREAMLIT_CLIENT_SHOW_ERROR_DETAILS": "false",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def app_url():
    if not chromium_available():
        pytest.skip("no chromium binary at /usr/bin/chromium (apt-get install -y chromium)")
    with AppServer(env=COMMUNITY_CLOUD_CONFIG) as server:
        yield server.url


@pytest.fixture(scope="session")
def browser():
    if not chromium_available():
        pytest.skip("no chromium binary at /usr/bin/chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="session")
def shared_context(browser):
    """`shared_context(**options)`: one browser context for each set of options, kept while the worker runs.

    For the tests that only look at the page they open (they store nothing in the browser): each opens a page of
    its own in it and closes it, and the app's scripts come from the context's cache, compiled once, instead of
    being fetched and compiled again for every test. A test that keeps anything in the browser (a cookie, a vote)
    takes a context of its own."""
    contexts = {}

    def context(**options):
        key = json.dumps(options, sort_keys=True)
        if key not in contexts:
            contexts[key] = browser.new_context(**options)
        return contexts[key]

    yield context
    for made in contexts.values():
        made.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()


@pytest.fixture(params=list(VIEWS))
def view(request, browser):
    """A fresh page on each screen of `VIEWS` (its name in ``view_name``)."""
    context = browser.new_context(**VIEWS[request.param])
    pg = context.new_page()
    pg.view_name = request.param
    yield pg
    context.close()


@pytest.fixture(scope="session")
def screenshot_dir():
    """SCREENSHOT_DIR, created, or None when screenshots are off."""
    if SCREENSHOT_DIR is not None:
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR


def pytest_terminal_summary(terminalreporter):
    if SCREENSHOT_DIR is not None and SCREENSHOT_DIR.exists() and any(SCREENSHOT_DIR.glob("*.png")):
        terminalreporter.write_line(f"browser screenshots written to {SCREENSHOT_DIR}")
