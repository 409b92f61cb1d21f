"""`ui.poll_results`: the lecturer's CSV from the app's own route, behind the link the presenter panel gives (the
download in Chromium while the panel ticks: tests/browser/test_poll_edges.py)."""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest
from starlette.requests import Request

from poll.export import COLUMNS
from tests.ui.test_class_poll import QUIZ, answered, button, open_round, send, student, the_answer
from ui import poll_results, poll_watch

pytestmark = pytest.mark.usefixtures("poll_env")


def fetch(link: str) -> tuple[int, str, dict[str, str]]:
    """The route's status, text and headers for the page-relative `link`."""
    path, _, query = link.partition("?")
    assert path == poll_results.RESULTS_PATH
    scope = {"type": "http", "method": "GET", "path": poll_watch.route_path(path), "query_string": query.encode(),
             "headers": []}
    with ThreadPoolExecutor(1) as thread:
        response = thread.submit(asyncio.run, poll_results.results_endpoint(Request(scope))).result()
    return response.status_code, response.body.decode(), dict(response.headers)


def panel_link(lecturer) -> str:
    (link,) = [b.proto.url for b in lecturer.get("link_button") if b.proto.label == "Download results"]
    return link


def test_the_panels_link_downloads_every_rounds_counts_and_stays_the_same_across_runs():
    lecturer = open_round()
    answer, _ = the_answer(lecturer)
    send(student(), answer)
    assert answered(lecturer) == 1
    link = panel_link(lecturer)
    lecturer.run()
    assert panel_link(lecturer) == link  # the same element on every tick of the panel
    status, text, headers = fetch(link)
    assert status == 200 and headers["content-type"].startswith("text/csv")
    assert headers["content-disposition"] == f'attachment; filename="poll-{QUIZ}.csv"'
    assert headers["cache-control"] == "no-store"
    rows = text.strip().splitlines()
    assert rows[0] == ",".join(COLUMNS) and len(rows) == 1 + len(lecturer.radio(key=f"quiz_{QUIZ}_choice").options)
    button(lecturer, "new").click().run()
    assert len(fetch(link)[1].strip().splitlines()) == 1 + 2 * (len(rows) - 1)  # read when asked, not when drawn


def test_a_link_not_signed_for_its_quiz_or_expired_is_refused():
    lecturer = open_round()
    link = panel_link(lecturer)
    params = dict(urllib.parse.parse_qsl(link.partition("?")[2]))
    assert params["quiz"] == QUIZ and int(params["until"]) > time.time()

    def with_(**changed: str) -> str:
        return f"{poll_results.RESULTS_PATH}?{urllib.parse.urlencode({**params, **changed})}"

    assert fetch(with_(quiz="multi_head"))[0] == 403  # another quiz's results
    assert fetch(with_(sig="0" * 64))[0] == 403
    assert fetch(with_(until=str(int(params["until"]) + 1)))[0] == 403
    assert fetch(with_(until="123"))[0] == 403  # long past
    assert fetch(with_(quiz="../etc"))[0] == 400
    assert fetch(with_())[0] == 200


def test_the_route_is_served_beside_the_round_state():
    assert [route.path for route in poll_watch.poll_routes()] == ["/api/poll/round-state", "/api/poll/exercise-state",
                                                                  "/api/poll/results.csv",
                                                                  "/api/poll/exercise-results.csv"]
