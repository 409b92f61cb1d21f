"""One process's class poll: the store, its caches, the presenter key and its throttle, made once per configuration.

Both sides of the poll use it: the pages (`ui.class_poll`, `ui.poll_presenter`) and the HTTP routes that answer
without a script run (`ui.poll_watch`, `ui.poll_results`). It imports none of them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import streamlit as st

from poll import (
    PollError,
    PollStore,
    PresenterKey,
    PresenterKeyGuard,
    RoundStates,
    VersionCache,
    VoterHasher,
    data_dir,
    exercise_state,
    open_store,
    presenter_key,
)
from poll.factory import DATA_DIR_ENV, DATABASE_URL_ENV
from poll.presenter_key import PRESENTER_KEY_ENV

#: How old a quiz's version may be when a session reads it (`VersionCache`: one store read per quiz per interval).
VERSION_MAX_AGE_S = 0.5


@dataclass(frozen=True)
class PollServices:
    """One process's poll: the store, the version cache, the students' round states (the quizzes' and the
    exercise's), the presenter key and its throttle."""

    store: PollStore
    versions: VersionCache
    states: RoundStates
    key: PresenterKey
    guard: PresenterKeyGuard
    exercise_states: RoundStates


_services: dict[tuple[str, ...], PollServices] = {}
_hashers: dict[int, VoterHasher] = {}
_services_lock = threading.Lock()


def _secret_key() -> str | None:
    """``presenter_key`` from ``.streamlit/secrets.toml``, if there is one."""
    try:
        value = st.secrets.get("presenter_key")
    except Exception:  # noqa: BLE001 - no secrets file (or an unreadable one): the environment or a generated key
        return None
    return value if isinstance(value, str) else None


def services() -> PollServices:
    """This process's poll for its configuration, made once (raises `PollError` if it cannot be configured)."""
    config = (os.environ.get(DATABASE_URL_ENV, ""), os.environ.get(DATA_DIR_ENV, ""),
              os.environ.get(PRESENTER_KEY_ENV, ""))
    with _services_lock:
        found = _services.get(config)
        if found is None:
            store = open_store()
            key = presenter_key(_secret_key(), data_dir())
            versions = VersionCache(store, VERSION_MAX_AGE_S)
            exercise_states = RoundStates(store, versions, read=lambda page: exercise_state(store.exercise_round(page)))
            found = PollServices(store, versions, RoundStates(store, versions), key, PresenterKeyGuard(key),
                                 exercise_states)
            _services[config] = found
    return found


def voter_hasher(store: PollStore) -> VoterHasher:
    """The store's hasher, read from the database once per process (a failed read is tried again next time)."""
    with _services_lock:
        found = _hashers.get(id(store))
    if found is None:
        found = store.voter_hasher()
        with _services_lock:
            _hashers[id(store)] = found
    return found


def announce_presenter_key() -> str | None:
    """At the server's start (`ui.warmup.lifespan`): log a generated presenter key once, or why there is none.

    A configured key (secrets or environment) is never logged. Returns what was logged.
    """
    from streamlit.logger import get_logger

    log = get_logger("attention")
    try:
        key = services().key
    except PollError as error:
        log.warning("Class poll: %s The poll's lecturer controls will say so.", error)
        return str(error)
    if key.source != "generated":
        return None
    line = f"Class poll: the presenter key is {key.value} (type it in presenter mode to open a quiz to the class)."
    log.warning(line)
    return line
