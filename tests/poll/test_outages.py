"""A database that cannot be used is reported, nothing is recorded silently, and the poll works again once the
database is back, without a new store (no restart)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from poll import DatabaseUnavailableError, new_browser_token, open_store
from poll.postgres_store import PostgresPollStore
from poll.sqlite_store import SQLitePollStore
from tests.helpers.unprivileged import CAN_SWITCH_USER, IS_ROOT, as_user, python_installations
from tests.poll.conftest import question, running_postgres

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534  # the user id and group id the root run takes
PAGE = "permutation"


def test_a_database_path_that_is_a_directory_is_reported(tmp_path):
    (tmp_path / "poll.sqlite3").mkdir()
    store = SQLitePollStore(tmp_path / "poll.sqlite3")
    with pytest.raises(DatabaseUnavailableError, match="nothing was recorded"):
        store.open_round(PAGE, question())
    with pytest.raises(DatabaseUnavailableError):
        store.current_round(PAGE)


def test_a_data_directory_that_cannot_be_made_is_reported_then_the_store_recovers(tmp_path):
    (tmp_path / "data").write_text("a file where the data directory should be")
    store = open_store(data_directory=tmp_path / "data", env={})
    with pytest.raises(DatabaseUnavailableError, match="Try again in a moment"):
        store.version(PAGE)
    (tmp_path / "data").unlink()
    opened = store.open_round(PAGE, question())
    assert store.current_round(PAGE) == opened


UNWRITABLE_SCRIPT = """
    import os, sys
    from pathlib import Path
    from poll import DatabaseUnavailableError, Question, new_browser_token
    from poll.sqlite_store import SQLitePollStore

    data = Path(sys.argv[1])
    store = SQLitePollStore(data / "poll.sqlite3")
    hasher = store.voter_hasher()
    opened = store.open_round("permutation", Question("q", "?", ("it grows", "nothing"), "nothing", "."))
    store.vote(opened.id, hasher.voter(new_browser_token()), "nothing")
    os.chmod(data / "poll.sqlite3", 0o444)
    os.chmod(data, 0o555)
    late = hasher.voter(new_browser_token())
    try:
        store.vote(opened.id, late, "nothing")
    except DatabaseUnavailableError as error:
        print("refused:", error)
    os.chmod(data, 0o755)
    os.chmod(data / "poll.sqlite3", 0o644)
    store.vote(opened.id, late, "it grows")
    print("counts:", store.counts(opened.id).votes)
"""


def test_an_unwritable_database_file_is_reported_then_the_store_recovers():
    """chmod does not stop root, so as root the same steps run as `nobody`, with this Python and the app reachable
    (`tests.helpers.unprivileged`); otherwise as this user."""
    data = Path(tempfile.mkdtemp(prefix="attention-poll-unwritable-"))
    command = [sys.executable, "-c", textwrap.dedent(UNWRITABLE_SCRIPT), str(data)]
    try:
        if IS_ROOT:
            if not CAN_SWITCH_USER:
                pytest.skip("as root, the unwritable file needs setpriv and unshare (util-linux) to run as nobody")
            os.chown(data, NOBODY, NOBODY)
            command = as_user(NOBODY, command, [*python_installations(), ROOT])
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        shutil.rmtree(data, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refused: The poll's storage cannot be used right now, so nothing was recorded" in done.stdout
    assert "counts: (1, 1)" in done.stdout, done.stdout


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own, to stop and start again."""
    yield from running_postgres()


def test_postgresql_stopped_in_the_middle_of_a_round_is_reported_then_the_store_recovers(own_postgres):
    store = PostgresPollStore(own_postgres.url, connect_timeout_s=2)
    hasher = store.voter_hasher()
    first, late = hasher.voter(new_browser_token()), hasher.voter(new_browser_token())
    opened = store.open_round(PAGE, question())
    store.vote(opened.id, first, "it grows")
    own_postgres.stop()
    for call in (lambda: store.vote(opened.id, late, "nothing"), lambda: store.version(PAGE),
                 lambda: store.counts(opened.id)):
        with pytest.raises(DatabaseUnavailableError, match="cannot be reached"):
            call()
    own_postgres.start()
    store.vote(opened.id, late, "it shrinks")
    assert store.counts(opened.id).votes == (1, 1, 0)
    assert store.vote_of(opened.id, first) == "it grows" and store.current_round(PAGE) == opened


def test_pooled_connections_broken_by_a_restart_are_replaced_without_an_error(own_postgres):
    store = PostgresPollStore(own_postgres.url)
    opened = store.open_round(PAGE, question())
    own_postgres.stop()
    own_postgres.start()
    assert store.current_round(PAGE) == opened  # the pooled connection died with the old server
