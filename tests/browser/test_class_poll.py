"""The class poll in Chromium: a lecturer and three students over two app processes behind nginx.

The lecturer's browser is routed to one process, the students' to both (nginx's route cookie). Votes from both
processes land in one total, a reload and a second tab change a browser's vote and add none, the lock refuses a
late vote, the reveal reaches every student, and a new round starts from zero. With SCREENSHOT_DIR set, the
lecturer's and students' screens are saved (desktop and a 390 px phone).
"""

from __future__ import annotations

import re
import time

import pytest

from devtools.browser import NO_CHROMIUM, chromium_available, settle
from devtools.cluster import INSTALL_HINT, ROUTE_COOKIE, Cluster, nginx_binary
from poll import NO_ROUND, Question, open_store
from tests.browser.conftest import COMMUNITY_CLOUD_CONFIG
from tests.deploy.test_cluster import CANDIDATE_ROUTES, http_get, logged
from ui.poll_watch import ROUND_STATE_PATH, STUDENT_EVERY_S

KEY = "the-lecturers-key-for-this-test"
PAGE = "soft_lookup"
#: A page and quiz the first test leaves alone.
IDLE_PAGE, IDLE_QUIZ = "scaled_attention", "scaling_16x"
PHONE = {"width": 390, "height": 844}
#: Longer than a tick (`ui.poll_watch.STUDENT_EVERY_S`) plus the version cache's age, with room for a busy machine.
REACHES_MS = 20_000


@pytest.fixture(scope="module")
def poll_data(tmp_path_factory):
    """The cluster's poll data directory (its SQLite database)."""
    return tmp_path_factory.mktemp("poll-data")


@pytest.fixture(scope="module")
def poll_cluster(poll_data):
    if nginx_binary() is None:
        pytest.skip(INSTALL_HINT)
    if not chromium_available():
        pytest.skip(NO_CHROMIUM)
    env = {**COMMUNITY_CLOUD_CONFIG, "ATTENTION_POLL_DATA_DIR": str(poll_data), "ATTENTION_PRESENTER_KEY": KEY}
    with Cluster(processes=2, env=env) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def process_routes(poll_cluster) -> list[list[str]]:
    """Three route cookies per app process, each used by one test's browser."""
    return routes_by_process(poll_cluster, per_process=3)


def routes_by_process(cluster: Cluster, per_process: int = 2) -> list[list[str]]:
    """Route cookies that reach each app process, `per_process` for each."""
    found: dict[int, list[str]] = {pid: [] for pid in cluster.app_pids}
    for route in CANDIDATE_ROUTES:
        assert http_get(cluster.url + "/", route)[0] == 200
        (pid,) = logged(cluster, route, "/", 1)
        found[pid].append(route)
        if min(map(len, found.values())) >= per_process:
            return [found[pid][:per_process] for pid in cluster.app_pids]
    pytest.fail(f"the route cookies did not reach both processes: {found}")


def routed_context(browser, cluster: Cluster, route: str, viewport: dict | None = None):
    """A new browser whose requests nginx sends to the process that `route` reaches."""
    context = browser.new_context(viewport=viewport or {"width": 1440, "height": 900})
    host = cluster.url.split("//", 1)[1].split("/", 1)[0].split(":")[0]
    context.add_cookies([{"name": ROUTE_COOKIE, "value": route, "domain": host, "path": "/"}])
    return context


def open_as(browser, cluster: Cluster, route: str, query: str = "", viewport: dict | None = None,
            path: str = PAGE):
    page = routed_context(browser, cluster, route, viewport).new_page()
    page.goto(f"{cluster.url}/{path}{query}")
    settle(page)
    return page


def poll_panel(page):
    """The student's class-poll container (the innermost block holding its heading)."""
    return page.get_by_test_id("stVerticalBlock").filter(has_text=re.compile(r"Class poll, round \d")).last


def send(page, option: str) -> None:
    panel = poll_panel(page)
    panel.get_by_text(option).click()
    panel.get_by_role("button", name="Send my answer").click()
    page.get_by_text(f"Answer recorded: {option}").wait_for(timeout=REACHES_MS)


def lecturer_panel(page):
    return page.get_by_test_id("stExpander").filter(has_text="Class poll: ask the room")


def answered(page) -> int:
    return int(lecturer_panel(page).get_by_test_id("stMetricValue").first.inner_text())


def wait_answered(page, total: int) -> None:
    deadline = time.monotonic() + REACHES_MS / 1000
    while answered(page) != total:
        assert time.monotonic() < deadline, f"the lecturer's count stayed at {answered(page)}, not {total}"
        page.wait_for_timeout(200)


def shoot(page, screenshot_dir, name: str) -> None:
    if screenshot_dir is not None:
        panel = lecturer_panel(page) if lecturer_panel(page).count() else poll_panel(page)
        panel.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot_dir / f"poll-{name}.png"), full_page=False)


def test_a_lecturer_and_three_students_over_two_processes(poll_cluster, process_routes, browser, screenshot_dir):
    (a1, a2, _), (b1, b2, _) = process_routes
    lecturer = open_as(browser, poll_cluster, a1, "?present=true")
    lecturer.get_by_label("Presenter key", exact=True).and_(lecturer.locator("input")).fill(KEY)
    lecturer_panel(lecturer).get_by_role("button", name="Unlock the class poll").click()
    lecturer_panel(lecturer).get_by_role("button", name="Open to the class").click()
    lecturer.get_by_text("Round open to the class, round 1").wait_for(timeout=REACHES_MS)
    assert KEY not in lecturer.content()  # never in the page's HTML

    students = [open_as(browser, poll_cluster, a2), open_as(browser, poll_cluster, b1),
                open_as(browser, poll_cluster, b2, viewport=PHONE)]
    for s in students:
        poll_panel(s).wait_for(timeout=REACHES_MS)
    options = ["the hard lookup's value", "the average of all values", "zero"]
    for s, option in zip(students, options[1:] + options[:1], strict=True):
        send(s, option)
    wait_answered(lecturer, 3)  # votes from both processes, one total

    # One browser, one vote: a reload and a second tab show the recorded answer; a change replaces it.
    again = students[0]
    again.reload()
    settle(again)
    poll_panel(again).wait_for(timeout=REACHES_MS)
    assert poll_panel(again).get_by_role("radio", name=options[1]).is_checked()
    tab = again.context.new_page()
    tab.goto(f"{poll_cluster.url}/{PAGE}")
    settle(tab)
    poll_panel(tab).wait_for(timeout=REACHES_MS)
    send(tab, options[0])
    tab.close()
    wait_answered(lecturer, 3)
    lecturer.wait_for_timeout(2000)
    shoot(lecturer, screenshot_dir, "presenter-votes")
    shoot(students[2], screenshot_dir, "student-phone-voted")

    lecturer.evaluate("document.activeElement?.blur()")  # the page has the focus, not a field
    lecturer.keyboard.press("PageDown")  # a clicker's "next": Lock
    lecturer.get_by_text("Round locked, round 1").wait_for(timeout=REACHES_MS)
    late = students[1]  # a send after the lock: refused if the page still offers it, else no longer offered
    sent = late.evaluate("""() => {
        const b = [...document.querySelectorAll('button')].find(b => b.innerText.includes('Send my answer'));
        if (b) { b.click(); return true; } return false; }""")
    if sent:
        late.get_by_text("Your answer was not recorded").wait_for(timeout=REACHES_MS)
    late.get_by_text("answers are closed").wait_for(timeout=REACHES_MS)
    wait_answered(lecturer, 3)

    lecturer_panel(lecturer).get_by_role("button", name="Reveal").click()
    for s in students:
        s.get_by_text("the computed answer is").or_(s.get_by_text("Right:")).first.wait_for(timeout=REACHES_MS)
        assert s.get_by_text("hard lookup's value").count() > 0
    settle(students[2])
    lecturer.wait_for_timeout(2000)
    shoot(lecturer, screenshot_dir, "presenter-revealed")
    qr = lecturer_panel(lecturer).get_by_role("img").first  # still drawn after many ticks of the panel
    assert qr.evaluate("image => image.complete && image.naturalWidth > 0")
    shoot(students[1], screenshot_dir, "student-revealed")
    shoot(students[2], screenshot_dir, "student-phone-revealed")

    lecturer_panel(lecturer).get_by_role("button", name="New round").click()
    lecturer.get_by_text("Round open to the class, round 2").wait_for(timeout=REACHES_MS)
    wait_answered(lecturer, 0)
    for s in students:
        s.get_by_text("Class poll, round 2").wait_for(timeout=REACHES_MS)
        assert not any(poll_panel(s).get_by_role("radio", name=o).is_checked() for o in options)
    for s in [lecturer, *students]:
        assert not s.get_by_test_id("stException").count()
    phone = open_as(browser, poll_cluster, a1, "?present=true", viewport=PHONE)
    shoot(phone, screenshot_dir, "presenter-phone")


def test_an_idle_student_page_asks_the_route_not_the_server_script(poll_cluster, poll_data, process_routes,
                                                                    browser):
    """With no round open, a student's browser asks `ui.poll_watch`'s route for the round state and sends the app
    nothing over its websocket (no fragment runs); a round opened (here, in the store, as the lecturer's Open does)
    reaches the page through that route within a few ticks."""
    route = process_routes[1][2]
    context = routed_context(browser, poll_cluster, route)
    page = context.new_page()
    responses: list = []
    page.on("response", lambda r: responses.append(r) if ROUND_STATE_PATH in r.url else None)
    frames_sent: list[object] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: frames_sent.append(frame)))

    def answers() -> list[tuple[int, str]]:
        return [(r.status, r.text()) for r in responses]

    page.goto(f"{poll_cluster.url}/{IDLE_PAGE}")
    settle(page)
    page.wait_for_timeout(1000)  # the first run's last messages
    frames_sent.clear()
    page.wait_for_timeout(int(3.5 * STUDENT_EVERY_S * 1000))
    assert len(responses) >= 2 and set(answers()) == {(200, NO_ROUND)}, answers()
    assert frames_sent == [], f"the idle page sent the server {len(frames_sent)} websocket messages"

    store = open_store(data_directory=poll_data)
    opened = store.open_round(IDLE_QUIZ, Question(quiz=IDLE_QUIZ, text="Which one?", options=("this", "that"),
                                                  answer="this", explanation="Because."))
    try:
        page.get_by_text("Class poll, round").wait_for(timeout=REACHES_MS)
        assert len(frames_sent) >= 1  # the trigger's fragment run
        assert (200, f"{opened.number}-open") in answers()
    finally:
        store.end_round(opened.id)
    context.close()
