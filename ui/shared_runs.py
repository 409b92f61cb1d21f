"""Training runs shared by every session of the server: one run per setting, however many students ask for it.

A run is advanced in short chunks under its own lock. Sessions that want the same setting at the same time take
turns advancing the one run (each draws its progress between chunks), so a class costs one training, and a
session that goes away mid-chunk leaves the run at a step boundary, to be continued by the next one.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Hashable
from typing import Any, Generic, Protocol, TypeVar


class Resumable(Protocol):
    """A trainer that can be run in chunks (`decoder.trainer.DecoderTrainer`)."""

    result: Any

    def run(self, max_seconds: float | None = None) -> Any: ...


T = TypeVar("T", bound=Resumable)


class SharedRuns(Generic[T]):
    """At most `max_runs` runs by config, the least recently used dropped first (a finished run is rebuilt only
    if it was dropped)."""

    def __init__(self, make: type[T] | Any, max_runs: int) -> None:
        self._make, self._max_runs = make, max_runs
        self._runs: collections.OrderedDict[Hashable, tuple[T, threading.Lock]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def existing(self, config: Hashable) -> T | None:
        """The run of `config` if any session started it, else None."""
        with self._lock:
            entry = self._runs.get(config)
            if entry is not None:
                self._runs.move_to_end(config)
            return None if entry is None else entry[0]

    def advance(self, config: Hashable, seconds: float) -> T:
        """Start `config`'s run if nobody has, then train it for about `seconds` (after any chunk another
        session is running)."""
        with self._lock:
            if config not in self._runs:
                self._runs[config] = (self._make(config), threading.Lock())
                while len(self._runs) > self._max_runs:
                    self._runs.popitem(last=False)
            self._runs.move_to_end(config)
            trainer, lock = self._runs[config]
        with lock:
            if not trainer.result.complete:
                trainer.run(max_seconds=seconds)
        return trainer


_REGISTRY: dict[str, SharedRuns[Any]] = {}
_REGISTRY_LOCK = threading.Lock()


def shared_runs(name: str, make: Any, max_runs: int) -> SharedRuns[Any]:
    """The process's `SharedRuns` called `name`, made on first use. A page's script runs anew on every rerun, so
    its runs live here, found again by name."""
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            _REGISTRY[name] = SharedRuns(make, max_runs)
        return _REGISTRY[name]
