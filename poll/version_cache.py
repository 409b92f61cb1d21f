"""`VersionCache`: a page's version read once per process per interval, however many sessions ask.

Every student's page asks about once a second whether anything changed (`PollStore.version`). One process
serves many sessions, so they share one reading per page: the store is asked at most once per `max_age_s`
per page, and a session learns of a change at most `max_age_s` later. A failed reading is not kept: the next
call asks the store again (and raises its `DatabaseUnavailableError` while the database is away).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from poll.store import PollStore


class VersionCache:
    def __init__(self, store: PollStore, max_age_s: float = 0.5, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._max_age_s = max_age_s
        self._clock = clock
        self._read: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def version(self, page: str) -> int:
        """The page's version as read at most `max_age_s` ago (read now if older)."""
        with self._lock:  # one reading per page at a time: the sessions asking meanwhile wait for it
            now = self._clock()
            kept = self._read.get(page)
            if kept is not None and now - kept[0] < self._max_age_s:
                return kept[1]
            current = self._store.version(page)
            self._read[page] = (now, current)
            return current
