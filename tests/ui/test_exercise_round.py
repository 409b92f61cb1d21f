"""The exercise's class round on the exercise page (`ui.exercise_round`, `ui.exercise_presenter`): the lecturer's
panel and students' checks, AppTests sharing one SQLite store in a temporary data directory, as browsers on one
server would. The checks run the tests' own trusted submissions in-process (`tests.exercise.test_checker`), through
the page's own call to `check_submission`, so what is recorded is what the page's checker returned."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from starlette.requests import Request
from streamlit.testing.v1 import AppTest

import exercise.sandbox
from exercise.cases import exercise_cases
from exercise.results import RunResult
from exercise.verdicts import evaluate
from poll import CheckResult, DatabaseUnavailableError, summarise
from tests.exercise.test_checker import lesson_style, trusted_report
from tests.helpers.apptest import APP, TIMEOUT, chart_specs, run_page
from tests.poll.conftest import running_postgres
from tests.ui.conftest import POLL_KEY
from ui import exercise_round, poll_results, poll_services, poll_watch

PAGE = "app_pages/exercise.py"
CORRECT = lesson_style()
NO_SCALE = lesson_style(scores="Q @ K.transpose(-2, -1)")
WRONG_AXIS = lesson_style(softmax="F.softmax(scores, dim=-2)")
ENDLESS = "while True:\n    pass\n"
pytestmark = pytest.mark.usefixtures("poll_env", "in_process_checks")


@pytest.fixture
def in_process_checks(monkeypatch):
    """`check_submission` judging the tests' own submissions in this process; ENDLESS as a run out of time."""
    monkeypatch.delenv("ATTENTION_DISABLE_EXEC", raising=False)

    def check_submission(source, sandbox, timeout_s=5.0, on_wait=None):
        if source == ENDLESS:
            return evaluate(RunResult(incident="Time limit: still running.", incident_kind="timeout"), exercise_cases())
        return trusted_report(source)

    monkeypatch.setattr(exercise.sandbox, "check_submission", check_submission)


def texts(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "success", "warning", "error", "info", "code")
             for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def student() -> AppTest:
    at = run_page(PAGE)
    assert not at.exception
    return at


def second_tab(first: AppTest) -> AppTest:
    """A second tab of `first`'s browser: a new session, the same cookie's token."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page(PAGE)
    at.session_state["_poll_token"] = first.session_state["_poll_token"]
    return at.run()


def check(at: AppTest, source: str) -> AppTest:
    at.text_area(key="exercise_code").set_value(source)
    next(b for b in at.button if b.label == "Check my code").click()
    at.run(timeout=TIMEOUT + 60)
    assert not at.exception
    return at


def lecturer() -> AppTest:
    at = run_page(PAGE, present="true")
    at.text_input(key=f"poll_key_{exercise_round.PAGE}").input(POLL_KEY)
    next(b for b in at.button if b.label == "Unlock the class poll").click().run()
    assert not at.exception
    return at


def open_round() -> AppTest:
    at = lecturer()
    at.button(key="exround_open").click().run()
    assert not at.exception
    return at


def tick(at: AppTest) -> AppTest:
    """The fragment running again once the process's reading of the version has aged out."""
    time.sleep(poll_services.VERSION_MAX_AGE_S + 0.1)
    at.run()
    assert not at.exception
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def stored_rows():
    store = poll_services.services().store
    current = store.exercise_round(exercise_round.PAGE)
    return () if current is None else store.exercise_results(current.id)


def mistakes_table(at: AppTest) -> dict[str, int]:
    found = [frames for spec, frames in chart_specs(at) if "mistakes now" in str(spec)]
    if not found:
        return {}
    table = next(iter(found[0].values()))
    return dict(zip(table["mistake"], table["students"], strict=True))


def test_without_a_round_a_check_records_nothing_and_the_page_is_as_before():
    at = check(student(), NO_SCALE)
    assert "Class round" not in texts(at)
    assert poll_services.services().store.exercise_round(exercise_round.PAGE) is None


def test_the_panel_counts_the_rooms_checks_student_by_student_as_the_database_holds_them():
    teacher = open_round()
    a, b, c = student(), student(), student()
    assert "Class round 1 is open" in texts(a)
    check(a, NO_SCALE)
    check(b, NO_SCALE)
    check(c, WRONG_AXIS)
    check(c, CORRECT)
    tick(teacher)
    assert (metric(teacher, "Checked"), metric(teacher, "Pass now"), metric(teacher, "Checks to pass (median)")) == (
        "3", "1", "2")
    bars = mistakes_table(teacher)
    assert bars == {"No scaling: the scores are never divided by √d_k.": 2}
    rows = stored_rows()
    assert summarise(rows).checked == 3 and sorted(r.attempts for r in rows) == [1, 1, 2]
    assert {r.result for r in rows} == {CheckResult("failed", 4, "scale_none"), CheckResult("passed")}


def test_two_tabs_of_one_browser_are_one_student():
    open_round()
    first = student()
    second = second_tab(first)
    check(first, NO_SCALE)
    check(second, CORRECT)
    (row,) = stored_rows()
    assert (row.result, row.attempts, row.attempts_to_pass) == (CheckResult("passed"), 2, 2)


def test_a_check_out_of_time_counts_as_did_not_finish():
    teacher = open_round()
    check(student(), ENDLESS)
    tick(teacher)
    assert mistakes_table(teacher) == {
        "Did not finish: the code was still running at the time limit (an endless loop?).": 1}


def test_a_result_put_in_the_session_by_hand_is_never_recorded():
    """Only the page's own check records: a report placed in the session (as a forged websocket message could
    only reach widgets) is shown, never counted."""
    open_round()
    at = student()
    at.session_state["exercise_report"] = trusted_report(CORRECT)
    at.run()
    assert not at.exception and stored_rows() == ()
    check(at, NO_SCALE)
    assert [r.result.kind for r in stored_rows()] == ["failed"]


def test_the_lecturers_own_checks_are_not_the_rooms():
    teacher = open_round()
    check(teacher, CORRECT)
    assert stored_rows() == ()


def test_the_key_and_the_panel_never_reach_a_student():
    open_round()
    at = student()
    assert POLL_KEY not in texts(at)
    assert not [b for b in at.button if (b.key or "").startswith("exround_")]
    assert not at.text_input  # no key field either


def test_the_class_is_shown_the_share_and_the_three_most_common_mistakes_without_code_or_identifier():
    teacher = open_round()
    students = [student() for _ in range(5)]
    for at, source in zip(students, [NO_SCALE, NO_SCALE, WRONG_AXIS, ENDLESS, CORRECT], strict=True):
        check(at, source)
    tick(teacher)
    teacher.button(key="exround_show").click().run()
    assert not teacher.exception
    watcher = students[0]
    tick(watcher)
    shown = "\n".join(m.value for m in watcher.markdown if "The class so far" in m.value or "most common" in m.value)
    assert "20 % of the class's checked code passes every check now (1 of 5)" in shown
    assert "1. No scaling" in shown and "(2 students)" in shown and "2. " in shown and "3. " in shown
    for at in students:
        token = at.session_state["_poll_token"]
        assert token not in shown
    digests = {r.student for r in stored_rows()}
    assert not [d for d in digests if d in shown]
    for source in (NO_SCALE, WRONG_AXIS, CORRECT):
        assert not [line for line in source.splitlines() if len(line.strip()) > 12 and line.strip() in shown]


def test_the_lecturer_can_hide_the_classs_summary_again():
    teacher = open_round()
    at = student()
    check(at, NO_SCALE)
    tick(teacher)
    teacher.button(key="exround_show").click().run()
    tick(at)
    assert any("The class so far" in m.value for m in at.markdown)
    tick(teacher)
    teacher.button(key="exround_hide").click().run()
    assert not teacher.exception and not [b for b in teacher.button if b.key == "exround_hide"]
    assert [b for b in teacher.button if b.key == "exround_show"]
    tick(at)
    assert not any("The class so far" in m.value or "most common" in m.value for m in at.markdown)
    assert any("Class round 1 is open" in m.value for m in at.markdown)


def test_the_database_away_pauses_the_count_and_loses_no_check(monkeypatch):
    open_round()
    at = student()
    store = poll_services.services().store
    real = store.record_check

    def unavailable(*args, **kwargs):
        raise DatabaseUnavailableError("The poll's database cannot be reached right now.")

    monkeypatch.setattr(store, "record_check", unavailable)
    check(at, NO_SCALE)
    assert exercise_round.COUNT_PAUSED in texts(at)
    assert any(s.value for s in at.warning)
    check(at, WRONG_AXIS)
    assert stored_rows() == ()
    monkeypatch.setattr(store, "record_check", real)
    tick(at)  # the box's next run sends the checks kept meanwhile
    (row,) = stored_rows()
    assert (row.result, row.attempts) == (CheckResult("failed", 3, "softmax_queries"), 2)
    assert exercise_round.COUNT_PAUSED not in texts(at)


def test_a_new_round_counts_from_zero_and_the_last_is_kept_in_the_download():
    teacher = open_round()
    check(student(), CORRECT)
    teacher.button(key="exround_new").click().run()
    tick(teacher)
    assert metric(teacher, "Checked") == "0"
    rounds = poll_services.services().store.exercise_rounds(exercise_round.PAGE)
    assert [r.number for r in rounds] == [1, 2]
    links = [b.proto.url for b in teacher.get("link_button")]
    assert any("api/poll/exercise-results.csv?quiz=exercise_class&until=" in link for link in links)


def fetch_csv(link: str) -> tuple[int, str]:
    """The exercise's results route's status and text for the page-relative `link`."""
    path, _, query = link.partition("?")
    scope = {"type": "http", "method": "GET", "path": poll_watch.route_path(path), "query_string": query.encode(),
             "headers": []}
    endpoint = {poll_results.EXERCISE_RESULTS_PATH: poll_results.exercise_results_endpoint,
                poll_results.RESULTS_PATH: poll_results.results_endpoint}[path]
    with ThreadPoolExecutor(1) as thread:
        response = thread.submit(asyncio.run, endpoint(Request(scope))).result()
    return response.status_code, response.body.decode()


def test_the_download_is_the_rounds_rows_without_identifiers_and_its_link_opens_nothing_else():
    teacher = open_round()
    a = student()
    check(a, NO_SCALE)
    check(a, CORRECT)
    tick(teacher)
    (link,) = [b.proto.url for b in teacher.get("link_button") if b.proto.label == "Download results"]
    status, text = fetch_csv(link)
    assert status == 200
    rows = text.strip().splitlines()
    assert rows[0].startswith("round,student,result,failed_check,mistake,checks,checks_to_pass")
    assert rows[1].startswith("1,1,passed,,,2,2,")
    assert a.session_state["_poll_token"] not in text and stored_rows()[0].student not in text
    as_quiz = link.replace(poll_results.EXERCISE_RESULTS_PATH, poll_results.RESULTS_PATH)
    assert fetch_csv(as_quiz)[0] == 403  # signed for the exercise's results, not a quiz's


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own, to stop and start again (skipped without Debian's binaries)."""
    yield from running_postgres()


def test_postgresql_stopped_mid_round_pauses_the_count_keeps_what_was_recorded_and_loses_no_check(own_postgres,
                                                                                                  monkeypatch):
    monkeypatch.setenv("ATTENTION_POLL_DATABASE_URL", own_postgres.url)
    teacher = open_round()
    a, b = student(), student()
    check(a, CORRECT)
    own_postgres.stop()
    check(b, NO_SCALE)
    assert exercise_round.COUNT_PAUSED in texts(b)
    tick(teacher)
    assert "Class round: " in texts(teacher) and not teacher.exception
    tick(b)  # the box's next run, the database still away: said again
    assert exercise_round.COUNT_PAUSED in texts(b)
    own_postgres.start()
    tick(b)
    assert exercise_round.COUNT_PAUSED not in texts(b)
    tick(teacher)
    assert (metric(teacher, "Checked"), metric(teacher, "Pass now")) == ("2", "1")
    assert sorted((r.result.kind, r.attempts) for r in stored_rows()) == [("failed", 1), ("passed", 1)]
