"""One scan of the installed packages for Streamlit components per test process, not one per `AppTest`.

`AppTest` gives each new instance a component registry of its own, filled by scanning every installed distribution's
metadata for component manifests (`streamlit.components.v2.manifest_scanner.scan_component_manifests`). Here that
reads about 170 packages' metadata on every `AppTest`'s first run: most of the CPU of a page's run in a test. What
is installed does not change while the suite runs, so the scan's result is kept for the process and every later
registry is filled from it, as the scan itself would have filled it. The app's own components (the copy-link
button, the poll watcher) are declared in its code and registered when a page runs, either way.

A test-only replacement of a library's attribute (the app's own are in `ui.patches`): where the attribute is missing
it leaves Streamlit as it is, and `tests/test_component_scan.py` fails when the scan runs more than once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamlit.components.v2 import manifest_scanner

#: The library's own scan, as found before `scan_once` replaced it (None when the attribute is missing).
LIBRARY_SCAN: Callable[..., list[tuple[Any, Path]]] | None = getattr(manifest_scanner, "scan_component_manifests",
                                                                     None)


@functools.cache
def _first_scan() -> tuple[tuple[Any, Path], ...]:
    assert LIBRARY_SCAN is not None
    return tuple(LIBRARY_SCAN())


def remembered_scan(max_workers: int | None = None) -> list[tuple[Any, Path]]:
    """What the library's scan found the first time it ran in this process (`max_workers` only paces a scan)."""
    return list(_first_scan())


def scan_once() -> bool:
    """Make every later `AppTest` reuse this process's first scan; False (and nothing changed) without the scan."""
    if LIBRARY_SCAN is None:
        return False
    manifest_scanner.scan_component_manifests = remembered_scan
    return True
