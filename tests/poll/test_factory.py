"""Which store a configuration gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from poll import PollConfigError, data_dir, open_store
from poll.postgres_store import PostgresPollStore
from poll.sqlite_store import SQLitePollStore


def test_nothing_configured_gives_sqlite_in_the_data_directory(tmp_path):
    store = open_store(env={"ATTENTION_POLL_DATA_DIR": str(tmp_path)})
    assert isinstance(store, SQLitePollStore) and store.path == tmp_path / "poll.sqlite3"
    assert open_store(data_directory=tmp_path / "given", env={}).path == tmp_path / "given" / "poll.sqlite3"


def test_the_default_data_directory_follows_xdg():
    assert data_dir(env={"XDG_DATA_HOME": "/srv/data"}) == Path("/srv/data/attention-interactively")
    assert data_dir(env={}) == Path.home() / ".local" / "share" / "attention-interactively"


def test_a_postgresql_url_from_the_environment_or_the_caller_gives_postgresql():
    env = {"ATTENTION_POLL_DATABASE_URL": "postgresql://u@db.example/poll"}
    assert isinstance(open_store(env=env), PostgresPollStore)
    assert isinstance(open_store("postgres://u@db.example/poll", env={}), PostgresPollStore)


def test_a_sqlite_url_names_the_file(tmp_path):
    store = open_store(f"sqlite:///{tmp_path}/x.db", env={})
    assert isinstance(store, SQLitePollStore) and store.path == tmp_path / "x.db"


def test_an_unknown_url_is_refused_without_repeating_it():
    with pytest.raises(PollConfigError, match="must start with") as refused:
        open_store("mysql://user:hunter2@db/poll", env={})
    assert "hunter2" not in str(refused.value)
