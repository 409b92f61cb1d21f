"""`ui.work_line`: long work waits in line for a slot, first come first served, sees where it stands and an
estimate of its wait, and leaves the line when its session stops waiting."""

from __future__ import annotations

import threading
import time

import pytest

from ui import turns
from ui.work_line import REJOIN_S, InLine, WorkLine

WAIT_S = 30.0  # a bound on any wait here; nothing is timed


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_line_says_each_waiter_s_place_and_a_wait_computed_from_the_measured_chunks():
    clock = Clock()
    line = WorkLine(at_once=1, clock=clock)
    with line.place("a", "step", 100) as a, line.place("b", "step", 50) as b, line.place("c", "step", 80) as c:
        assert a.wait(0) is None  # the free slot
        assert b.wait(0) == InLine(place=1, training=1, waiting=0, wait_s=None)  # nothing measured yet
        clock.now = 2.0
        a.progress(10)  # 10 steps in 2 s: 0.2 s a step
        assert b.wait(0) == InLine(1, 1, 0, pytest.approx(90 * 0.2))  # a's 90 steps left
        assert c.wait(0) == InLine(2, 1, 1, pytest.approx(90 * 0.2 + 50 * 0.2))  # then b's 50
        assert line.training() == ["a"] and line.waiting() == ["b", "c"]


def test_with_two_slots_the_wait_is_until_the_first_slot_that_frees():
    clock = Clock()
    line = WorkLine(at_once=2, clock=clock)
    with line.place("a", "step", 100) as a, line.place("b", "step", 20) as b, line.place("c", "step", 10) as c:
        a.wait(0), b.wait(0)
        clock.now = 1.0
        a.progress(10), b.progress(10)  # 0.1 s a step
        assert c.wait(0) == InLine(1, 2, 0, pytest.approx(10 * 0.1))  # b's 10 steps left, not a's 90


def test_the_sentence_a_waiting_student_reads():
    assert InLine(3, 1, 2, 41.6).sentence() == ("Waiting in line: you are number 3 (1 training now, 2 waiting ahead "
                                                "of you) · about 42 s to go. It starts by itself.")
    assert InLine(9, 1, 8, 233.0).sentence().endswith("ahead of you) · about 4 min to go. It starts by itself.")
    assert InLine(1, 1, 0, None).sentence() == ("Waiting in line: you are number 1 (1 training now). "
                                                "It starts by itself.")


def test_sessions_asking_for_the_same_work_share_its_slot_until_the_last_leaves():
    line = WorkLine(at_once=1)
    with line.place("shared", "step", 10) as first, line.place("other", "step", 10) as other:
        with line.place("shared", "step", 10) as second:
            assert first.wait(0) is None and second.wait(0) is None
            assert other.wait(0) is not None
        assert other.wait(0) is not None  # the first session still trains it
    with line.place("other", "step", 10) as other:
        assert other.wait(0) is None


def test_a_session_that_stops_leaves_the_line_and_the_next_starts():
    """A script stopped by Streamlit (its student changed a setting or left) raises out of the block: its slot is
    kept for `REJOIN_S`, for a rerun of the same session to take back, then the next in line starts."""
    clock = Clock()
    line = WorkLine(at_once=1, clock=clock)
    block = line.place("gone", "step", 10)
    gone = block.__enter__()
    with line.place("next", "step", 10) as waiting:
        assert gone.wait(0) is None and waiting.wait(0) is not None
        stopped = RuntimeError("the script was stopped")
        assert block.__exit__(RuntimeError, stopped, None) is False  # the exception goes on up
        assert waiting.wait(0) is not None
        clock.now = REJOIN_S + 0.1
        assert waiting.wait(0) is None
        assert line.training() == ["next"]


def test_a_session_that_presses_again_keeps_its_place_in_line_and_its_slot():
    """Train pressed again reruns the script: the old run's block ends with an exception, the new run sits down
    for the same work within `REJOIN_S` and finds its place, or its slot, where it was."""
    line = WorkLine(at_once=1)
    with line.place("first", "step", 10) as first:
        first.wait(0)
        with line.place("second", "step", 10) as second, line.place("third", "step", 10) as third:
            with pytest.raises(RuntimeError), line.place("second", "step", 10) as pressed_again:
                assert pressed_again.wait(0).place == 1
                raise RuntimeError("a rerun")
            assert second.wait(0).place == 1 and third.wait(0).place == 2
    with line.place("training", "step", 10) as training:
        assert training.wait(0) is None
        with pytest.raises(RuntimeError), line.place("mine", "step", 10):
            raise RuntimeError("a rerun")
    block = line.place("mine", "step", 10)
    with pytest.raises(RuntimeError), block as mine:
        assert mine.wait(0) is None
        raise RuntimeError("a rerun while training")
    with line.place("other", "step", 10) as other, line.place("mine", "step", 10) as again:
        assert other.wait(0).place == 1 and again.wait(0) is None  # the slot waited for its session


def test_first_come_first_served():
    line = WorkLine(at_once=1)
    with line.place("a", "step", 1) as a:
        a.wait(0)
        with line.place("b", "step", 1) as b, line.place("c", "step", 1) as c:
            assert b.wait(0).place == 1 and c.wait(0).place == 2
    assert line.training() == []


def test_a_session_not_heard_of_for_a_while_loses_its_place_and_finds_one_at_the_back():
    clock = Clock()
    line = WorkLine(at_once=1, leave_after_s=15.0, clock=clock)
    with line.place("silent", "step", 10) as silent, line.place("b", "step", 10) as b:
        assert silent.wait(0) is None
        clock.now = 10.0
        assert b.wait(0) is not None  # still within the silent one's time
        clock.now = 16.0
        assert b.wait(0) is None  # the silent one was 16 s quiet: its slot went to b
        assert silent.wait(0) == InLine(1, 1, 0, None)  # back, at the back of the line


def test_waiting_in_line_gives_the_page_turn_back():
    """Two sessions wait in line inside their page turns (both of the process's turns): a third page body still
    runs meanwhile."""
    line = WorkLine(at_once=1)
    ran, stop = threading.Event(), threading.Event()

    def waiter(key: str) -> None:
        with turns.turn(), line.place(key, "step", 1) as place:
            while place.wait(0.05) is not None and not stop.is_set():
                pass

    with line.place("holder", "step", 1) as holder:
        holder.wait(0)
        waiters = [threading.Thread(target=waiter, args=(k,), daemon=True) for k in ("w1", "w2")]
        for t in waiters:
            t.start()
        deadline = time.monotonic() + WAIT_S
        while len(line.waiting()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)

        def page_body() -> None:
            with turns.turn():
                ran.set()

        threading.Thread(target=page_body, daemon=True).start()
        assert ran.wait(WAIT_S), "a page body found no turn while two sessions waited in line"
        stop.set()
    for t in waiters:
        t.join(WAIT_S)
