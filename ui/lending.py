"""Objects too costly to build on every run, built once per process and lent to one run at a time.

A cross-check with PyTorch's own layer builds that layer (its modules' Python set-up) and runs it on three tokens;
the building costs more than the run. ``lender(build).borrow(*key)`` hands a run the object that ``build(*key)``
made the first time this process asked for that key, and keeps every other run from it until the loan ends: a
lent object is changed by its borrower (a layer is given each setting's weights), so it is never shared while lent.

`ui.cache.shared_cache` is the other way of sharing work between sessions: read-only results, used by any number at
once.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Lender(Generic[T]):
    """The objects ``build(*args, **kwargs)`` made, by their arguments, at most `max_entries` of them (the least
    recently lent go first; one out on loan stays with its borrower)."""

    def __init__(self, build: Callable[..., T], max_entries: int = 16) -> None:
        self.build, self.max_entries = build, max_entries
        self.entries: collections.OrderedDict[Hashable, tuple[threading.Lock, list[T]]] = collections.OrderedDict()
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def borrow(self, *args: Any, **kwargs: Any) -> Iterator[T]:
        """The object for these arguments (built on first asking), this run's alone until the block ends."""
        key = (args, tuple(sorted(kwargs.items())))
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                entry = self.entries[key] = (threading.Lock(), [])
            self.entries.move_to_end(key)
            while len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)
        own_lock, made = entry
        with own_lock:
            if not made:
                made.append(self.build(*args, **kwargs))
            yield made[0]

    def __len__(self) -> int:
        with self.lock:
            return len(self.entries)


_LENDERS: dict[tuple[str, str], Lender[Any]] = {}
_LENDERS_LOCK = threading.Lock()


def lender(build: Callable[..., T], max_entries: int = 16) -> Lender[T]:
    """The process's `Lender` of `build`'s objects (one per function, found again by its module and name: a page's
    script runs anew on every rerun, and its lender must outlive the run)."""
    name = (build.__module__, build.__qualname__)
    with _LENDERS_LOCK:
        found = _LENDERS.get(name)
        if found is None:
            found = _LENDERS[name] = Lender(build, max_entries)
        return found
