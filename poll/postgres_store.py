"""`PostgresPollStore`: the poll in PostgreSQL (psycopg 3), for app processes on several machines.

Connections are kept in a small pool per process (at most `max_connections` at once) and dropped on any
connection failure, so a server that went away and came back is reached again on a later call without a
restart. A call that fails on a pooled connection before its transaction committed is tried once more on a
new connection (nothing of it was committed, and the pooled connection may merely be stale from a restart);
a failure while committing is reported, never retried. Writes serialise per page on the page's row
(`poll.schema`); counts are always read from the tables.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg

from poll.errors import DatabaseUnavailableError, PollError
from poll.exercise_sql import SqlExerciseRounds
from poll.schema import TABLES
from poll.sql_store import Cursor, SqlPollStore

T = TypeVar("T")
UNAVAILABLE = ("The poll's database cannot be reached right now, so nothing was recorded. Try again in a moment; "
               "if it keeps failing, tell the lecturer.")
UNCONFIRMED = ("The poll's database stopped answering while saving, so your answer may not have been recorded. "
               "Send it again: a second send replaces the first.")
#: Any fixed number: the advisory lock that makes concurrent first starts create the tables once.
SCHEMA_LOCK = 36_0001
#: A statement (waiting for a page's turn included) that takes longer is cancelled and reported, never left hanging.
STATEMENT_TIMEOUT_MS = 15_000
CONNECTION_FAILURES = (psycopg.OperationalError, psycopg.InterfaceError)


class _QmarkCursor:
    """A psycopg cursor taking the rules' ``?`` placeholders (the rules' SQL has no other ``?`` or ``%``)."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._cursor.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()


class _CommitFailedError(Exception):
    """The connection failed on COMMIT: whether the transaction was committed is unknown."""


class PostgresPollStore(SqlPollStore, SqlExerciseRounds):
    """The poll in the PostgreSQL database at `url` (``postgresql://user:password@host:port/dbname``)."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time, connect_timeout_s: int = 5,
                 max_connections: int = 8) -> None:
        super().__init__(clock)
        self._url = url
        self._connect_timeout_s = connect_timeout_s
        self._slots = threading.BoundedSemaphore(max_connections)
        self._idle: list[psycopg.Connection[Any]] = []
        self._idle_lock = threading.Lock()
        self._pid = os.getpid()
        self._schema_ready = False

    def _connect(self) -> psycopg.Connection[Any]:
        connection = psycopg.connect(self._url, autocommit=True, connect_timeout=self._connect_timeout_s)
        try:
            connection.execute("SELECT set_config('statement_timeout', %s, false)", (str(STATEMENT_TIMEOUT_MS),))
            if not self._schema_ready:
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    for statement in TABLES:
                        connection.execute(statement)
                self._schema_ready = True
        except BaseException:
            connection.close()
            raise
        return connection

    def _checkout(self) -> tuple[psycopg.Connection[Any], bool]:
        """A connection, and whether it was pooled (used before). A forked child never takes its parent's."""
        with self._idle_lock:
            if self._pid != os.getpid():
                self._idle, self._pid = [], os.getpid()
            while self._idle:
                connection = self._idle.pop()
                if not connection.closed:
                    return connection, True
        return self._connect(), False

    def _checkin(self, connection: psycopg.Connection[Any]) -> None:
        with self._idle_lock:
            if self._pid == os.getpid() and not connection.closed:
                self._idle.append(connection)

    def _run(self, operation: Callable[[Cursor], T], write: bool) -> T:
        with self._slots:
            try:
                return self._attempt(operation)
            except _CommitFailedError as failure:
                raise DatabaseUnavailableError(UNCONFIRMED) from failure.__cause__
            except psycopg.Error as first:
                if not (isinstance(first, CONNECTION_FAILURES) and getattr(first, "pooled", False)):
                    raise DatabaseUnavailableError(UNAVAILABLE) from first
            try:
                return self._attempt(operation)
            except _CommitFailedError as failure:
                raise DatabaseUnavailableError(UNCONFIRMED) from failure.__cause__
            except psycopg.Error as second:
                raise DatabaseUnavailableError(UNAVAILABLE) from second

    def _attempt(self, operation: Callable[[Cursor], T]) -> T:
        """One try: the transaction on one connection. A connection failure closes it and is re-raised marked
        `pooled` when the connection came from the pool and failed before COMMIT."""
        connection, pooled = self._checkout()
        committing = False
        try:
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                try:
                    result = operation(_QmarkCursor(cursor))
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                committing = True
                cursor.execute("COMMIT")
        except CONNECTION_FAILURES as error:
            connection.close()
            if committing:
                raise _CommitFailedError() from error
            error.pooled = pooled  # type: ignore[attr-defined]
            raise
        except PollError:
            self._checkin(connection)  # a refusal by the rules: rolled back, the connection is sound
            raise
        except BaseException:
            connection.close()  # its state after an unexpected error is unknown
            raise
        self._checkin(connection)
        return result

    def close(self) -> None:
        """Close the pooled connections (the store stays usable: later calls connect again)."""
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
