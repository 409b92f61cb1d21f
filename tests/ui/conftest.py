"""Fixtures shared by the tests of `ui`."""

from __future__ import annotations

import pytest

#: The presenter key of the class poll's tests.
POLL_KEY = "a-lecturers-key-of-some-length"


@pytest.fixture
def poll_env(tmp_path, monkeypatch):
    """The class poll of this test alone: SQLite in its own data directory, `POLL_KEY` as the presenter key."""
    monkeypatch.setenv("ATTENTION_POLL_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATTENTION_PRESENTER_KEY", POLL_KEY)
    monkeypatch.delenv("ATTENTION_POLL_DATABASE_URL", raising=False)
    return tmp_path
