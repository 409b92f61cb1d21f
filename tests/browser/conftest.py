"""Fixtures for the browser tests: the app served by `streamlit run`, and headless Chromium."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from devtools.appserver import AppServer
from devtools.browser import NO_CHROMIUM, VIEWS, chromium_available, launch, settle
from tests.helpers.browser_context import fresh_page, new_page_as_if_first_visit
from tests.helpers.interactions import Traffic

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


def pytest_configure(config):
    config.addinivalue_line("markers", "shared_load(on=None, screen=None, screens=None, keeps=False): a test of the "
                            "page its `rp` and `query` name, on the screen `on` or `screens[<its parameter screen>]`, "
                            "that takes it loaded (`audited_page`)")


@pytest.hookimpl(tryfirst=True)  # the groups, before xdist reads them into the test ids
def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.browser)
    pair_shared_loads(items)


def shared_load_key(item) -> str | None:
    """For a test marked `shared_load`: the page it audits and the screen, from its parameters (else None)."""
    marker = item.get_closest_marker("shared_load")
    if marker is None or not hasattr(item, "callspec"):
        return None
    return json.dumps([*address(item.callspec.params), screen_of(item)], sort_keys=True)


def address(params: dict) -> tuple[str, str]:
    """The page and query string a test's parameters name (`rp`, and `query` where it has one)."""
    return params["rp"].url_path, params.get("query", "")


def screen_of(item) -> dict:
    """The browser context options of a `shared_load` test's screen."""
    marker = item.get_closest_marker("shared_load")
    return marker.kwargs.get("on") or marker.kwargs["screens"][item.callspec.params[marker.kwargs["screen"]]]


def keeps_its_page(item) -> bool:
    """Whether a `shared_load` test leaves its page as it found it, for the next (``keeps=True``): it only reads it,
    or runs axe on it, which changes nothing in it."""
    return item.get_closest_marker("shared_load").kwargs.get("keeps", False)


def pair_shared_loads(items) -> None:
    """The `shared_load` tests of one page on one screen run one after the other on one worker, those that keep the
    page first, so that they share one load of it (`audited_page`)."""
    members: dict[str, list] = {}
    for item in items:
        if (key := shared_load_key(item)) is not None:
            members.setdefault(key, []).append(item)
    ordered, placed = [], set()
    for item in items:
        key = shared_load_key(item)
        if key is None or len(members[key]) < 2:
            ordered.append(item)
        elif key not in placed:
            placed.add(key)
            group = "load-" + hashlib.sha1(key.encode()).hexdigest()[:10]
            for member in sorted(members[key], key=lambda i: not keeps_its_page(i)):
                member.add_marker(pytest.mark.xdist_group(group))
                ordered.append(member)
    items[:] = ordered


@pytest.fixture(scope="session")
def app_server():
    """The app as `streamlit run` serves it, one per worker, for every browser test the worker runs."""
    if not chromium_available():
        pytest.skip(NO_CHROMIUM)
    with AppServer(env=COMMUNITY_CLOUD_CONFIG) as server:
        yield server


@pytest.fixture(scope="session")
def app_url(app_server):
    return app_server.url


@pytest.fixture(scope="session")
def browser():
    if not chromium_available():
        pytest.skip(NO_CHROMIUM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p, for_tests=True)
        yield b
        b.close()


@pytest.fixture(scope="session")
def shared_context(browser):
    """`shared_context(**options)`: one browser context for each set of options, kept while the worker runs.

    For the tests that keep nothing in the browser but what the app itself stores there (`page`, `view`,
    `audited_page` and the phones of `test_phone` clear that first: `tests.helpers.browser_context`): each opens
    a page of its own in it and closes it, and the app's scripts come from the context's cache, compiled once,
    instead of being fetched and compiled again for every test. A test that keeps anything else in the browser
    (a permission, a cookie of its own) takes a context of its own."""
    contexts = {}

    def context(**options):
        key = json.dumps(options, sort_keys=True)
        if key not in contexts:
            contexts[key] = browser.new_context(**options)
        return contexts[key]

    yield context
    for made in contexts.values():
        made.close()


@pytest.fixture(scope="session")
def kept_page():
    """The page the last `audited_page` test kept open, with its key (`shared_load_key`), per worker; its context
    (`shared_context`) closes it at the end."""
    return {}


@pytest.fixture(autouse=True)
def close_a_page_kept_for_another(request, kept_page):
    """A page kept open for the next test of the same page is closed before any other test: an open page keeps its
    session and connection on the app server the worker's tests share, which another test may be counting."""
    if kept_page and kept_page["key"] != shared_load_key(request.node):
        kept_page.pop("page").close()
        kept_page.clear()


@pytest.fixture
def audited_page(request, shared_context, app_url, kept_page):
    """The page the test's `rp` and `query` name, on the screen of its `shared_load` marker, loaded and settled.

    A test marked ``keeps=True`` leaves the page as it found it and open: the next test of the same page on the
    same screen (`pair_shared_loads` runs it next) finds it loaded instead of loading it again; any other test
    closes it after."""
    key = shared_load_key(request.node)
    page = kept_page.pop("page", None)  # the same page on the same screen (`close_a_page_kept_for_another`)
    kept_page.clear()
    if page is None:
        url_path, query = address(request.node.callspec.params)
        page = new_page_as_if_first_visit(shared_context(**screen_of(request.node)), app_url)
        page.traffic = Traffic(page)  # for `run_and_settle` in a test that changes the page
        page.goto(f"{app_url}/{url_path}" + (f"?{query}" if query else ""))
    settle(page)
    yield page
    if keeps_its_page(request.node):
        kept_page.update(key=key, page=page)
    else:
        page.close()


@pytest.fixture
def page(shared_context, app_url):
    """A page on the desktop (`fresh_page`); its console errors are in ``console_errors``."""
    with fresh_page(shared_context(**VIEWS["desktop"]), app_url) as pg:
        pg.console_errors = []
        pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
        yield pg


@pytest.fixture(params=list(VIEWS))
def view(request, shared_context, app_url):
    """A page on each screen of `VIEWS` (`fresh_page`; the screen's name in ``view_name``)."""
    with fresh_page(shared_context(**VIEWS[request.param]), app_url) as pg:
        pg.view_name = request.param
        yield pg


@pytest.fixture(scope="session")
def screenshot_dir():
    """SCREENSHOT_DIR, created, or None when screenshots are off."""
    if SCREENSHOT_DIR is not None:
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR


def pytest_terminal_summary(terminalreporter):
    if SCREENSHOT_DIR is not None and SCREENSHOT_DIR.exists() and any(SCREENSHOT_DIR.glob("*.png")):
        terminalreporter.write_line(f"browser screenshots written to {SCREENSHOT_DIR}")
