"""Results remembered by a key made of objects' identities (or of plain values), the most recently used kept.

`ui.charts.template` remembers the chart structures it built this way (by part key), `ui.display` a chart spec's
prepared structure and its prepared form, and `ui.patches.streamlit_vega_json` a structure's JSON text: an entry
keyed by identities holds the objects whose ids are in its key, so those ids cannot be reused while it is kept.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Hashable
from typing import Any


class Remembered:
    """Results by key, the `max_entries` used last. Each entry holds `held` (the objects whose ids are in its key)."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.entries: collections.OrderedDict[Hashable, tuple[Any, Any]] = collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable, held: Any, make: Callable[[], Any]) -> Any:
        """The result remembered for `key`, else ``make()``, remembered with `held`."""
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
                return found[1]
        made = make()  # outside the lock: two sessions may both make it, equally
        with self.lock:
            self.entries[key] = (held, made)
            while len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)
        return made

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
