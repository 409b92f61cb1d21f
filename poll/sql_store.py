"""`SqlPollStore`: the poll's rules, written once in SQL both databases run; a subclass only connects.

A subclass implements `_run(operation, write)`: call `operation` with a cursor inside one transaction (for a
write, one that holds the database's write lock or the page's row lock from its first update on), commit, and
turn the database's own failures into `DatabaseUnavailableError`. The rules here raise the other `PollError`s,
after which the subclass rolls back.
"""

from __future__ import annotations

import json
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from poll.errors import (
    InvalidQuestionError,
    MalformedInputError,
    RoundLockedError,
    StaleRoundError,
    UnknownOptionError,
    UnknownRoundError,
)
from poll.limits import OPTION_CHARS, checked_name, checked_round_id, checked_text
from poll.rounds import Counts, Question, Round
from poll.voters import SECRET_BYTES, Voter, VoterHasher

T = TypeVar("T")
ROUND_COLUMNS = ("id, page, quiz, number, question, options, answer, explanation, settings, opened_at, locked_at, "
                 "revealed_at")
VOTER_SECRET_NAME = "voter"


class Cursor(Protocol):
    """What the rules use of a DB-API cursor (sqlite3's, and psycopg's behind the placeholder translation)."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def _round_of(row: Sequence[Any]) -> Round:
    (round_id, page, quiz, number, text, options, answer, explanation, settings, opened, locked, revealed) = row
    question = Question(quiz=quiz, text=text, options=tuple(json.loads(options)), answer=answer,
                        explanation=explanation, settings=settings)
    return Round(id=round_id, page=page, number=number, question=question, opened_at=_time(opened),
                 locked_at=_time(locked), revealed_at=_time(revealed))


def _fetch_round(cur: Cursor, round_id: str) -> Round:
    cur.execute(f"SELECT {ROUND_COLUMNS} FROM poll_rounds WHERE id = ?", (round_id,))
    row = cur.fetchone()
    if row is None:
        raise UnknownRoundError("This question is not one the lecturer opened (the link may be mistyped or old).")
    return _round_of(row)


def lock_page(cur: Cursor, page: str) -> str | None:
    """Raise the page's version, taking its write turn; the page's current round id (after any earlier turn)."""
    cur.execute("INSERT INTO poll_pages (page, version, current_round) VALUES (?, 0, NULL) "
                "ON CONFLICT (page) DO NOTHING", (page,))
    cur.execute("UPDATE poll_pages SET version = version + 1 WHERE page = ? RETURNING current_round", (page,))
    return cur.fetchone()[0]


def _current_for_update(cur: Cursor, round_id: str) -> Round:
    """The round `round_id`, once its page's write turn is taken, if it is still the page's current round."""
    cur.execute("SELECT page FROM poll_rounds WHERE id = ?", (round_id,))
    row = cur.fetchone()
    if row is None:
        raise UnknownRoundError("This question is not one the lecturer opened (the link may be mistyped or old).")
    if lock_page(cur, row[0]) != round_id:
        raise StaleRoundError("This round is over: the lecturer has moved on. Reload the page to see the current "
                              "question.")
    return _fetch_round(cur, round_id)


def _close_answers(cur: Cursor, round_id: str, now: float) -> None:
    cur.execute("UPDATE poll_rounds SET locked_at = ? WHERE id = ? AND locked_at IS NULL", (now, round_id))


def _start_round(cur: Cursor, page: str, question: Question, previous: str | None, now: float) -> Round:
    """Open `question` as the page's current round (the page's write turn taken; `previous` its current round)."""
    if previous is not None:
        _close_answers(cur, previous, now)
    cur.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM poll_rounds WHERE page = ? AND quiz = ?",
                (page, question.quiz))
    number = int(cur.fetchone()[0])
    new = Round(id=secrets.token_urlsafe(24), page=page, number=number, question=question,
                opened_at=datetime.fromtimestamp(now, tz=UTC))
    cur.execute(f"INSERT INTO poll_rounds ({ROUND_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                (new.id, page, question.quiz, number, question.text, json.dumps(list(question.options)),
                 question.answer, question.explanation, question.settings, now))
    cur.execute("UPDATE poll_pages SET current_round = ? WHERE page = ?", (new.id, page))
    return new


def _checked_voter(voter: object) -> Voter:
    if not isinstance(voter, Voter):
        raise MalformedInputError("The voter is not well formed.")
    return voter


class SqlPollStore(ABC):
    """`poll.store.PollStore` over a DB-API database; `clock` gives the recorded times (seconds since the epoch)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._hasher: VoterHasher | None = None

    @abstractmethod
    def _run(self, operation: Callable[[Cursor], T], write: bool) -> T:
        """`operation(cursor)` in one transaction, committed; see the module's docstring."""

    # --- the lecturer's operations ----------------------------------------------------------------------------

    def open_round(self, page: str, question: Question) -> Round:
        page = checked_name(page, "page")
        if not isinstance(question, Question):
            raise InvalidQuestionError("Only a poll.Question can be opened.")

        def operation(cur: Cursor) -> Round:
            return _start_round(cur, page, question, lock_page(cur, page), self._clock())

        return self._run(operation, write=True)

    def new_round(self, round_id: str) -> Round:
        round_id = checked_round_id(round_id)

        def operation(cur: Cursor) -> Round:
            old = _current_for_update(cur, round_id)
            return _start_round(cur, old.page, old.question, old.id, self._clock())

        return self._run(operation, write=True)

    def end_round(self, round_id: str) -> Round:
        round_id = checked_round_id(round_id)

        def operation(cur: Cursor) -> Round:
            old = _current_for_update(cur, round_id)
            _close_answers(cur, old.id, self._clock())
            cur.execute("UPDATE poll_pages SET current_round = NULL WHERE page = ?", (old.page,))
            return _fetch_round(cur, round_id)

        return self._run(operation, write=True)

    def lock(self, round_id: str) -> Round:
        round_id = checked_round_id(round_id)

        def operation(cur: Cursor) -> Round:
            _close_answers(cur, _current_for_update(cur, round_id).id, self._clock())
            return _fetch_round(cur, round_id)

        return self._run(operation, write=True)

    def reveal(self, round_id: str) -> Round:
        round_id = checked_round_id(round_id)

        def operation(cur: Cursor) -> Round:
            _current_for_update(cur, round_id)
            now = self._clock()
            cur.execute("UPDATE poll_rounds SET locked_at = COALESCE(locked_at, ?), "
                        "revealed_at = COALESCE(revealed_at, ?) WHERE id = ?", (now, now, round_id))
            return _fetch_round(cur, round_id)

        return self._run(operation, write=True)

    # --- the students' operations -----------------------------------------------------------------------------

    def vote(self, round_id: str, voter: Voter, option: str) -> None:
        round_id = checked_round_id(round_id)
        voter = _checked_voter(voter)
        option = checked_text(option, "answer", OPTION_CHARS)

        def operation(cur: Cursor) -> None:
            current = _current_for_update(cur, round_id)
            if not current.accepts_votes:
                raise RoundLockedError("Answers to this question are closed: your answer was not recorded.")
            if option not in current.question.options:
                raise UnknownOptionError("That answer is not one of this question's options: nothing was recorded.")
            cur.execute("INSERT INTO poll_votes (round_id, voter, option, voted_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (round_id, voter) DO UPDATE SET option = excluded.option, "
                        "voted_at = excluded.voted_at",
                        (round_id, voter.digest, current.question.options.index(option), self._clock()))

        self._run(operation, write=True)

    def vote_of(self, round_id: str, voter: Voter) -> str | None:
        round_id = checked_round_id(round_id)
        voter = _checked_voter(voter)

        def operation(cur: Cursor) -> str | None:
            options = _fetch_round(cur, round_id).question.options
            cur.execute("SELECT option FROM poll_votes WHERE round_id = ? AND voter = ?", (round_id, voter.digest))
            row = cur.fetchone()
            return None if row is None else options[row[0]]

        return self._run(operation, write=False)

    # --- reading ------------------------------------------------------------------------------------------------

    def current_round(self, page: str) -> Round | None:
        page = checked_name(page, "page")

        def operation(cur: Cursor) -> Round | None:
            cur.execute(f"SELECT {', '.join('r.' + c for c in ROUND_COLUMNS.split(', '))} FROM poll_pages p "
                        "JOIN poll_rounds r ON r.id = p.current_round WHERE p.page = ?", (page,))
            row = cur.fetchone()
            return None if row is None else _round_of(row)

        return self._run(operation, write=False)

    def round(self, round_id: str) -> Round:
        round_id = checked_round_id(round_id)
        return self._run(lambda cur: _fetch_round(cur, round_id), write=False)

    def rounds(self, page: str) -> tuple[Round, ...]:
        page = checked_name(page, "page")

        def operation(cur: Cursor) -> tuple[Round, ...]:
            cur.execute(f"SELECT {ROUND_COLUMNS} FROM poll_rounds WHERE page = ? ORDER BY opened_at, id", (page,))
            return tuple(_round_of(row) for row in cur.fetchall())

        return self._run(operation, write=False)

    def counts(self, round_id: str) -> Counts:
        round_id = checked_round_id(round_id)

        def operation(cur: Cursor) -> Counts:
            options = _fetch_round(cur, round_id).question.options
            cur.execute("SELECT option, COUNT(*) FROM poll_votes WHERE round_id = ? GROUP BY option", (round_id,))
            by_index = {int(index): int(n) for index, n in cur.fetchall()}
            return Counts(round_id, options, tuple(by_index.get(i, 0) for i in range(len(options))))

        return self._run(operation, write=False)

    def version(self, page: str) -> int:
        page = checked_name(page, "page")

        def operation(cur: Cursor) -> int:
            cur.execute("SELECT version FROM poll_pages WHERE page = ?", (page,))
            row = cur.fetchone()
            return 0 if row is None else int(row[0])

        return self._run(operation, write=False)

    def voter_hasher(self) -> VoterHasher:
        if self._hasher is None:
            self._hasher = VoterHasher(bytes.fromhex(self._run(_voter_secret, write=True)))
        return self._hasher


def _voter_secret(cur: Cursor) -> str:
    cur.execute("INSERT INTO poll_secret (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                (VOTER_SECRET_NAME, secrets.token_hex(SECRET_BYTES)))
    cur.execute("SELECT value FROM poll_secret WHERE name = ?", (VOTER_SECRET_NAME,))
    return cur.fetchone()[0]
