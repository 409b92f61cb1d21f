"""The poll's tables, in SQL that SQLite and PostgreSQL both take (``?`` placeholders; PostgreSQL's store
translates them).

- `poll_pages`: per page, its current round and its version (raised by every change on the page). Every write
  updates the page's row first, so writes on one page take turns (in PostgreSQL, the row's lock; in SQLite,
  ``BEGIN IMMEDIATE`` already serialises all writers).
- `poll_rounds`: every round ever opened; the question as JSON-free columns except the options (a JSON list).
- `poll_votes`: one row per voter per round (the primary key), holding the option's index.
- `poll_secret`: the voter hasher's secret, made once by whichever process needed it first.
- `exercise_rounds`: every round of the exercise ever opened on a page (`poll.exercise_rounds`); its page's row in
  `poll_pages` holds its version and write turn (its `current_round` stays NULL: the current round is the latest).
- `exercise_results`: one row per student per exercise round: the latest result's kind, failed check and mistake,
  the checks so far and the checks the first pass took. No code or text of the student's.

A database made before a table existed gets it at the next start of a store (every statement is ``IF NOT EXISTS``).
"""

from __future__ import annotations

TABLES = (
    """CREATE TABLE IF NOT EXISTS poll_pages (
        page TEXT PRIMARY KEY,
        version BIGINT NOT NULL,
        current_round TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS poll_rounds (
        id TEXT PRIMARY KEY,
        page TEXT NOT NULL,
        quiz TEXT NOT NULL,
        number INTEGER NOT NULL,
        question TEXT NOT NULL,
        options TEXT NOT NULL,
        answer TEXT NOT NULL,
        explanation TEXT NOT NULL,
        settings TEXT NOT NULL,
        opened_at DOUBLE PRECISION NOT NULL,
        locked_at DOUBLE PRECISION,
        revealed_at DOUBLE PRECISION,
        UNIQUE (page, quiz, number)
    )""",
    "CREATE INDEX IF NOT EXISTS poll_rounds_by_page ON poll_rounds (page, opened_at)",
    """CREATE TABLE IF NOT EXISTS poll_votes (
        round_id TEXT NOT NULL REFERENCES poll_rounds (id),
        voter TEXT NOT NULL,
        option INTEGER NOT NULL,
        voted_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (round_id, voter)
    )""",
    """CREATE TABLE IF NOT EXISTS poll_secret (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS exercise_rounds (
        id TEXT PRIMARY KEY,
        page TEXT NOT NULL,
        number INTEGER NOT NULL,
        opened_at DOUBLE PRECISION NOT NULL,
        closed_at DOUBLE PRECISION,
        shown_at DOUBLE PRECISION,
        UNIQUE (page, number)
    )""",
    """CREATE TABLE IF NOT EXISTS exercise_results (
        round_id TEXT NOT NULL REFERENCES exercise_rounds (id),
        student TEXT NOT NULL,
        kind TEXT NOT NULL,
        failed_check INTEGER,
        mistake TEXT,
        attempts INTEGER NOT NULL,
        attempts_to_pass INTEGER,
        first_at DOUBLE PRECISION NOT NULL,
        last_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (round_id, student)
    )""",
)
