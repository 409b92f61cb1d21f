"""The poll's stores under test: every store test runs against SQLite and against a real PostgreSQL server.

The PostgreSQL server is started once per session from a temporary directory (`devtools.postgres`);
each test gets a schema of its own in it. Without Debian's binaries the PostgreSQL half is skipped with the
install hint.
"""

from __future__ import annotations

import multiprocessing
import secrets
import sys
from collections.abc import Iterator

import pytest

from devtools.postgres import INSTALL_HINT, PostgresServer, postgres_bin_dir
from poll import PollStore, Question, open_store

# The test process's own __main__, taken when pytest imports this file, before any test runs. A spawned child
# re-runs its parent's __main__ file, and every AppTest run installs its temporary script as __main__ and leaves
# it there, so a spawn after an AppTest in the same worker would start children that die on that script.
_PYTEST_MAIN = sys.modules["__main__"]


@pytest.fixture
def spawn_context(monkeypatch) -> multiprocessing.context.SpawnContext:
    """multiprocessing's spawn context, with the test process's own __main__ in place while the test runs."""
    monkeypatch.setitem(sys.modules, "__main__", _PYTEST_MAIN)
    return multiprocessing.get_context("spawn")


def running_postgres() -> Iterator[PostgresServer]:
    """A fixture's body: a new PostgreSQL server while the fixture lasts (skipped without the binaries)."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip(INSTALL_HINT)
    server = PostgresServer(bin_dir).start()
    yield server
    server.remove()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    yield from running_postgres()


def fresh_schema_url(server_url: str) -> str:
    """`server_url` with its connections' search path set to a new, empty schema."""
    import psycopg

    schema = f"test_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    return f"{server_url}?options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/poll.sqlite3"
    return fresh_schema_url(request.getfixturevalue("postgres_server").url)


@pytest.fixture
def store(database_url: str) -> Iterator[PollStore]:
    opened = open_store(database_url)
    yield opened
    getattr(opened, "close", lambda: None)()


def raw_rows(database_url: str, sql: str) -> list[tuple]:
    """The rows `sql` reads from the store's database directly, past the store."""
    if database_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(database_url.removeprefix("sqlite://")) as connection:
            return connection.execute(sql).fetchall()
    import psycopg

    with psycopg.connect(database_url) as connection:
        return connection.execute(sql).fetchall()


def question(quiz: str = "largest_weight", answer: str = "it shrinks",
             settings: str = "d_k=64&scaled=true") -> Question:
    return Question(quiz=quiz, text="What happens to the largest weight?",
                    options=("it grows", "it shrinks", "nothing"), answer=answer,
                    explanation="It drops from 0.93 to 0.41.", settings=settings)
