"""Pages in a browser context that tests share (`shared_context` in tests/browser/conftest.py), each opened as if
the browser had never visited the app: nothing an earlier test left in the context is seen but the HTTP cache."""

from __future__ import annotations

import contextlib

#: What a page of the app may leave in the browser besides cookies (Streamlit keeps the sidebar's state and the
#: theme in local storage).
SITE_STORAGE = "local_storage,indexeddb,cache_storage,service_workers,file_systems"


def new_page_as_if_first_visit(context, origin: str):
    """A new page in a context of `shared_context`, with nothing an earlier test left there: no cookie (the app's,
    the poll's), nothing in `origin`'s storage. It meets the app as a browser that never visited it, except that
    the app's scripts are in its cache."""
    context.clear_cookies()
    pg = context.new_page()
    cdp = context.new_cdp_session(pg)
    cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": SITE_STORAGE})
    cdp.detach()
    return pg


@contextlib.contextmanager
def fresh_page(context, origin: str):
    """`new_page_as_if_first_visit`; on leaving, it is closed, and so is any page it opened (a new tab)."""
    before = set(context.pages)
    pg = new_page_as_if_first_visit(context, origin)
    try:
        yield pg
    finally:
        for opened in [p for p in context.pages if p not in before]:
            opened.close()
