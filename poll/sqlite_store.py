"""`SQLitePollStore`: the poll in one SQLite file (WAL mode), shared by every process on the machine.

A connection per call: nothing is carried between calls, so a database that failed (an unwritable file, a full
disk) is tried afresh on the next call, and a forked process never shares a connection. Writes start with
``BEGIN IMMEDIATE``: the write lock is taken before the first read, so a check (is the round still open?) and
the write it allows cannot be split by another process. A busy database is waited for up to `busy_timeout_ms`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from poll.errors import DatabaseUnavailableError
from poll.exercise_sql import SqlExerciseRounds
from poll.schema import TABLES
from poll.sql_store import Cursor, SqlPollStore

T = TypeVar("T")
UNAVAILABLE = ("The poll's storage cannot be used right now, so nothing was recorded. Try again in a moment; "
               "if it keeps failing, tell the lecturer.")


class SQLitePollStore(SqlPollStore, SqlExerciseRounds):
    """The poll in the SQLite database at `path` (made, with its directory, on first use)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time, busy_timeout_ms: int = 10_000) -> None:
        super().__init__(clock)
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._schema_ready = False

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: the module starts no transaction of its own; `_run` says BEGIN and COMMIT.
        connection = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None)
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            if not self._schema_ready:
                connection.execute("PRAGMA journal_mode = WAL")
                _in_transaction(connection, _create_tables, write=True)
                self._schema_ready = True
            connection.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            connection.close()
            raise
        return connection

    def _run(self, operation: Callable[[Cursor], T], write: bool) -> T:
        try:
            connection = self._connect()
        except (sqlite3.Error, OSError) as error:
            raise DatabaseUnavailableError(UNAVAILABLE) from error
        try:
            return _in_transaction(connection, operation, write)
        except sqlite3.Error as error:
            raise DatabaseUnavailableError(UNAVAILABLE) from error
        finally:
            connection.close()


def _create_tables(cur: Cursor) -> None:
    for statement in TABLES:
        cur.execute(statement)


def _in_transaction(connection: sqlite3.Connection, operation: Callable[[Cursor], T], write: bool) -> T:
    connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        result = operation(connection.cursor())
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    return result
