"""The class poll at its edges, in Chromium over two app processes behind nginx: an idle student's page over many
changes of a round, one browser's tabs, a download while the lecturer's panel ticks, the presenter key's
throttle across reloads."""

from __future__ import annotations

import itertools
import re
import threading
import time

from playwright.sync_api import expect

from devtools.browser import settle
from poll import Question, new_browser_token, open_store
from poll.key_guard import ThrottlePolicy
from tests.browser.test_class_poll import (  # noqa: F401 - fixtures: this module's own cluster
    IDLE_PAGE,
    IDLE_QUIZ,
    KEY,
    REACHES_MS,
    lecturer_panel,
    poll_cluster,
    poll_data,
    poll_panel,
    process_routes,
    routed_context,
)
from ui.class_poll import VOTER_COOKIE
from ui.poll_presenter import PRESENTER_EVERY_S
from ui.poll_watch import ROUND_STATE_PATH, STUDENT_EVERY_S

#: The page and quiz of the tests of tabs (the idle page's test has its own).
EDGE_PAGE, EDGE_QUIZ = "soft_lookup", "soft_lookup_cold"
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


def vote(page, option: str) -> None:
    panel = poll_panel(page)
    panel.get_by_text(option, exact=True).click()
    panel.get_by_role("button", name="Send my answer").click()
    page.get_by_text(f"Answer recorded: {option}").wait_for(timeout=REACHES_MS)


def opened_tab(context, url: str):
    tab = context.new_page()
    tab.goto(url)
    settle(tab)
    return tab


def test_tabs_opened_before_the_round_are_one_voter_and_show_the_vote_counted(poll_cluster, poll_data,
                                                                             process_routes, browser):
    """Two tabs of one browser, both opened while no round is open: the browser's cookie is written at the first
    visit, so they vote as one. The tab whose answer was replaced says, after the reveal, what was counted."""
    context = routed_context(browser, poll_cluster, process_routes[1][2])
    url = f"{poll_cluster.url}/{EDGE_PAGE}"
    first, second = opened_tab(context, url), opened_tab(context, url)
    store = open_store(data_directory=poll_data)
    current = store.open_round(EDGE_QUIZ, question(EDGE_QUIZ))
    try:
        vote(first, "this")
        vote(second, "that")
        assert store.counts(current.id).total == 1, "two tabs of one browser were counted as two voters"
        store.reveal(current.id)
        first.get_by_text("you answered that").wait_for(timeout=REACHES_MS)
        assert poll_panel(first).get_by_role("radio", name="that").is_checked()
    finally:
        store.end_round(current.id)
        context.close()


def test_a_tab_takes_the_token_its_browser_holds(poll_cluster, poll_data, process_routes, browser):
    """A tab whose session made its token while another tab wrote a different one first (here: the cookie replaced
    under it) votes with the browser's token, as every later tab does."""
    context = routed_context(browser, poll_cluster, process_routes[1][1])
    url = f"{poll_cluster.url}/{EDGE_PAGE}"
    first = opened_tab(context, url)
    host = poll_cluster.url.split("//", 1)[1].split(":")[0]
    context.add_cookies([{"name": VOTER_COOKIE, "value": new_browser_token(), "domain": host, "path": "/"}])
    store = open_store(data_directory=poll_data)
    current = store.open_round(EDGE_QUIZ, question(EDGE_QUIZ))
    try:
        poll_panel(first).wait_for(timeout=REACHES_MS)
        second = opened_tab(context, url)
        vote(first, "this")
        vote(second, "that")
        assert store.counts(current.id).total == 1, "the tab kept a token its browser no longer holds"
    finally:
        store.end_round(current.id)
        context.close()


#: Clicks on "Download results" while the panel ticks and the class votes.
DOWNLOADS = 20


def unlocked_presenter(browser, cluster, route: str):
    page = routed_context(browser, cluster, route).new_page()
    page.goto(f"{cluster.url}/{EDGE_PAGE}?present=true")
    settle(page)
    page.get_by_label("Presenter key", exact=True).and_(page.locator("input")).fill(KEY)
    lecturer_panel(page).get_by_role("button", name="Unlock the class poll").click()
    return page


def test_every_download_arrives_while_the_panel_ticks_and_the_class_votes(poll_cluster, poll_data, process_routes,
                                                                         browser):
    """The lecturer's panel reruns every second and redraws its counts while votes come in; every click on
    "Download results" still gives the file, with every round's counts."""
    lecturer = unlocked_presenter(browser, poll_cluster, process_routes[0][0])
    lecturer_panel(lecturer).get_by_role("button", name="Open to the class").click()
    lecturer.get_by_text("Round open to the class, round").wait_for(timeout=REACHES_MS)
    store = open_store(data_directory=poll_data)
    current = store.current_round(EDGE_QUIZ)
    hasher = store.voter_hasher()
    voters = [hasher.voter(new_browser_token()) for _ in range(30)]
    stop = threading.Event()

    def the_class_votes() -> None:  # every vote moves the quiz's version: the panel reads and draws the counts
        for k in itertools.count():
            if stop.wait(0.02):
                return
            store.vote(current.id, voters[k % len(voters)], current.question.options[k % 3])

    files: list[str] = []
    voting = threading.Thread(target=the_class_votes, daemon=True)
    voting.start()
    try:
        panel = lecturer_panel(lecturer)
        link = panel.get_by_role("link", name="Download results").or_(
            panel.get_by_role("button", name="Download results"))
        for k in range(DOWNLOADS):
            with lecturer.expect_download(timeout=REACHES_MS) as download:
                link.click()
            files.append(open(download.value.path(), encoding="utf-8").read())
            lecturer.wait_for_timeout(137 * (k % 7))  # clicks at every phase of the panel's second
    finally:
        stop.set()
        voting.join()
        store.end_round(current.id)
    assert len(files) == DOWNLOADS and all(f.startswith("round,quiz,question,option") for f in files)
    lecturer.context.close()


def test_a_key_tried_while_a_tick_is_on_its_way_is_still_emptied(poll_cluster, process_routes, browser):
    """The panel reruns every second, and each tick the browser sends carries what the form's field holds. A tick
    sent after Unlock but before its answer arrives carries the key just tried. Here the server's messages are held
    back for two ticks after the click, as a slow server or network holds them: the field still ends empty, and
    stays empty."""
    relay = {"hold": False, "held": [], "page_side": None}

    def through_relay(page_side) -> None:  # the app's WebSocket, with its server's messages held on demand
        relay["page_side"] = page_side
        server_side = page_side.connect_to_server()

        def to_page(message) -> None:
            if relay["hold"]:
                relay["held"].append(message)
            else:
                page_side.send(message)
        server_side.on_message(to_page)

    page = routed_context(browser, poll_cluster, process_routes[0][1]).new_page()
    page.route_web_socket(re.compile(r".*/_stcore/stream$"), through_relay)
    page.goto(f"{poll_cluster.url}/{EDGE_PAGE}?present=true")
    settle(page)
    field = page.get_by_label("Presenter key", exact=True).and_(page.locator("input"))
    field.fill("a wrong key")
    relay["hold"] = True
    lecturer_panel(page).get_by_role("button", name="Unlock the class poll").click()
    page.wait_for_timeout(2500 * PRESENTER_EVERY_S)  # two ticks leave the browser, holding the key
    while relay["held"]:  # in order; a message that arrives meanwhile joins the end of the queue
        relay["page_side"].send(relay["held"].pop(0))
    relay["hold"] = False
    expect(field).to_have_value("", timeout=REACHES_MS)
    page.wait_for_timeout(2500 * PRESENTER_EVERY_S)
    expect(field).to_have_value("")
    page.context.close()


def test_wrong_keys_still_wait_after_a_reload_and_without_any_cookie(poll_cluster, process_routes, browser):
    """Eight wrong presenter keys (a 32-s wait after the last), then a reload, then a browser with no cookie of the
    app at all (routed to the same process): each is told the wait, and its Unlock button waits with it."""
    route = process_routes[1][0]
    page = routed_context(browser, poll_cluster, route).new_page()
    page.goto(f"{poll_cluster.url}/{EDGE_PAGE}?present=true")
    settle(page)
    unlock = lecturer_panel(page).get_by_role("button", name="Unlock the class poll")
    field = page.get_by_label("Presenter key", exact=True).and_(page.locator("input"))
    for tries in range(1, 9):
        expect_enabled(unlock)
        field.fill("a wrong key")
        unlock.click()
        expect(field).to_have_value("", timeout=REACHES_MS)  # the form was sent: the browser empties the field
        if ThrottlePolicy().wait_after(tries) > 0:  # the server counted the try and disables the button for the
            expect(unlock).to_be_disabled(timeout=REACHES_MS)  # wait: seen before the next try looks for it enabled
    page.reload()
    settle(page)
    page.get_by_text("Too many wrong presenter keys from this address").wait_for(timeout=REACHES_MS)
    assert unlock.is_disabled()
    page.context.close()
    bare = routed_context(browser, poll_cluster, route).new_page()  # nginx's route cookie, no other
    bare.goto(f"{poll_cluster.url}/{EDGE_PAGE}?present=true")
    settle(bare)
    bare.get_by_text("Too many wrong presenter keys from this address").wait_for(timeout=REACHES_MS)
    assert VOTER_COOKIE not in {c["name"] for c in bare.context.cookies()}
    bare.context.close()


def expect_enabled(button) -> None:
    deadline = time.monotonic() + REACHES_MS / 1000 + 16  # the 7th wrong key's wait
    while button.is_disabled():
        assert time.monotonic() < deadline, "the Unlock button stayed disabled"
        button.page.wait_for_timeout(200)
