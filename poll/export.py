"""A page's poll results as CSV: one row per round and option, with the round's times, for the lecturer; the
exercise's rounds as one row per round and student, the students numbered in each round (no identifier)."""

from __future__ import annotations

import csv
import io
from datetime import datetime

from poll.exercise_rounds import ExerciseRound
from poll.rounds import Round
from poll.store import PollStore

EXERCISE_COLUMNS = ("round", "student", "result", "failed_check", "mistake", "checks", "checks_to_pass",
                    "first_checked_at", "last_checked_at", "opened_at", "closed_at", "shown_at")
COLUMNS = ("round", "quiz", "question", "option", "correct", "count", "opened_at", "locked_at", "revealed_at",
           "settings")


def _iso(moment: datetime | None) -> str:
    return "" if moment is None else moment.isoformat(timespec="seconds")


def _rows(store: PollStore, poll_round: Round) -> list[tuple[object, ...]]:
    counts = store.counts(poll_round.id)
    question = poll_round.question
    return [(poll_round.number, question.quiz, question.text, option, option == question.answer, count,
             _iso(poll_round.opened_at), _iso(poll_round.locked_at), _iso(poll_round.revealed_at),
             question.settings)
            for option, count in zip(counts.options, counts.votes, strict=True)]


def _csv(columns: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return out.getvalue()


def results_csv(store: PollStore, page: str) -> str:
    """Every round of `page`, oldest first (times in UTC, ISO 8601; empty while not yet locked or revealed)."""
    return _csv(COLUMNS, [row for poll_round in store.rounds(page) for row in _rows(store, poll_round)])


def _exercise_rows(store: PollStore, exercise_round: ExerciseRound) -> list[tuple[object, ...]]:
    times = (_iso(exercise_round.opened_at), _iso(exercise_round.closed_at), _iso(exercise_round.shown_at))
    return [(exercise_round.number, i, row.result.kind, row.result.failed_check or "", row.result.mistake or "",
             row.attempts, row.attempts_to_pass or "", _iso(row.first_at), _iso(row.last_at), *times)
            for i, row in enumerate(store.exercise_results(exercise_round.id), start=1)]


def exercise_results_csv(store: PollStore, page: str) -> str:
    """Every exercise round of `page`, oldest first, a row per student in the order they first checked (times in
    UTC, ISO 8601). A student is a number within the round, never an identifier."""
    return _csv(EXERCISE_COLUMNS, [row for exercise_round in store.exercise_rounds(page)
                                   for row in _exercise_rows(store, exercise_round)])
