"""The class poll at its edges, in Chromium over two app processes behind nginx: an idle student's page over many
changes of a round, one browser's tabs, a download while the lecturer's panel ticks, the presenter key's
throttle across reloads."""

from __future__ import annotations

import time

from poll import Question, open_store
from tests.browser.test_class_poll import (  # noqa: F401 - fixtures: this module's own cluster
    IDLE_PAGE,
    IDLE_QUIZ,
    REACHES_MS,
    poll_cluster,
    poll_data,
    process_routes,
    routed_context,
)
from ui.poll_watch import ROUND_STATE_PATH, STUDENT_EVERY_S

#: Changes of the round an idle page lives through: open, then lock, reveal, new round, again and again.
CHANGES = 20
#: How long the idle page is watched after them (seconds).
IDLE_S = 10.0


class Traffic:
    """What a page sends for the poll: its asks of the round-state route, and its websocket messages (every
    fragment or script run starts with one)."""

    def __init__(self, page) -> None:
        self.asks = 0
        self.runs = 0
        page.on("request", self._request)
        page.on("websocket", lambda ws: ws.on("framesent", self._frame))

    def _request(self, request) -> None:
        self.asks += ROUND_STATE_PATH in request.url

    def _frame(self, frame) -> None:
        self.runs += 1

    def reset(self) -> tuple[int, int]:
        counted, self.asks, self.runs = (self.asks, self.runs), 0, 0
        return counted


def question(quiz: str) -> Question:
    return Question(quiz=quiz, text="Which one?", options=("this", "that"), answer="this", explanation="Because.")


def test_an_idle_page_keeps_one_timer_over_many_changes_of_the_round(poll_cluster, poll_data, process_routes,
                                                                     browser):
    """Every change reaches the page with one fragment run; afterwards the idle page asks the route once per
    interval and runs no script, as it did before the first change."""
    context = routed_context(browser, poll_cluster, process_routes[0][2])
    page = context.new_page()
    traffic = Traffic(page)
    page.goto(f"{poll_cluster.url}/{IDLE_PAGE}")
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=90_000)
    page.wait_for_timeout(2000)  # the first run's last messages
    store = open_store(data_directory=poll_data)
    traffic.reset()
    current = None
    for change in range(CHANGES):
        stage = change % 4
        if stage == 0:
            current = (store.open_round(IDLE_QUIZ, question(IDLE_QUIZ)) if current is None
                       else store.new_round(current.id))
            shows = f"Class poll, round {current.number}"
        elif stage == 1:
            store.lock(current.id)
            shows = "answers are closed"
        elif stage == 2:
            store.reveal(current.id)
            shows = "You did not answer this round"
        else:
            current = store.new_round(current.id)
            shows = f"Class poll, round {current.number}"
        page.get_by_text(shows).last.wait_for(timeout=REACHES_MS)
    during = traffic.reset()
    store.end_round(current.id)
    page.get_by_text("Class poll, round").first.wait_for(state="detached", timeout=REACHES_MS)
    page.wait_for_timeout(int(STUDENT_EVERY_S * 1000))  # the closing run's last messages
    traffic.reset()
    page.wait_for_timeout(int(IDLE_S * 1000))
    asks, runs = traffic.reset()
    print(f"over {CHANGES} changes: {during[0]} asks, {during[1]} websocket messages; "
          f"then idle {IDLE_S:.0f} s: {asks} asks, {runs} websocket messages")
    assert during[1] <= 2 * CHANGES, f"{during[1]} websocket messages for {CHANGES} changes"
    assert runs == 0, f"the idle page ran the script: {runs} websocket messages in {IDLE_S} s"
    assert asks <= IDLE_S / STUDENT_EVERY_S + 1, f"{asks} asks in {IDLE_S} s: more than one timer"
    context.close()
