"""`ui.turns`: page bodies take turns, first come first served; a wait or a long job lets the others go."""

from __future__ import annotations

import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from ui import turns
from ui.turns import Turns

WAIT_S = 30.0  # a bound on any wait here; nothing is timed


def started(target, name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.005)


def test_no_more_than_the_turns_run_at_once():
    lock, at_once, inside = Turns(2), [], threading.Semaphore(0)
    running = [0]
    guard = threading.Lock()

    def run() -> None:
        lock.take()
        with guard:
            running[0] += 1
            at_once.append(running[0])
        inside.acquire(timeout=WAIT_S)  # held until the test lets one go
        with guard:
            running[0] -= 1
        lock.give_back()

    threads = [started(run, f"run {k}") for k in range(6)]
    wait_until(lambda: len(at_once) == 2, "two runs in")
    time.sleep(0.05)  # a third would have come in by now
    assert len(at_once) == 2
    for _ in threads:
        inside.release()
    for t in threads:
        t.join(WAIT_S)
    assert len(at_once) == 6 and max(at_once) == 2


def test_a_freed_turn_goes_to_the_longest_waiter_not_back_to_its_giver():
    lock, order = Turns(1), []
    lock.take()  # the test holds the only turn
    for k, name in enumerate(("first", "second", "third")):
        started(lambda name=name: (lock.take(), order.append(name), lock.give_back()), name)
        wait_until(lambda k=k: len(lock._waiting) == k + 1, f"{name} waiting")  # queued in this order
    lock.give_back()
    lock.take()  # queues behind the three: they all go first
    assert order == ["first", "second", "third"]
    lock.give_back()


def test_turns_must_be_at_least_one():
    with pytest.raises(ValueError, match="at least 1"):
        Turns(0)


@pytest.fixture
def one_turn(monkeypatch):
    monkeypatch.setattr(turns, "_turns", Turns(1))


def test_nested_blocks_share_the_outer_turn(one_turn):
    with turns.turn():
        with turns.turn():  # with one turn, a second take would wait for ever
            assert turns.holding()
        assert turns.holding()
    assert not turns.holding()


def test_an_error_gives_the_turn_back(one_turn):
    with pytest.raises(RuntimeError), turns.turn():
        raise RuntimeError("a page's error")
    other = started(lambda: turns.turn().__enter__(), "other")
    other.join(WAIT_S)
    assert not other.is_alive()  # it got the turn


def test_a_run_waiting_outside_its_turn_lets_another_run(one_turn):
    events = []
    outside, other_done = threading.Event(), threading.Event()

    def waiter() -> None:
        with turns.turn():
            with turns.outside_turn():
                events.append("waiting outside")
                outside.set()
                other_done.wait(WAIT_S)
            events.append("back in")

    def other() -> None:
        outside.wait(WAIT_S)
        with turns.turn():
            events.append("other ran")
        other_done.set()

    threads = [started(waiter, "waiter"), started(other, "other")]
    for t in threads:
        t.join(WAIT_S)
    assert events == ["waiting outside", "other ran", "back in"]


def test_next_turn_lets_every_waiting_run_go_first(one_turn):
    events, queued = [], threading.Event()

    def long_job() -> None:
        with turns.turn():
            events.append("chunk 1")
            queued.wait(WAIT_S)
            wait_until(lambda: len(turns._turns._waiting) == 2, "two steps waiting")
            turns.next_turn()
            events.append("chunk 2")

    def step(name: str) -> None:
        with turns.turn():
            events.append(name)

    job = started(long_job, "training")
    wait_until(lambda: events == ["chunk 1"], "the job's first chunk")
    steps = [started(lambda n=n: step(n), n) for n in ("step a", "step b")]
    queued.set()
    for t in (job, *steps):
        t.join(WAIT_S)
    assert events[0] == "chunk 1" and events[-1] == "chunk 2" and set(events[1:3]) == {"step a", "step b"}


def test_next_turn_outside_any_turn_does_nothing():
    turns.next_turn()
    assert not turns.holding()


PAGE = """
import streamlit as st
from ui import turns
from ui.layout import page_fragment

@page_fragment
def body():
    st.markdown(f"in a turn: {turns.holding()}")

body()
st.markdown(f"after the body: {turns.holding()}")
"""


def test_a_page_body_runs_in_a_turn_and_gives_it_back():
    at = AppTest.from_string(PAGE, default_timeout=60).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["in a turn: True", "after the body: False"]
