"""Training runs shared by every session of the server: one run per setting, however many students ask for it.

A run is advanced in short chunks under its own lock. Sessions that want the same setting at the same time take
turns advancing the one run (each draws its progress between chunks), so a class costs one training, and a
session that goes away mid-chunk leaves the run at a step boundary, to be continued by the next one.

A run in progress is never thrown away: memory is bounded by the runs nobody is training, the finished ones and
those left unfinished for `IDLE_S` (the least recently used go first, beyond `keep` of them). How many runs train
at once is the line's business (`ui.work_line`), not the store's.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

#: An unfinished run that nobody has advanced for this long was left (its student changed a setting or went
#: away): it may be dropped like a finished one.
IDLE_S = 15.0


class Resumable(Protocol):
    """A trainer that can be run in chunks (`decoder.trainer.DecoderTrainer`)."""

    result: Any

    def run(self, max_seconds: float | None = None) -> Any: ...


T = TypeVar("T", bound=Resumable)


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)  # held while a chunk trains
    trainer: Any = None  # made by the first chunk, under `lock`
    advancing: int = 0  # sessions inside `advance` now
    last_advanced: float = float("-inf")


class SharedRuns(Generic[T]):
    """Runs by config; beyond `keep` runs that nobody is training, the least recently used is dropped (a finished
    run is rebuilt only if it was dropped). ``clock`` is the time source (a test's own)."""

    def __init__(self, make: type[T] | Any, keep: int, idle_s: float = IDLE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._make, self.keep, self.idle_s, self._clock = make, keep, idle_s, clock
        self._runs: collections.OrderedDict[Hashable, _Entry] = collections.OrderedDict()
        self._lock = threading.Lock()

    def existing(self, config: Hashable) -> T | None:
        """The run of `config` if any session started it, else None."""
        with self._lock:
            entry = self._runs.get(config)
            if entry is None:
                return None
            self._runs.move_to_end(config)
            return entry.trainer

    def advance(self, config: Hashable, seconds: float) -> T:
        """Start `config`'s run if nobody has, then train it for about `seconds` (after any chunk another
        session is running)."""
        with self._lock:
            entry = self._runs.get(config)
            if entry is None:
                entry = self._runs[config] = _Entry()
            self._runs.move_to_end(config)
            entry.advancing += 1
        try:
            with entry.lock:
                if entry.trainer is None:
                    entry.trainer = self._make(config)
                if not entry.trainer.result.complete:
                    entry.trainer.run(max_seconds=seconds)
                return entry.trainer
        finally:
            with self._lock:
                entry.advancing -= 1
                entry.last_advanced = self._clock()
                self._trim()

    def kept(self) -> list[Hashable]:
        """The configs whose runs are held, the least recently used first."""
        with self._lock:
            return list(self._runs)

    def _in_progress(self, entry: _Entry) -> bool:
        if entry.advancing:
            return True
        unfinished = entry.trainer is None or not entry.trainer.result.complete
        return unfinished and self._clock() - entry.last_advanced < self.idle_s

    def _trim(self) -> None:
        """Drop the least recently used runs nobody is training, beyond `keep` of them."""
        idle = [config for config, entry in self._runs.items() if not self._in_progress(entry)]
        for config in idle[: max(0, len(idle) - self.keep)]:
            del self._runs[config]


_REGISTRY: dict[str, SharedRuns[Any]] = {}
_REGISTRY_LOCK = threading.Lock()


def shared_runs(name: str, make: Any, keep: int) -> SharedRuns[Any]:
    """The process's `SharedRuns` called `name`, made on first use. A page's script runs anew on every rerun, so
    its runs live here, found again by name."""
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            _REGISTRY[name] = SharedRuns(make, keep)
        return _REGISTRY[name]
