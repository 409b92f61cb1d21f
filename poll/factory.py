"""Which store a server uses, from its configuration: a database URL, else SQLite in the data directory.

- ``ATTENTION_POLL_DATABASE_URL`` (or the `database_url` argument): ``postgresql://…`` (or ``postgres://…``)
  for PostgreSQL, ``sqlite:///ABSOLUTE/PATH`` for a given SQLite file.
- Otherwise SQLite at ``DATA_DIR/poll.sqlite3``, where DATA_DIR is `data_dir`, else ``ATTENTION_POLL_DATA_DIR``,
  else ``$XDG_DATA_HOME/attention-interactively`` (``~/.local/share/attention-interactively``). Every process
  on the machine that uses the same directory shares the poll. The data directory also holds a generated
  presenter key (`poll.presenter_key`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from poll.errors import PollConfigError
from poll.store import PollStore

DATABASE_URL_ENV = "ATTENTION_POLL_DATABASE_URL"
DATA_DIR_ENV = "ATTENTION_POLL_DATA_DIR"
SQLITE_FILE_NAME = "poll.sqlite3"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_SCHEME = "sqlite:///"


def data_dir(configured: Path | None = None, env: Mapping[str, str] = os.environ) -> Path:
    """The poll's data directory (see the module's docstring); not created here."""
    if configured is not None:
        return Path(configured)
    if env.get(DATA_DIR_ENV):
        return Path(env[DATA_DIR_ENV])
    base = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else Path.home() / ".local" / "share"
    return base / "attention-interactively"


def open_store(database_url: str | None = None, data_directory: Path | None = None,
               env: Mapping[str, str] = os.environ) -> PollStore:
    """The store the configuration names. No connection is made until the first call on it."""
    url = database_url or env.get(DATABASE_URL_ENV, "")
    if url.startswith(POSTGRES_SCHEMES):
        from poll.postgres_store import PostgresPollStore  # psycopg is imported only where it is used

        return PostgresPollStore(url)
    from poll.sqlite_store import SQLitePollStore

    if url.startswith(SQLITE_SCHEME):
        return SQLitePollStore(Path("/" + url.removeprefix(SQLITE_SCHEME).lstrip("/")))
    if url:
        # The URL itself is not repeated: it may hold a password.
        raise PollConfigError(f"The poll's database URL ({DATABASE_URL_ENV}) must start with "
                              f"{' or '.join(POSTGRES_SCHEMES)} or {SQLITE_SCHEME}.")
    return SQLitePollStore(data_dir(data_directory, env) / SQLITE_FILE_NAME)
