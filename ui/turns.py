"""Turns: at most `RUNS_AT_ONCE` page bodies of this process run at the same time; the others wait, in the order
they came.

Every session's script runs in a thread of its own, and all of them share one interpreter lock. A class that steps
at once starts dozens of runs. Left to themselves they pass the lock around every few milliseconds, each run slowed
by all the others, and the event loop, which starts every run and sends every run's messages, gets the lock only
as one thread among dozens. In turns, a run goes at full speed once it starts, the loop keeps up, and a step waits
only for the steps that came before it. Measured in docs/performance.md.

A run that waits for another process (the checker's sandbox) gives its turn back while it waits (`outside_turn`);
a long one (training) lets the waiting runs go between its chunks (`next_turn`), so one session never holds up a
class.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterator

#: Page bodies of one process that run at the same time: one computing while another sends its messages.
RUNS_AT_ONCE = 2


class Turns:
    """A counting lock that hands a freed turn straight to the thread that has waited longest (first come, first
    served: a thread giving its turn back cannot take it again ahead of the others)."""

    def __init__(self, at_once: int) -> None:
        if at_once < 1:
            raise ValueError(f"at_once must be at least 1, got {at_once}")
        self._free = at_once
        self._lock = threading.Lock()
        self._waiting: collections.deque[threading.Event] = collections.deque()

    def take(self) -> None:
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return
            handed = threading.Event()
            self._waiting.append(handed)
        handed.wait()

    def give_back(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()  # the turn passes to the longest waiter, never back to the pool
            else:
                self._free += 1


_turns = Turns(RUNS_AT_ONCE)
_held = threading.local()  # .depth: how many `turn` blocks this thread is in


def holding() -> bool:
    """Whether this thread has a turn."""
    return getattr(_held, "depth", 0) > 0


@contextlib.contextmanager
def turn() -> Iterator[None]:
    """Run the block in one of the process's turns, waiting for one first. Nested blocks share the outer turn."""
    outer = holding()
    if not outer:
        _turns.take()
    _held.depth = getattr(_held, "depth", 0) + 1
    try:
        yield
    finally:
        _held.depth -= 1
        if not outer:
            _turns.give_back()


@contextlib.contextmanager
def outside_turn() -> Iterator[None]:
    """Give this thread's turn back for the block (a wait on something else), then wait for a turn again."""
    depth = getattr(_held, "depth", 0)
    if not depth:
        yield
        return
    _held.depth = 0
    _turns.give_back()
    try:
        yield
    finally:
        _turns.take()
        _held.depth = depth


def next_turn() -> None:
    """Let every run that is waiting go first, then carry on (between the chunks of long work)."""
    with outside_turn():
        pass
