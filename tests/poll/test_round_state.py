"""`round_state` names what a student's screen shows of a page's poll; `RoundStates` serves it cheaply to every
browser that asks (`ui.poll_watch`'s route)."""

from __future__ import annotations

import pytest

from poll import NO_ROUND, DatabaseUnavailableError, RoundStates, VersionCache, round_state
from tests.poll.conftest import question
from tests.poll.test_version_cache import FakeClock


def test_each_stage_of_a_round_has_its_own_state_and_a_vote_changes_none(store):
    page = "multi_head"
    seen = [round_state(store.current_round(page))]
    first = store.open_round(page, question())
    seen.append(round_state(store.current_round(page)))
    store.vote(first.id, store.voter_hasher().voter("a" * 22), question().options[0])
    assert round_state(store.current_round(page)) == seen[-1]
    store.lock(first.id)
    seen.append(round_state(store.current_round(page)))
    store.reveal(first.id)
    seen.append(round_state(store.current_round(page)))
    second = store.new_round(first.id)
    seen.append(round_state(store.current_round(page)))
    store.end_round(second.id)
    seen.append(round_state(store.current_round(page)))
    assert seen == [NO_ROUND, "1-open", "1-locked", "1-revealed", "2-open", NO_ROUND]


class CountingStore:
    """A store's version and current round, counting the reads."""

    def __init__(self, real) -> None:
        self.real = real
        self.round_reads = 0
        self.down = False

    def version(self, page: str) -> int:
        if self.down:
            raise DatabaseUnavailableError("down")
        return self.real.version(page)

    def current_round(self, page: str):
        self.round_reads += 1
        return self.real.current_round(page)


def test_the_round_is_read_only_when_the_version_moved_and_fresh_never_reads(store):
    counting, clock = CountingStore(store), FakeClock()
    states = RoundStates(counting, VersionCache(counting, max_age_s=0.5, clock=clock))
    assert states.fresh("multi_head") is None
    assert [states.state("multi_head") for _ in range(100)] == [NO_ROUND] * 100
    assert counting.round_reads == 1 and states.fresh("multi_head") == NO_ROUND
    opened = store.open_round("multi_head", question())
    assert states.state("multi_head") == NO_ROUND  # the version's reading is still young
    clock.now += 0.5
    assert states.fresh("multi_head") is None  # old: the route asks off the event loop
    assert states.state("multi_head") == "1-open" and counting.round_reads == 2
    store.vote(opened.id, store.voter_hasher().voter("b" * 22), question().options[1])
    clock.now += 0.5
    assert states.state("multi_head") == "1-open" and counting.round_reads == 3  # a vote moved the version
    clock.now += 0.5
    assert states.state("multi_head") == "1-open" and counting.round_reads == 3


def test_a_failed_read_raises_and_is_not_kept(store):
    counting, clock = CountingStore(store), FakeClock()
    states = RoundStates(counting, VersionCache(counting, max_age_s=0.5, clock=clock))
    counting.down = True
    with pytest.raises(DatabaseUnavailableError):
        states.state("multi_head")
    counting.down = False
    assert states.state("multi_head") == NO_ROUND


def test_it_keeps_at_most_max_pages_states(store):
    states = RoundStates(store, VersionCache(store, max_age_s=10.0), max_pages=2)
    for page in ["a", "b", "c"]:
        states.state(page)
    assert states.fresh("a") is None and states.fresh("c") == NO_ROUND and len(states._kept) == 2


def test_an_exercise_rounds_state_moves_on_open_close_show_and_new_round_but_not_on_a_result(store):
    from poll import CheckResult, exercise_state

    versions = VersionCache(store, max_age_s=0.0)
    states = RoundStates(store, versions, read=lambda page: exercise_state(store.exercise_round(page)))
    assert states.state("exercise_class") == "none"
    opened = store.open_exercise_round("exercise_class")
    assert states.state("exercise_class") == "1-open"
    store.record_check("exercise_class", store.voter_hasher().voter("t" * 30), CheckResult("passed"))
    assert states.state("exercise_class") == "1-open"
    store.show_exercise_round(opened.id)
    assert states.state("exercise_class") == "1-open-shown"
    store.close_exercise_round(opened.id)
    assert states.state("exercise_class") == "1-closed-shown"
    store.open_exercise_round("exercise_class")
    assert states.state("exercise_class") == "2-open"
