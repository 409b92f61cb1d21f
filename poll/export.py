"""A page's poll results as CSV: one row per round and option, with the round's times, for the lecturer."""

from __future__ import annotations

import csv
import io
from datetime import datetime

from poll.rounds import Round
from poll.store import PollStore

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


def results_csv(store: PollStore, page: str) -> str:
    """Every round of `page`, oldest first (times in UTC, ISO 8601; empty while not yet locked or revealed)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for poll_round in store.rounds(page):
        writer.writerows(_rows(store, poll_round))
    return out.getvalue()
