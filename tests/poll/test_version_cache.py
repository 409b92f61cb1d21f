"""Many sessions of one process asking for a page's version cost one store reading per interval."""

from __future__ import annotations

import pytest

from poll import DatabaseUnavailableError, VersionCache
from tests.poll.conftest import question


class CountingStore:
    def __init__(self) -> None:
        self.reads: list[str] = []
        self.current = 7
        self.down = False

    def version(self, page: str) -> int:
        if self.down:
            raise DatabaseUnavailableError("down")
        self.reads.append(page)
        return self.current


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_store_is_read_once_per_interval_per_page():
    store, clock = CountingStore(), FakeClock()
    cache = VersionCache(store, max_age_s=0.5, clock=clock)
    assert [cache.version("multi_head") for _ in range(300)] == [7] * 300
    assert cache.version("permutation") == 7 and store.reads == ["multi_head", "permutation"]
    store.current = 8
    clock.now += 0.49
    assert cache.version("multi_head") == 7
    clock.now += 0.01
    assert cache.version("multi_head") == 8 and store.reads == ["multi_head", "permutation", "multi_head"]


def test_a_failed_reading_is_not_kept():
    store, clock = CountingStore(), FakeClock()
    cache = VersionCache(store, max_age_s=0.5, clock=clock)
    store.down = True
    with pytest.raises(DatabaseUnavailableError):
        cache.version("multi_head")
    store.down = False
    assert cache.version("multi_head") == 7 and store.reads == ["multi_head"]


def test_it_reads_a_real_store(store):
    cache = VersionCache(store, max_age_s=0.0)
    assert cache.version("multi_head") == 0
    store.open_round("multi_head", question())
    assert cache.version("multi_head") == store.version("multi_head") > 0


def test_fresh_answers_only_from_a_recent_reading_and_never_asks_the_store():
    store, clock = CountingStore(), FakeClock()
    cache = VersionCache(store, max_age_s=0.5, clock=clock)
    assert cache.fresh("multi_head") is None and store.reads == []
    cache.version("multi_head")
    assert cache.fresh("multi_head") == 7
    clock.now += 0.5
    assert cache.fresh("multi_head") is None and store.reads == ["multi_head"]


def test_it_keeps_at_most_max_pages_readings_the_oldest_going_first():
    store, clock = CountingStore(), FakeClock()
    cache = VersionCache(store, max_age_s=10.0, clock=clock, max_pages=3)
    for page in ["a", "b", "c", "d"]:
        cache.version(page)
    assert cache.fresh("a") is None and [cache.fresh(p) for p in "bcd"] == [7, 7, 7]
    assert len(cache._read) == 3
