"""The line for long work: at most `AT_ONCE` trainings of this process run at a time; the others wait in line,
first come first served, each seeing its place, the runs ahead of it and an estimate of the wait.

A job is one piece of long work (a training run) named by a key: sessions asking for the same key (the decoder's
shared run of a setting) hold one place between them and start together. A session holds its place inside
``with LINE.place(…)`` and leaves the line when the block ends, however it ends: the run finished, the student
changed a setting or left (Streamlit stops a session's script when its browser goes, at its next drawing call). A
block ended by a stopped script keeps its job's place or slot for `REJOIN_S`, so that a rerun of the same session
(Train pressed again) takes it back rather than going to the back of the line.
A session that has neither waited nor reported progress for `LEAVE_AFTER_S` is taken out of the line too, so a
place never outlives its student. A job's place is freed when its last session leaves, and the longest waiter
gets it.

The wait is estimated from the seconds per unit of work (a training step) that the chunks of work of the same kind
took on this server, recently: the jobs training finish their remaining units, the jobs ahead theirs, each taking
the first slot that frees.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

from ui import turns

#: Trainings of one process that run at once: one, so that a page body always finds the other of the process's
#: `ui.turns.RUNS_AT_ONCE` turns free of training.
AT_ONCE = max(1, turns.RUNS_AT_ONCE - 1)
#: A session that has not waited or trained for this long has gone: its place is given up.
LEAVE_AFTER_S = 15.0
#: A job whose last session was stopped (Streamlit stops a script for a rerun: its student pressed Train again,
#: or moved a control) keeps its place, or its slot, this long for the session's next run to take back.
REJOIN_S = 3.0
#: How often a waiting session redraws its place in line (and shows it is still there).
POLL_S = 1.0
#: Weight of the newest chunk in the measured seconds per unit of work (an exponential average).
RATE_WEIGHT = 0.2


@dataclass(frozen=True)
class InLine:
    """Where a waiting job stands: its `place` (1: the next to start), the jobs `training` now and the jobs
    `waiting` ahead of it, and its estimated wait (None until a chunk of its kind was measured)."""

    place: int
    training: int
    waiting: int
    wait_s: float | None

    def sentence(self) -> str:
        """What the waiting student reads."""
        ahead = f"{self.training} training now" + (f", {self.waiting} waiting ahead of you" if self.waiting else "")
        if self.wait_s is None:
            when = ""
        elif self.wait_s < 90:
            when = f" · about {max(1, round(self.wait_s))} s to go"
        else:
            when = f" · about {round(self.wait_s / 60)} min to go"
        return f"Waiting in line: you are number {self.place} ({ahead}){when}. It starts by itself."


@dataclass
class _Job:
    key: Hashable
    kind: str
    units: int  # the work to do, e.g. training steps
    done: int
    order: int  # arrival: the line is kept in this order
    seats: dict[int, float] = field(default_factory=dict)  # a session's seat -> when it was last heard of
    started: bool = False
    left_at: float | None = None  # when its last session was stopped, if it has none now


class WorkLine:
    """At most `at_once` jobs hold a slot; the rest wait in the order they came. ``clock`` is the time source
    (a test's own)."""

    def __init__(self, at_once: int = AT_ONCE, leave_after_s: float = LEAVE_AFTER_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if at_once < 1:
            raise ValueError(f"at_once must be at least 1, got {at_once}")
        self.at_once, self.leave_after_s, self._clock = at_once, leave_after_s, clock
        self._jobs: dict[Hashable, _Job] = {}
        self._rates: dict[str, float] = {}  # kind -> seconds per unit, measured
        self._changed = threading.Condition()
        self._seats = itertools.count()
        self._arrivals = itertools.count()

    @contextlib.contextmanager
    def place(self, key: Hashable, kind: str, units: int, done: int = 0) -> Iterator[Place]:
        """A place in line for `key`'s job (`units` of work of `kind`, `done` of them done already), given up when
        the block ends."""
        seat = Place(self, key, kind, units, done, next(self._seats))
        with self._changed:
            self._sit(seat)
        try:
            yield seat
        except BaseException:
            with self._changed:
                self._leave(key, seat.seat, rejoin=True)
            raise
        with self._changed:
            self._leave(key, seat.seat)

    def training(self) -> list[Hashable]:
        """The keys holding a slot now."""
        with self._changed:
            self._expire()
            return [j.key for j in self._jobs.values() if j.started]

    def waiting(self) -> list[Hashable]:
        """The keys waiting, first in line first."""
        with self._changed:
            self._expire()
            return [j.key for j in self._in_line()]

    # Everything below runs under `self._changed`.

    def _sit(self, seat: Place) -> None:
        job = self._jobs.get(seat.key)
        if job is None:
            job = self._jobs[seat.key] = _Job(seat.key, seat.kind, seat.units, seat.done, next(self._arrivals))
        job.seats[seat.seat], job.left_at = self._clock(), None
        self._start_next()

    def _leave(self, key: Hashable, seat: int, rejoin: bool = False) -> None:
        """`seat` leaves `key`'s job; a job left without a session goes, at once or (`rejoin`) after `REJOIN_S`."""
        job = self._jobs.get(key)
        if job is not None:
            job.seats.pop(seat, None)
            if not job.seats and rejoin:
                job.left_at = self._clock()
            elif not job.seats:
                del self._jobs[key]
        self._start_next()

    def _expire(self) -> None:
        """Give up the seats not heard of for `leave_after_s`, and the jobs left without one for `REJOIN_S`."""
        now = self._clock()
        for job in list(self._jobs.values()):
            for seat, heard in list(job.seats.items()):
                if now - heard > self.leave_after_s:
                    self._leave(job.key, seat)
            if job.left_at is not None and now - job.left_at > REJOIN_S:
                self._jobs.pop(job.key, None)
                self._start_next()

    def _in_line(self) -> list[_Job]:
        """The jobs waiting with a session, in the order they came."""
        return sorted((j for j in self._jobs.values() if not j.started and j.seats), key=lambda j: j.order)

    def _start_next(self) -> None:
        free = self.at_once - sum(j.started for j in self._jobs.values())
        for job in self._in_line()[:max(0, free)]:
            job.started = True
        self._changed.notify_all()

    def _standing(self, key: Hashable) -> InLine:
        line = self._in_line()
        place = next(k for k, j in enumerate(line) if j.key == key)
        training = [j for j in self._jobs.values() if j.started]
        return InLine(place + 1, len(training), place, self._wait_s(training, line[:place]))

    def _wait_s(self, training: list[_Job], ahead: list[_Job]) -> float | None:
        """When a slot frees for the job after `ahead`: each slot finishes its job, then takes the next in line."""
        if any(j.kind not in self._rates for j in training + ahead):
            return None
        slots = [max(0, j.units - j.done) * self._rates[j.kind] for j in training]
        slots += [0.0] * (self.at_once - len(slots))
        heapq.heapify(slots)
        for job in ahead:
            heapq.heappush(slots, heapq.heappop(slots) + job.units * self._rates[job.kind])
        return slots[0]


class Place:
    """A session's place in `WorkLine`: `wait` until its job holds a slot, `progress` after each chunk."""

    def __init__(self, line: WorkLine, key: Hashable, kind: str, units: int, done: int, seat: int) -> None:
        self.line, self.key, self.kind, self.units, self.done, self.seat = line, key, kind, units, done, seat
        self._since: float | None = None  # when the last chunk ended (or the slot was found)

    def _heard(self) -> _Job:
        """The job, with this seat marked as heard of now; a seat given up for silence sits down again (at the
        back of the line, unless its job still holds a slot)."""
        line = self.line
        line._expire()
        job = line._jobs.get(self.key)
        if job is None or self.seat not in job.seats:
            line._sit(self)
            job = line._jobs[self.key]
        job.seats[self.seat] = line._clock()
        return job

    def standing(self) -> InLine | None:
        """None if the job holds a slot, else where it stands in line."""
        line = self.line
        with line._changed:
            if self._heard().started:
                self._since = self._since or line._clock()
                return None
            return line._standing(self.key)

    def wait(self, timeout_s: float) -> InLine | None:
        """None once the job holds a slot; else wait up to `timeout_s` for one (outside this thread's turn, so
        the rest of the app runs meanwhile) and say where the job stands."""
        if self.standing() is None:
            return None
        line = self.line
        with turns.outside_turn(), line._changed:
            line._changed.wait_for(lambda: self._heard().started, timeout_s)
            if self._heard().started:
                self._since = line._clock()
                return None
            return line._standing(self.key)

    def chunks(self, show_wait: Callable[[InLine], None], poll_s: float = POLL_S) -> Iterator[None]:
        """Yield once per chunk of work, each time in a slot: wait in line first (`show_wait` of where the job
        stands, every `poll_s`), and let the rest of the app's waiting runs go before each chunk."""
        while True:
            standing = self.standing()
            while standing is not None:
                show_wait(standing)
                standing = self.wait(poll_s)
            turns.next_turn()  # the class's waiting steps go between two chunks
            yield

    def progress(self, done: int) -> None:
        """The job has `done` units of work done: measure the seconds per unit since the last report."""
        line = self.line
        with line._changed:
            job = self._heard()
            now = line._clock()
            if self._since is not None and done > self.done:
                rate = (now - self._since) / (done - self.done)
                old = line._rates.get(self.kind)
                line._rates[self.kind] = rate if old is None else (1 - RATE_WEIGHT) * old + RATE_WEIGHT * rate
            self._since, self.done = now, done
            job.done = max(job.done, done)


#: The process's line: every page's long work waits in it.
LINE = WorkLine()
