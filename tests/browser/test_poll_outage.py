"""The class poll's database stopped under a student who voted, in Chromium: one app process on a PostgreSQL
server of the test's own, really stopped and started again. The student's page says the outage in one sentence
(the watcher's route answers 503, so the fragment runs and finds the database away), then says that the poll
works again, with the answer that was recorded."""

from __future__ import annotations

import pytest

from devtools.appserver import AppServer
from devtools.browser import NO_CHROMIUM, chromium_available, settle
from poll import Question, open_store
from tests.browser.conftest import COMMUNITY_CLOUD_CONFIG
from tests.poll.conftest import running_postgres
from ui.class_poll import POLL_BACK, POLL_DOWN

PAGE, QUIZ = "soft_lookup", "soft_lookup_cold"
#: Two ticks of the watcher, the database's connection time-outs and a busy machine.
REACHES_MS = 40_000


@pytest.fixture(scope="module")
def postgres():
    yield from running_postgres()


@pytest.fixture(scope="module")
def app_on_postgres(postgres):
    if not chromium_available():
        pytest.skip(NO_CHROMIUM)
    env = {**COMMUNITY_CLOUD_CONFIG, "ATTENTION_POLL_DATABASE_URL": postgres.url,
           "ATTENTION_PRESENTER_KEY": "a-key-this-test-never-types"}
    with AppServer(env=env) as server:
        yield server


def test_a_student_who_voted_is_told_of_the_outage_and_of_its_end(postgres, app_on_postgres, page):
    store = open_store(postgres.url)
    current = store.open_round(QUIZ, Question(quiz=QUIZ, text="Which one?", options=("this", "that"),
                                              answer="this", explanation="Because."))
    page.goto(f"{app_on_postgres.url}/{PAGE}")
    settle(page)
    page.get_by_text("this", exact=True).click()
    page.get_by_role("button", name="Send my answer").click()
    page.get_by_text("Answer recorded: this").wait_for(timeout=REACHES_MS)
    postgres.stop()
    try:
        page.get_by_text(POLL_DOWN).wait_for(timeout=REACHES_MS)
        assert not page.get_by_text("you can change it").count()
        assert not page.get_by_role("button", name="Send my answer").count()
    finally:
        postgres.start()
    page.get_by_text(POLL_BACK).wait_for(timeout=REACHES_MS)
    assert page.get_by_role("radio", name="this").is_checked()
    assert not page.get_by_test_id("stException").count()
    store.end_round(current.id)
