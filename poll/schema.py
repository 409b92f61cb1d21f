"""The poll's tables, in SQL that SQLite and PostgreSQL both take (``?`` placeholders; PostgreSQL's store
translates them).

- `poll_pages`: per page, its current round and its version (raised by every change on the page). Every write
  updates the page's row first, so writes on one page take turns (in PostgreSQL, the row's lock; in SQLite,
  ``BEGIN IMMEDIATE`` already serialises all writers).
- `poll_rounds`: every round ever opened; the question as JSON-free columns except the options (a JSON list).
- `poll_votes`: one row per voter per round (the primary key), holding the option's index.
- `poll_secret`: the voter hasher's secret, made once by whichever process needed it first.
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
)
