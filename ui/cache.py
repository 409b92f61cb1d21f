"""Results shared by every session of the server: a page's pure functions, computed once per input.

``@shared_cache(64)`` on a function of a page keeps its last 64 results, by the values of its arguments, for every
visitor of this server process, within one budget in bytes (`BUDGET_BYTES`) that every cache of the process
shares. Arguments whose names start with ``_`` are not part of the key (as with
Streamlit's caches): they are what the keyed arguments already determine, such as the `core` result a chart
is drawn from.

Streamlit's ``st.cache_data`` does the same job with more machinery, paid on every call, hit or miss: it inspects
the function's signature, hashes every argument with its own hasher, and hands out a fresh unpickled copy of
the result. In a lecture hall, where every slider step of every student calls a page's caches, that was a
visible part of each step (docs/performance.md). Here a call builds a tuple and looks it up.

No copies are made, so the results must not be changed. A NumPy array returned, or held in a returned dataclass,
tuple or list, is made read-only before anyone sees it, and writing to it raises. Dicts are not searched: a
chart's spec is one, with thousands of rows, and nothing changes a spec once built (`ui.display.show_chart`
and the export menu only read it). A page's
script runs anew on every rerun, redefining its functions; their caches are found again by the function's
file, name and code, so an edited function starts afresh.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import threading
from collections.abc import Callable, Hashable
from typing import Any, ParamSpec, TypeVar

import numpy as np

P = ParamSpec("P")
R = TypeVar("R")


#: What the shared results of the process may hold in all, in bytes of array and buffer data (`result_bytes`).
#: One positional-encoding table at 512 × 512 is several megabytes and a seed's attention a few kilobytes, so
#: a count of entries alone bounds nothing: past this budget the results used least recently, in any cache, go.
BUDGET_BYTES = 64 * 2**20


class _Results:
    """One function's results, most recently used last, at most `max_entries` of them."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.entries: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()

    def get(self, key: Hashable) -> tuple[bool, Any]:
        with _LOCK:
            if key not in self.entries:
                return False, None
            self.entries.move_to_end(key)
            _LEDGER.move_to_end((id(self), key))
            return True, self.entries[key]

    def put(self, key: Hashable, value: Any) -> None:
        size = result_bytes(value)
        with _LOCK:
            self._drop(key)
            self.entries[key] = value
            _LEDGER[(id(self), key)] = (self, size)
            _TOTAL[0] += size
            while len(self.entries) > self.max_entries:
                self._drop(next(iter(self.entries)))
            while _TOTAL[0] > BUDGET_BYTES and len(_LEDGER) > 1:  # the newest result stays, whatever its size
                (_, oldest_key), (owner, _) = next(iter(_LEDGER.items()))
                owner._drop(oldest_key)

    def _drop(self, key: Hashable) -> None:
        """Forget `key`'s result (the caller holds `_LOCK`)."""
        if key in self.entries:
            del self.entries[key]
            _, size = _LEDGER.pop((id(self), key))
            _TOTAL[0] -= size

    def clear(self) -> None:
        with _LOCK:
            for key in list(self.entries):
                self._drop(key)


#: Every shared cache of the process, by the function's file, qualified name and code.
_CACHES: dict[tuple[Hashable, ...], _Results] = {}
_CACHES_LOCK = threading.Lock()
#: Every result of every cache, least recently used first: (cache, key) -> (cache, its size in bytes).
_LEDGER: collections.OrderedDict[tuple[int, Hashable], tuple[_Results, int]] = collections.OrderedDict()
_TOTAL = [0]  # bytes held by the results in `_LEDGER`
_LOCK = threading.Lock()


def held_bytes() -> int:
    """The bytes that every shared result holds now, in all (at most `BUDGET_BYTES`, but for one result)."""
    with _LOCK:
        return _TOTAL[0]


def result_bytes(value: Any, seen: set[int] | None = None) -> int:
    """The bytes of data in `value`: its arrays, buffers and text, in dataclasses, dicts, tuples and lists,
    and in any object with an ``nbytes`` (a chart's `Rows`, an Arrow table), each counted once.

    A chart's spec (a dict with ``datasets``) counts its datasets only: the rest is its structure, which the specs
    of one shape share and `ui.charts.template.STRUCTURES` holds once, whatever the number of settings."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, bytes | bytearray | str):
        return len(value)
    if isinstance(value, dict):
        if "datasets" in value:
            return result_bytes(value["datasets"], seen)
        return sum(result_bytes(v, seen) for v in value.values())
    if isinstance(value, tuple | list):
        return sum(result_bytes(v, seen) for v in value)
    if (names := field_names(value)) is not None:
        return sum(result_bytes(getattr(value, name), seen) for name in names)
    nbytes = getattr(value, "nbytes", None)
    return nbytes if isinstance(nbytes, int) else 0


def field_names(value: Any) -> tuple[str, ...] | None:
    """The names of `value`'s fields if it is a dataclass instance (looked up once per class), else None."""
    kind = type(value)
    names = _FIELD_NAMES.get(kind)
    if names is None and kind not in _NOT_DATACLASSES:
        if dataclasses.is_dataclass(kind) and not isinstance(value, type):
            names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(kind))
        else:
            _NOT_DATACLASSES.add(kind)
    return names


#: `field_names` by class, and the classes that are not dataclasses (a class's fields never change).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_NOT_DATACLASSES: set[type] = set()


def read_only(value: Any) -> Any:
    """`value` with every NumPy array in it (in dataclasses, tuples and lists, at any depth) made read-only."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif (names := field_names(value)) is not None:
        for name in names:
            read_only(getattr(value, name))
    elif isinstance(value, tuple | list):
        for item in value:
            read_only(item)
    return value


def _hashable(value: Any) -> Hashable:
    """A key for an argument: the argument itself, or for an array its shape, type and bytes."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.shape, value.dtype.str, value.tobytes())
    return value


def shared_cache(max_entries: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Keep `max_entries` results of the decorated function for every session, by its arguments' values.

    The keyed arguments must be hashable (numbers, text, tuples, frozen dataclasses) or NumPy arrays (keyed by
    their shape, type and values); a list raises ``TypeError``. Two sessions that miss the same key at once may
    both compute it; the results are equal. ``f.clear()`` forgets the results of `f`.
    """
    if max_entries < 1:
        raise ValueError(f"max_entries must be at least 1, not {max_entries}.")

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        parameters = inspect.signature(func).parameters
        names = list(parameters)
        defaults = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
        keyed = [i for i, name in enumerate(names) if not name.startswith("_")]
        code = func.__code__
        identity = (code.co_filename, func.__qualname__, code.co_code, code.co_consts)
        with _CACHES_LOCK:
            results = _CACHES.get(identity)
            if results is None or results.max_entries != max_entries:
                results = _CACHES[identity] = _Results(max_entries)

        @functools.wraps(func)
        def cached(*args: P.args, **kwargs: P.kwargs) -> R:
            try:  # every argument, in order
                values = args + tuple(kwargs[n] if n in kwargs else defaults[n] for n in names[len(args):])
            except KeyError as missing:
                raise TypeError(f"{func.__qualname__}() missing argument {missing}") from None
            key = tuple(_hashable(values[i]) for i in keyed)
            found, value = results.get(key)
            if not found:
                value = read_only(func(*args, **kwargs))
                results.put(key, value)
            return value

        cached.clear = results.clear  # type: ignore[attr-defined]
        return cached

    return decorate


def clear_shared_caches() -> None:
    """Forget every shared result (tests that rebuild a page's charts under other settings)."""
    with _CACHES_LOCK:
        for results in _CACHES.values():
            results.clear()
