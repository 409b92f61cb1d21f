"""Import slow modules in the background, so the first page a visitor opens does not wait for them.

Two moments, two sets of modules:

* When the server starts (`lifespan`): the modules of the router and the landing page, Altair, pandas and
  pyarrow among them (about a second here). The browser needs about as long to load Streamlit's front end
  before it connects and the first run can start, so the two overlap instead of following each other.
* Once a page has been sent (the router): PyTorch, which takes seconds to import. The landing page does not
  need it, but most other pages do; by the time a visitor opens the next page, the import has finished.

A run that needs a module earlier simply waits for it: Python's import lock makes a second import of a
module block until the first one is done, so a module is never seen half-initialised.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

#: What the first run of the landing page imports (the router's and the worked example's modules, and what
#: Streamlit and pyarrow load on first use: the emoji and icon names that check the page icons, 0.09 s here).
FIRST_PAGE_MODULES = ("ui.controls", "ui.quiz", "ui.tooltips", "core", "core.user_input",
                      "streamlit.emojis", "streamlit.material_icon_names", "pyarrow.pandas_compat")

_lock = threading.Lock()
_started: set[str] = set()


def import_in_background(*modules: str, delay_s: float = 0.0) -> threading.Thread | None:
    """Start importing `modules` (in order) in a daemon thread, at most once per process per module.

    The thread waits `delay_s` seconds first: an import holds the interpreter (and one of few cores) for
    seconds, so it should not compete with the browser drawing the page that was just sent. Returns the
    thread, or None when every module is already imported or being imported.
    """
    with _lock:
        todo = [m for m in modules if m not in sys.modules and m not in _started]
        _started.update(todo)
    if not todo:
        return None

    def run() -> None:
        time.sleep(delay_s)
        for name in todo:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a failed warm-up must not break the app; the page's own import reports it
                pass

    thread = threading.Thread(target=run, name="warm-up imports", daemon=True)
    thread.start()
    return thread


@contextlib.asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """The `st.App`'s start-up (`streamlit_app.py`): import `FIRST_PAGE_MODULES` in the background, then serve.

    Only starts the thread, so the server answers at once. (An `st.App` is served without Streamlit opening a
    browser tab; the shipped config is headless, so a plain script would not open one either.)

    Measured on a cold start (from `streamlit run` to the landing page drawn, alternating with the router importing
    them itself): 5.36 -> 4.99 s mean of six each on a quiet host; on a busy one much less, since the import and
    the browser then wait for the same two cores.
    """
    import_in_background(*FIRST_PAGE_MODULES)
    yield
