"""The exercise's class round: what a round, a student's recorded result and a round's summary are (frozen values),
and the interface a store keeps them behind (`ExerciseRoundStore`).

A lecturer opens a round on the exercise's page; while it is open, every "Check my code" of a student's browser
records that student's latest result (`CheckResult`: its kind, the first check that failed and the mistake's kind,
as the server's checker found them), how many checks it took and when. No code and no text of the student's is
stored. One row per student per round, as in the poll: a student is the keyed hash of a browser's token
(`poll.voters`), so two tabs of one browser are one student. A page's current round is its latest; a new round
closes the one before, which is kept.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from poll.errors import MalformedInputError
from poll.limits import NAME
from poll.voters import Voter

PASSED = "passed"
#: The checklist's length: a failed check's number is 1 to this.
MAX_CHECK = 6
#: The most checks one record may stand for (a student's checks while the database was away, sent at once).
MAX_ATTEMPTS_AT_ONCE = 1_000


@dataclass(frozen=True)
class CheckResult:
    """A check's result as the store keeps it: `kind` (``passed``, ``failed``, ``did_not_finish``, ...), the first
    failed check's number and the mistake's kind (names, as `exercise.mistake_kinds` writes them)."""

    kind: str
    failed_check: int | None = None
    mistake: str | None = None

    def __post_init__(self) -> None:
        for value in (self.kind, self.mistake):
            if value is not None and (not isinstance(value, str) or not NAME.fullmatch(value)):
                raise MalformedInputError("The check's result is not well formed.")
        if self.failed_check is not None and (type(self.failed_check) is not int
                                              or not 1 <= self.failed_check <= MAX_CHECK):
            raise MalformedInputError("The check's result is not well formed.")

    @property
    def passed(self) -> bool:
        return self.kind == PASSED


@dataclass(frozen=True)
class ExerciseRound:
    """One round of the exercise on a page. Results are recorded while `closed_at` is None; `shown_at` is set once
    the lecturer showed the class its summary, and None again once it was hidden. Times are aware datetimes in UTC."""

    id: str
    page: str
    number: int
    opened_at: datetime
    closed_at: datetime | None = None
    shown_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    @property
    def is_shown(self) -> bool:
        return self.shown_at is not None


@dataclass(frozen=True)
class StudentResult:
    """A student's row in a round: the latest result, the checks so far, and how many it took to pass first (None:
    not passed yet). `student` is the voter's digest: never shown, never exported."""

    student: str
    result: CheckResult
    attempts: int
    attempts_to_pass: int | None
    first_at: datetime
    last_at: datetime


@dataclass(frozen=True)
class RoundSummary:
    """A round in numbers, from its students' rows: how many checked, how many pass now, the checks each took to
    pass first (sorted), and the latest results that do not pass, each with its number of students, largest first
    (ties in a fixed order: by kind, check and mistake)."""

    checked: int
    passed: int
    attempts_to_pass: tuple[int, ...]
    not_passing: tuple[tuple[CheckResult, int], ...]

    @property
    def median_attempts(self) -> float | None:
        return statistics.median(self.attempts_to_pass) if self.attempts_to_pass else None

    def top(self, n: int) -> tuple[tuple[CheckResult, int], ...]:
        return self.not_passing[:n]


def summarise(rows: tuple[StudentResult, ...]) -> RoundSummary:
    """The round's numbers, counted from `rows` (each student once, by their latest result)."""
    failing = Counter(row.result for row in rows if not row.result.passed)
    order = sorted(failing.items(), key=lambda item: (-item[1], item[0].kind, item[0].failed_check or 0,
                                                      item[0].mistake or ""))
    return RoundSummary(
        checked=len(rows), passed=sum(row.result.passed for row in rows),
        attempts_to_pass=tuple(sorted(r.attempts_to_pass for r in rows if r.attempts_to_pass is not None)),
        not_passing=tuple(order))


def checked_attempts(value: object) -> int:
    if type(value) is not int or not 1 <= value <= MAX_ATTEMPTS_AT_ONCE:
        raise MalformedInputError("The number of checks is not well formed.")
    return value


def checked_student(value: object) -> Voter:
    if not isinstance(value, Voter):
        raise MalformedInputError("The student is not well formed.")
    return value


class ExerciseRoundStore(Protocol):
    """The exercise's rounds per page, one current (the latest) per page, one row per student per round."""

    def open_exercise_round(self, page: str) -> ExerciseRound:
        """Open a new round on `page` (its current round, if open, is closed and kept)."""
        ...

    def close_exercise_round(self, round_id: str) -> ExerciseRound:
        """Record no more results in the current round `round_id` (again: no change)."""
        ...

    def show_exercise_round(self, round_id: str) -> ExerciseRound:
        """Mark the current round `round_id` shown to the class (its summary on every student's page)."""
        ...

    def hide_exercise_round(self, round_id: str) -> ExerciseRound:
        """Take the current round `round_id`'s summary off the students' pages again (not shown; again: no
        change)."""
        ...

    def exercise_round(self, page: str) -> ExerciseRound | None:
        """The page's current round (its latest, open or closed), or None before the first."""
        ...

    def exercise_rounds(self, page: str) -> tuple[ExerciseRound, ...]:
        """Every round of `page`, oldest first."""
        ...

    def record_result(self, round_id: str, student: Voter, result: CheckResult, attempts: int = 1) -> None:
        """Record `student`'s latest result after `attempts` more checks (more than one: checks made while the
        database was away). Raises `UnknownRoundError`, `StaleRoundError` (a later round opened),
        `RoundLockedError` (closed), `MalformedInputError` or `DatabaseUnavailableError`; then nothing was recorded."""
        ...

    def record_check(self, page: str, student: Voter, result: CheckResult, attempts: int = 1,
                     attempts_round: str | None = None) -> ExerciseRound | None:
        """What a "Check my code" records: `student`'s result in `page`'s current round if it is open, in one write
        (no round read first); returns that round (None before the first; a closed round recorded nothing).
        `attempts` counts only if `attempts_round` is None or the round recorded in (checks made while the
        database was away, in the round the student last knew); else the record is one check."""
        ...

    def exercise_results(self, round_id: str) -> tuple[StudentResult, ...]:
        """The round's rows, in the order the students first checked."""
        ...

    def exercise_result_of(self, round_id: str, student: Voter) -> StudentResult | None:
        """`student`'s row in the round, or None."""
        ...
