"""Import slow modules in the background, so the first page a visitor opens does not wait for them.

PyTorch takes seconds to import. The landing page does not need it, but most other pages do. The router
calls `import_in_background` once a page has been sent to the browser: by the time a visitor opens the
next page, the import has finished, and a page that needs PyTorch earlier simply waits for it (Python's
import lock makes a second import of a module block until the first one is done, so the module is never
seen half-initialised).
"""

from __future__ import annotations

import importlib
import sys
import threading
import time

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
