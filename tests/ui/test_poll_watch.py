"""`ui.poll_watch`'s route: the round state of a quiz, for any browser, from the process's poll; and where it is
served. (That a student's page asks it instead of rerunning, and reruns when it changes, is checked in Chromium:
tests/browser/test_class_poll.py.)"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
import streamlit as st
from starlette.requests import Request

from poll import NO_ROUND, DatabaseUnavailableError, Question, open_store
from ui import poll_services, poll_watch

pytestmark = pytest.mark.usefixtures("poll_env")


def ask(query: bytes) -> tuple[int, str, str | None]:
    """The route's status, text and Cache-Control for ``GET ...?{query}``."""
    scope = {"type": "http", "method": "GET", "path": poll_watch.route_path(), "query_string": query,
             "headers": []}
    with ThreadPoolExecutor(1) as thread:  # a loop of its own, whatever loop this worker's earlier tests left
        response = thread.submit(asyncio.run, poll_watch.round_state_endpoint(Request(scope))).result()
    return response.status_code, response.body.decode(), response.headers.get("cache-control")


def test_it_answers_each_stage_of_a_round_uncached(poll_env):
    assert ask(b"quiz=scaling_16x") == (200, NO_ROUND, "no-store")
    store = open_store(data_directory=poll_env)
    opened = store.open_round("scaling_16x", Question(quiz="scaling_16x", text="Which?", options=("a", "b"),
                                                      answer="a", explanation="Because."))
    poll_services.services().versions._read.clear()  # as if half a second had passed
    assert ask(b"quiz=scaling_16x") == (200, "1-open", "no-store")
    store.reveal(opened.id)
    poll_services.services().versions._read.clear()
    assert ask(b"quiz=scaling_16x")[:2] == (200, "1-revealed")
    assert ask(b"quiz=multi_head")[:2] == (200, NO_ROUND)


@pytest.mark.parametrize("query", [b"", b"quiz=", b"quiz=..%2Fetc", b"quiz=" + b"a" * 65, b"quiz=a%00b",
                                   b"quiz=%F0%9F%98%80"], ids=["none", "empty", "path", "long", "nul", "emoji"])
def test_a_malformed_quiz_name_is_refused_and_nothing_is_read(query, monkeypatch):
    monkeypatch.setattr(poll_watch, "services", lambda: pytest.fail("the poll was read"))
    status, text, _ = ask(query)
    assert status == 400 and "quiz" in text


def test_an_unreadable_database_is_a_503_not_a_traceback(monkeypatch):
    def down(page: str) -> int:
        raise DatabaseUnavailableError("The class poll's database cannot be reached.")

    poll = poll_services.services()
    poll.versions._read.clear()
    monkeypatch.setattr(poll.store, "version", down)
    assert ask(b"quiz=scaling_16x") == (503, "poll unavailable", "no-store")


def test_the_route_is_under_the_servers_base_path(monkeypatch):
    assert poll_watch.route_path() == "/api/poll/round-state"
    monkeypatch.setattr(st, "get_option", lambda name: "/lectures/" if name == "server.baseUrlPath" else None)
    assert poll_watch.route_path() == "/lectures/api/poll/round-state"
    assert [route.path for route in poll_watch.poll_routes()] == ["/lectures/api/poll/round-state",
                                                                  "/lectures/api/poll/exercise-state",
                                                                  "/lectures/api/poll/results.csv",
                                                                  "/lectures/api/poll/exercise-results.csv"]
