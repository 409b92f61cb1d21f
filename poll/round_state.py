"""`RoundStates`: what a student's screen shows of a page's poll, as one short word that a browser can poll.

A student's page needs to be drawn again only when its quiz's round opened, was locked or revealed, was replaced
by a new round, or was closed; a vote changes nothing on it. `round_state` names that state (``"none"``,
``"3-open"``, ``"3-locked"``, ``"3-revealed"``: the round's number and its stage), and `RoundStates` gives it per
page from the process's `VersionCache`, reading the round from the store only when the page's version moved. So
any number of browsers can ask every few seconds, and the store is asked at most once per page per ``max_age_s``
(twice when the version moved: the version, then the round).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from poll.exercise_rounds import ExerciseRound
from poll.rounds import Round
from poll.store import PollStore
from poll.version_cache import MAX_PAGES, VersionCache, remember

#: The state of a page with no current round.
NO_ROUND = "none"


def round_state(current: Round | None) -> str:
    """The stage of the page's current round, as a student's screen shows it (the same word for the same screen)."""
    if current is None:
        return NO_ROUND
    stage = "revealed" if current.is_revealed else "open" if current.accepts_votes else "locked"
    return f"{current.number}-{stage}"


def exercise_state(current: ExerciseRound | None) -> str:
    """The stage of the page's exercise round as a student's screen shows it: ``none``, ``3-open``, ``3-closed``,
    and ``-shown`` after them once the lecturer showed the class its summary. A recorded result changes none."""
    if current is None:
        return NO_ROUND
    return f"{current.number}-{'open' if current.is_open else 'closed'}{'-shown' if current.is_shown else ''}"


class RoundStates:
    """Each page's `round_state` (or, with `read`, another state a page's screen shows), as of the `VersionCache`'s
    reading of the page's version."""

    def __init__(self, store: PollStore, versions: VersionCache, max_pages: int = MAX_PAGES,
                 read: Callable[[str], str] | None = None) -> None:
        self._store = store
        self._read = read or (lambda page: round_state(store.current_round(page)))
        self._versions = versions
        self._max_pages = max_pages
        self._kept: dict[str, tuple[int, str]] = {}  # page -> (version, state), oldest first
        self._lock = threading.Lock()

    def fresh(self, page: str) -> str | None:
        """The page's state if the version cache holds a recent reading that it was worked out at, else None.
        Never asks the store, so it can be called on the server's event loop."""
        version = self._versions.fresh(page)
        with self._lock:
            kept = self._kept.get(page)
        return kept[1] if version is not None and kept is not None and kept[0] == version else None

    def state(self, page: str) -> str:
        """The page's state, asking the store when the version moved (raises the store's `PollError`)."""
        version = self._versions.version(page)
        with self._lock:
            kept = self._kept.get(page)
        if kept is not None and kept[0] == version:
            return kept[1]
        state = self._read(page)
        with self._lock:
            remember(self._kept, page, (version, state), self._max_pages)
        return state
