"""The exercise's class round in Chromium: a lecturer and three students (one on a 390 px phone) over two app
processes behind nginx, each check run by the real sandbox of the process that served it.

The lecturer unlocks the panel with the poll's key and opens a round; the students write their function and press
Check my code; the panel's counts reach the lecturer from both processes (checked, passing, the mistake's bar); Show
the class puts the share and the mistakes on every student's page (the phone's too), with no code in it, and Hide
takes them away again. On a phone the panel's chart fits the screen. With SCREENSHOT_DIR set, the screens are saved.
"""

from __future__ import annotations

import time

import pytest

from devtools.browser import NO_CHROMIUM, chromium_available
from devtools.cluster import INSTALL_HINT, Cluster, nginx_binary
from tests.browser.conftest import COMMUNITY_CLOUD_CONFIG
from tests.browser.test_class_poll import PHONE, open_as, routes_by_process
from tests.exercise.test_checker import lesson_style

KEY = "the-lecturers-key-for-this-test"
PAGE = "exercise"
CORRECT = lesson_style()
NO_SCALE = lesson_style(scores="Q @ K.transpose(-2, -1)")
#: A check in the sandbox of a busy machine, then a tick of the panel or a student's watcher.
REACHES_MS = 90_000


@pytest.fixture(scope="module")
def round_cluster(tmp_path_factory):
    if nginx_binary() is None:
        pytest.skip(INSTALL_HINT)
    if not chromium_available():
        pytest.skip(NO_CHROMIUM)
    env = {**COMMUNITY_CLOUD_CONFIG, "ATTENTION_POLL_DATA_DIR": str(tmp_path_factory.mktemp("round-data")),
           "ATTENTION_PRESENTER_KEY": KEY}
    env.pop("ATTENTION_DISABLE_EXEC", None)
    with Cluster(processes=2, env=env) as cluster:
        yield cluster


def open_page(browser, cluster: Cluster, route: str, query: str = "", viewport: dict | None = None):
    return open_as(browser, cluster, route, query, viewport, path=PAGE)


def panel(page):
    return page.get_by_test_id("stExpander").filter(has_text="Class round: the room's code at a glance")


def metric(page, label: str) -> str:
    return panel(page).get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue").inner_text()


def wait_metric(page, label: str, value: str) -> None:
    deadline = time.monotonic() + REACHES_MS / 1000
    while metric(page, label) != value:
        assert time.monotonic() < deadline, f"{label} stayed at {metric(page, label)}, not {value}"
        page.wait_for_timeout(300)


def check(page, source: str) -> None:
    editor = page.locator(".st-key-exercise_code textarea")
    editor.fill(source)
    editor.press("Control+Enter")  # the text area's value goes to the server before the click
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Check my code").click()
    page.get_by_text("checks passed").or_(page.get_by_text("This is attention.")).first.wait_for(timeout=REACHES_MS)


def shoot(page, screenshot_dir, name: str, locator=None) -> None:
    if screenshot_dir is not None:
        (locator or page.get_by_text("Class round").first).scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot_dir / f"exercise-round-{name}.png"), full_page=False)


def test_a_lecturer_and_three_students_over_two_processes(round_cluster, browser, screenshot_dir):
    (a1, a2), (b1, b2) = routes_by_process(round_cluster)
    lecturer = open_page(browser, round_cluster, a1, "?present=true")
    panel(lecturer).locator("input[type=password]").fill(KEY)
    panel(lecturer).get_by_role("button", name="Unlock the class poll").click()
    panel(lecturer).get_by_role("button", name="Open a class round").click()
    lecturer.get_by_text("Class round 1").first.wait_for(timeout=REACHES_MS)
    assert KEY not in lecturer.content()

    students = [open_page(browser, round_cluster, a2), open_page(browser, round_cluster, b1),
                open_page(browser, round_cluster, b2, viewport=PHONE)]
    for s in students:
        s.get_by_text("Class round 1 is open").wait_for(timeout=REACHES_MS)
        assert KEY not in s.content() and not panel(s).count()
    for s, source in zip(students, [NO_SCALE, CORRECT, NO_SCALE], strict=True):
        check(s, source)
    wait_metric(lecturer, "Checked", "3")  # checks served by both processes, one count
    assert metric(lecturer, "Pass now") == "1"
    bars = panel(lecturer).locator("[data-testid=stVegaLiteChart]")
    assert bars.count() == 1
    lecturer.wait_for_timeout(1500)
    shoot(lecturer, screenshot_dir, "presenter", panel(lecturer))

    panel(lecturer).get_by_role("button", name="Show the class").click()
    for s in students:
        s.get_by_text("The class so far:").wait_for(timeout=REACHES_MS)
        box = s.get_by_test_id("stVerticalBlock").filter(has_text="The class so far").last.inner_text()
        assert "33 % of the class's checked code passes every check now (1 of 3)" in box
        assert "No scaling" in box and "(2 students)" in box and "def " not in box and "torch" not in box
    shoot(students[1], screenshot_dir, "student-shown")
    shoot(students[2], screenshot_dir, "student-phone-shown")
    panel(lecturer).get_by_role("button", name="Hide from the class").click()
    for s in students:  # each student's watcher takes the summary away again
        s.get_by_text("The class so far:").wait_for(state="detached", timeout=REACHES_MS)
    panel(lecturer).get_by_role("button", name="Show the class").wait_for(timeout=REACHES_MS)
    for s in [lecturer, *students]:
        assert not s.get_by_test_id("stException").count()
    phone = open_page(browser, round_cluster, a1, "?present=true", viewport=PHONE)
    panel(phone).locator("input[type=password]").fill(KEY)
    panel(phone).get_by_role("button", name="Unlock the class poll").click()
    panel(phone).get_by_role("button", name="New round").wait_for(timeout=REACHES_MS)
    phone.wait_for_timeout(1500)
    shoot(phone, screenshot_dir, "presenter-phone", panel(phone))
    drawn = panel(phone).locator("[data-testid=stVegaLiteChart] :is(canvas, svg.marks)").first.bounding_box()
    inside = panel(phone).locator("[data-testid=stExpanderDetails]").bounding_box()
    assert drawn["x"] + drawn["width"] <= inside["x"] + inside["width"]  # the mistakes' chart fits: no sideways scroll
