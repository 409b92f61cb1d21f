"""The exercise's class round over two app processes behind nginx, with the real sandbox: simulated students
(Streamlit's websocket protocol, each its own browser) press "Check my code" at once on both processes, and the
round holds exactly one row per student with what each student's checker found, on SQLite and on PostgreSQL; a
process killed after its students' checks loses none of their results."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import os
import random
import signal
import time
import urllib.request
from collections import Counter

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.lecturer import Presenter
from benchmarks.memory import tree
from benchmarks.protocol import ANSWER_TIMEOUT_S, Student, page_hashes, run_coroutine
from devtools.cluster import INSTALL_HINT, ROUTE_COOKIE, Cluster, nginx_binary
from poll import CheckResult, open_store, summarise
from tests.deploy.test_cluster import CANDIDATE_ROUTES, logged, routes_by_process
from tests.exercise.test_checker import lesson_style
from tests.poll.conftest import fresh_schema_url, running_postgres
from ui.exercise_round import PAGE as ROUND_PAGE

SOURCES = {  # what each kind of student writes, and what the round must hold for them
    "correct": (lesson_style(), CheckResult("passed")),
    "no scale": (lesson_style(scores="Q @ K.transpose(-2, -1)"), CheckResult("failed", 4, "scale_none")),
    "wrong axis": (lesson_style(softmax="F.softmax(scores, dim=-2)"), CheckResult("failed", 3, "softmax_queries")),
}
STUDENTS = 18
#: The class of the killed-process test.
KILLED_CLASS = 8


class RoutedStudent(Student):
    """A student whose requests nginx sends to the process `route` reaches."""

    def __init__(self, url: str, page_hash: str, route: str) -> None:
        super().__init__(url, page_hash, random.Random(0))
        self.route = route

    def load_page(self) -> str:
        cookie = f"{ROUTE_COOKIE}={self.route}"
        request = urllib.request.Request(self.http_url + "/", headers={"Cookie": cookie})
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as response:
            response.read()
        return cookie


async def press_check(url: str, page_hash: str, route: str, source: str) -> int:
    """One student: open the exercise page, put `source` in the editor, press "Check my code" once; the run's
    exceptions."""
    student = RoutedStudent(url, page_hash, route)
    await student.connect()
    try:
        return (await student.check_code(source)).exceptions
    finally:
        await student.ws.close()


async def a_class(url: str, page_hash: str, plan: list[tuple[str, str]]) -> list[int]:
    return await asyncio.gather(*(press_check(url, page_hash, route, SOURCES[kind][0]) for route, kind in plan))


@pytest.fixture(params=["sqlite", "postgresql"])
def round_env(request, tmp_path) -> dict[str, str]:
    env = {"ATTENTION_POLL_DATA_DIR": str(tmp_path), "ATTENTION_PRESENTER_KEY": "a-lecturers-key-of-some-length"}
    if request.param == "postgresql":
        server = request.getfixturevalue("round_postgres")
        env["ATTENTION_POLL_DATABASE_URL"] = fresh_schema_url(server.url)
    return env


@pytest.fixture(scope="module")
def round_postgres():
    yield from running_postgres()


def test_a_class_checking_at_once_on_two_processes_is_counted_exactly(round_env):
    if nginx_binary() is None:
        pytest.skip(INSTALL_HINT)
    with Cluster(processes=2, env=round_env) as cluster:
        store = open_store(round_env.get("ATTENTION_POLL_DATABASE_URL"), data_directory=None,
                           env=round_env)
        opened = store.open_exercise_round(ROUND_PAGE)
        kinds = list(SOURCES)
        plan = [(CANDIDATE_ROUTES[i], kinds[i % len(kinds)]) for i in range(STUDENTS)]
        exceptions = run_coroutine(a_class(cluster.url, page_hashes(cluster.url)["exercise"], plan))
        served_by = {pid for route, _ in plan for pid in logged(cluster, route, "/", 1)}
    assert exceptions == [0] * STUDENTS
    assert len(served_by) == 2, "the students did not reach both processes"
    rows = store.exercise_results(opened.id)
    assert len(rows) == STUDENTS and all(row.attempts == 1 for row in rows)
    assert Counter(row.result for row in rows) == Counter(SOURCES[kind][1] for _, kind in plan)
    summary = summarise(rows)
    assert (summary.checked, summary.passed) == (STUDENTS, STUDENTS // len(kinds))


class RoutedPresenter(Presenter):
    """The lecturer's browser in presenter mode on the exercise page, kept by nginx on the process `route` reaches."""

    load_page = RoutedStudent.load_page

    def __init__(self, url: str, page_hash: str, key: str, route: str) -> None:
        super().__init__(url, page_hash, key, quiz=ROUND_PAGE)
        self.route = route
        self.csv_link = ""

    async def panel_until(self, students: int, passed: int, seconds: float = 15.0) -> None:
        """Rerun the panel until it shows `students` checked and `passed` passing (or `seconds` went by), noting the
        download's link."""
        def heard(_: float, fm: ForwardMsg) -> None:
            if fm.WhichOneof("type") == "delta" and fm.delta.new_element.WhichOneof("type") == "link_button":
                self.csv_link = fm.delta.new_element.link_button.url

        deadline = time.monotonic() + seconds
        while True:
            await asyncio.sleep(1.0)
            await self.rerun(self.panel_fragment, heard)
            if time.monotonic() > deadline or self.last() == (students, passed):
                return

    def last(self) -> tuple[int | None, int | None]:
        return tuple(self.shown.get(label, [(0, None)])[-1][1] for label in ("Checked", "Pass now"))


def test_a_killed_process_loses_no_recorded_result(round_env):
    """Students check on both processes; one process is killed (SIGKILL) once their checks were answered. Every
    result is still in the store, and the lecturer's panel and download, served by the other process, count them
    all."""
    if nginx_binary() is None:
        pytest.skip(INSTALL_HINT)
    with Cluster(processes=2, env=round_env) as cluster:
        store = open_store(round_env.get("ATTENTION_POLL_DATABASE_URL"), data_directory=None, env=round_env)
        opened = store.open_exercise_round(ROUND_PAGE)
        page_hash = page_hashes(cluster.url)["exercise"]
        kinds = list(SOURCES)
        halves = routes_by_process(cluster, KILLED_CLASS // 2).values()  # half the class on each process
        plan = [(route, kinds[i % len(kinds)]) for i, route in enumerate(r for pair in zip(*halves) for r in pair)]
        assert run_coroutine(a_class(cluster.url, page_hash, plan)) == [0] * KILLED_CLASS
        served_by = {}
        for route, _ in plan:  # its two visits in `routes_by_process` and the student's own: one process
            (served_by[route],) = set(logged(cluster, route, "/", 3))
        victim = served_by[plan[0][0]]
        survivor = next(route for route, pid in served_by.items() if pid != victim)
        app = next(app for app in cluster.apps if app.proc.pid == victim)
        descendants = [pid for pid in tree(victim) if pid != victim]
        app.proc.send_signal(signal.SIGKILL)
        app.proc.wait(10)
        for pid in descendants:  # its sandbox's workers, orphaned
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        lecturer = RoutedPresenter(cluster.url, page_hash, round_env["ATTENTION_PRESENTER_KEY"], survivor)
        expected = Counter(SOURCES[kind][1] for _, kind in plan)

        async def watch() -> None:
            await lecturer.open_page()
            await lecturer.panel_until(KILLED_CLASS, expected[CheckResult("passed")])
            await lecturer.ws.close()

        run_coroutine(watch())
        request = urllib.request.Request(f"{cluster.url}/{lecturer.csv_link.lstrip('/')}",
                                         headers={"Cookie": f"{ROUTE_COOKIE}={survivor}"})
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as response:
            answered = response.read().decode()
        csv_rows = list(csv.DictReader(io.StringIO(answered)))
    assert sorted(Counter(served_by.values()).values()) == [KILLED_CLASS // 2] * 2, "half the class on each process"
    rows = open_store(round_env.get("ATTENTION_POLL_DATABASE_URL"), data_directory=None,
                      env=round_env).exercise_results(opened.id)
    assert Counter(row.result for row in rows) == expected and len(rows) == KILLED_CLASS
    assert lecturer.exceptions == 0
    assert lecturer.last() == (KILLED_CLASS, expected[CheckResult("passed")])
    assert answered.startswith("round,student,result,"), (lecturer.csv_link, answered[:300])
    assert Counter(CheckResult(r["result"], int(r["failed_check"]) if r["failed_check"] else None, r["mistake"] or None)
                   for r in csv_rows) == expected
