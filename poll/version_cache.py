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

#: How many pages' readings a process keeps (the oldest reading goes first). Far more than the app's quizzes; the
#: bound is for names that come from outside (`ui.poll_watch`'s route takes any well-formed name).
MAX_PAGES = 256


class VersionCache:
    def __init__(self, store: PollStore, max_age_s: float = 0.5, clock: Callable[[], float] = time.monotonic,
                 max_pages: int = MAX_PAGES) -> None:
        self._store = store
        self._max_age_s = max_age_s
        self._clock = clock
        self._max_pages = max_pages
        self._read: dict[str, tuple[float, int]] = {}  # page -> (read at, version), oldest reading first
        self._lock = threading.Lock()

    def fresh(self, page: str) -> int | None:
        """The page's version if it was read less than `max_age_s` ago, else None; never asks the store."""
        with self._lock:
            kept = self._read.get(page)
            if kept is not None and self._clock() - kept[0] < self._max_age_s:
                return kept[1]
            return None

    def version(self, page: str) -> int:
        """The page's version as read at most `max_age_s` ago (read now if older)."""
        with self._lock:  # one reading per page at a time: the sessions asking meanwhile wait for it
            now = self._clock()
            kept = self._read.get(page)
            if kept is not None and now - kept[0] < self._max_age_s:
                return kept[1]
            current = self._store.version(page)
            remember(self._read, page, (now, current), self._max_pages)
            return current


def remember(kept: dict, key: str, value: object, max_items: int) -> None:
    """Put `key` last in `kept` (the newest) with `value`, then drop the oldest entries beyond `max_items`."""
    kept.pop(key, None)
    kept[key] = value
    while len(kept) > max_items:
        del kept[next(iter(kept))]
