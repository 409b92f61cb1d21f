"""`SqlExerciseRounds`: the exercise's class rounds in the poll's database, written once in SQL both databases run.

A mix-in of the concrete stores (`SQLitePollStore`, `PostgresPollStore`), beside `SqlPollStore`: the same `_run`
(one transaction, the database's failures turned into `DatabaseUnavailableError`) and the same write turns. Every
write takes its page's turn first (`poll.sql_store.lock_page`, which raises the page's version), so "is the round
still the open, current one?" and the write it allows are never split by another process, and a page's watchers
see every recorded result as a new version. A result is one upsert: the student's row keeps the latest result, adds
the checks and keeps the number of checks the first pass took.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from poll.errors import RoundLockedError, StaleRoundError, UnknownRoundError
from poll.exercise_rounds import (
    PASSED,
    CheckResult,
    ExerciseRound,
    StudentResult,
    checked_attempts,
    checked_student,
)
from poll.limits import checked_name, checked_round_id
from poll.sql_store import Cursor, lock_page
from poll.voters import Voter

T = TypeVar("T")
ROUND_COLUMNS = "id, page, number, opened_at, closed_at, shown_at"
RESULT_COLUMNS = "student, kind, failed_check, mistake, attempts, attempts_to_pass, first_at, last_at"
UNKNOWN = "This exercise round is not one the lecturer opened (the link may be mistyped or old)."
STALE = "This exercise round is over: the lecturer has started another one."
CLOSED = "The lecturer has closed this exercise round: your result was not counted."


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def _round_of(row: Sequence[Any]) -> ExerciseRound:
    round_id, page, number, opened, closed, shown = row
    return ExerciseRound(id=round_id, page=page, number=int(number), opened_at=_time(opened),
                         closed_at=_time(closed), shown_at=_time(shown))


def _result_of(row: Sequence[Any]) -> StudentResult:
    student, kind, failed_check, mistake, attempts, to_pass, first, last = row
    return StudentResult(student=student, result=CheckResult(kind, failed_check, mistake), attempts=int(attempts),
                         attempts_to_pass=to_pass, first_at=_time(first), last_at=_time(last))


def _latest(cur: Cursor, page: str) -> ExerciseRound | None:
    cur.execute(f"SELECT {ROUND_COLUMNS} FROM exercise_rounds WHERE page = ? ORDER BY number DESC LIMIT 1", (page,))
    row = cur.fetchone()
    return None if row is None else _round_of(row)


def _current_for_update(cur: Cursor, round_id: str) -> ExerciseRound:
    """The round `round_id`, once its page's write turn is taken, if it is still the page's latest."""
    cur.execute("SELECT page FROM exercise_rounds WHERE id = ?", (round_id,))
    row = cur.fetchone()
    if row is None:
        raise UnknownRoundError(UNKNOWN)
    lock_page(cur, row[0])
    latest = _latest(cur, row[0])
    if latest is None or latest.id != round_id:
        raise StaleRoundError(STALE)
    return latest


class SqlExerciseRounds(ABC):
    """`poll.exercise_rounds.ExerciseRoundStore` over the store's `_run` and `_clock`."""

    _clock: Callable[[], float]

    @abstractmethod
    def _run(self, operation: Callable[[Cursor], T], write: bool) -> T: ...

    def open_exercise_round(self, page: str) -> ExerciseRound:
        page = checked_name(page, "page")

        def operation(cur: Cursor) -> ExerciseRound:
            lock_page(cur, page)
            now = self._clock()
            previous = _latest(cur, page)
            if previous is not None:
                cur.execute("UPDATE exercise_rounds SET closed_at = COALESCE(closed_at, ?) WHERE id = ?",
                            (now, previous.id))
            new = ExerciseRound(id=secrets.token_urlsafe(24), page=page,
                                number=1 if previous is None else previous.number + 1, opened_at=_time(now))
            cur.execute(f"INSERT INTO exercise_rounds ({ROUND_COLUMNS}) VALUES (?, ?, ?, ?, NULL, NULL)",
                        (new.id, page, new.number, now))
            return new

        return self._run(operation, write=True)

    def close_exercise_round(self, round_id: str) -> ExerciseRound:
        return self._mark(round_id, "closed_at = COALESCE(closed_at, ?)")

    def show_exercise_round(self, round_id: str) -> ExerciseRound:
        return self._mark(round_id, "shown_at = COALESCE(shown_at, ?)")

    def hide_exercise_round(self, round_id: str) -> ExerciseRound:
        return self._mark(round_id, "shown_at = NULL", timed=False)

    def _mark(self, round_id: str, assignment: str, timed: bool = True) -> ExerciseRound:
        """Change the current round `round_id` by `assignment` (given the time as its one parameter if `timed`)."""
        round_id = checked_round_id(round_id)

        def operation(cur: Cursor) -> ExerciseRound:
            _current_for_update(cur, round_id)
            cur.execute(f"UPDATE exercise_rounds SET {assignment} WHERE id = ?",
                        (self._clock(), round_id) if timed else (round_id,))
            cur.execute(f"SELECT {ROUND_COLUMNS} FROM exercise_rounds WHERE id = ?", (round_id,))
            return _round_of(cur.fetchone())

        return self._run(operation, write=True)

    def exercise_round(self, page: str) -> ExerciseRound | None:
        page = checked_name(page, "page")
        return self._run(lambda cur: _latest(cur, page), write=False)

    def exercise_rounds(self, page: str) -> tuple[ExerciseRound, ...]:
        page = checked_name(page, "page")

        def operation(cur: Cursor) -> tuple[ExerciseRound, ...]:
            cur.execute(f"SELECT {ROUND_COLUMNS} FROM exercise_rounds WHERE page = ? ORDER BY number", (page,))
            return tuple(_round_of(row) for row in cur.fetchall())

        return self._run(operation, write=False)

    def record_result(self, round_id: str, student: Voter, result: CheckResult, attempts: int = 1) -> None:
        round_id = checked_round_id(round_id)
        student, result, attempts = _checked_record(student, result, attempts)

        def operation(cur: Cursor) -> None:
            if not _current_for_update(cur, round_id).is_open:
                raise RoundLockedError(CLOSED)
            _upsert(cur, round_id, student, result, attempts, self._clock())

        self._run(operation, write=True)

    def record_check(self, page: str, student: Voter, result: CheckResult, attempts: int = 1,
                     attempts_round: str | None = None) -> ExerciseRound | None:
        page = checked_name(page, "page")
        student, result, attempts = _checked_record(student, result, attempts)

        def operation(cur: Cursor) -> ExerciseRound | None:
            lock_page(cur, page)
            current = _latest(cur, page)
            if current is not None and current.is_open:
                counted = attempts if attempts_round in (None, current.id) else 1
                _upsert(cur, current.id, student, result, counted, self._clock())
            return current

        return self._run(operation, write=True)

    def exercise_results(self, round_id: str) -> tuple[StudentResult, ...]:
        round_id = checked_round_id(round_id)

        def operation(cur: Cursor) -> tuple[StudentResult, ...]:
            _fetch_round(cur, round_id)
            cur.execute(f"SELECT {RESULT_COLUMNS} FROM exercise_results WHERE round_id = ? ORDER BY first_at, student",
                        (round_id,))
            return tuple(_result_of(row) for row in cur.fetchall())

        return self._run(operation, write=False)

    def exercise_result_of(self, round_id: str, student: Voter) -> StudentResult | None:
        round_id = checked_round_id(round_id)
        student = checked_student(student)

        def operation(cur: Cursor) -> StudentResult | None:
            cur.execute(f"SELECT {RESULT_COLUMNS} FROM exercise_results WHERE round_id = ? AND student = ?",
                        (round_id, student.digest))
            row = cur.fetchone()
            return None if row is None else _result_of(row)

        return self._run(operation, write=False)


def _checked_record(student: object, result: object, attempts: object) -> tuple[Voter, CheckResult, int]:
    if not isinstance(result, CheckResult):
        raise TypeError("a result is a poll.CheckResult")
    return checked_student(student), result, checked_attempts(attempts)


def _upsert(cur: Cursor, round_id: str, student: Voter, result: CheckResult, attempts: int, now: float) -> None:
    """The student's row: the latest result, `attempts` more checks, and the checks the first pass took."""
    to_pass = attempts if result.passed else None
    cur.execute(f"INSERT INTO exercise_results (round_id, {RESULT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (round_id, student) DO UPDATE SET kind = excluded.kind, "
                "failed_check = excluded.failed_check, mistake = excluded.mistake, "
                "attempts = exercise_results.attempts + excluded.attempts, "
                "attempts_to_pass = COALESCE(exercise_results.attempts_to_pass, "
                "CASE WHEN excluded.kind = ? THEN exercise_results.attempts + excluded.attempts END), "
                "last_at = excluded.last_at",
                (round_id, student.digest, result.kind, result.failed_check, result.mistake, attempts,
                 to_pass, now, now, PASSED))


def _fetch_round(cur: Cursor, round_id: str) -> ExerciseRound:
    cur.execute(f"SELECT {ROUND_COLUMNS} FROM exercise_rounds WHERE id = ?", (round_id,))
    row = cur.fetchone()
    if row is None:
        raise UnknownRoundError(UNKNOWN)
    return _round_of(row)
