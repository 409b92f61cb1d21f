"""The class poll on a page (`ui.class_poll`): the lecturer's panel and students' rounds, two AppTests sharing one
SQLite store in a temporary data directory, as two browsers on one server would."""

from __future__ import annotations

import logging
import time

import pytest
from streamlit.testing.v1 import AppTest

from poll import DatabaseUnavailableError, PresenterKeyThrottledError, Question
from tests.helpers.apptest import APP, TIMEOUT, chart_specs, run_page
from tests.poll.conftest import running_postgres
from tests.ui.conftest import POLL_KEY
from ui import class_poll, poll_presenter, poll_services

PAGE, QUIZ = "app_pages/soft_lookup.py", "soft_lookup_cold"
KEY = POLL_KEY
pytestmark = pytest.mark.usefixtures("poll_env")


def texts(at) -> str:
    """Everything the page wrote as text, one string (markdown, captions, alerts, code, labels)."""
    parts = [e.value for kind in ("markdown", "caption", "success", "warning", "error", "info", "code")
             for e in at.get(kind)]
    parts += [r.label for r in at.radio]
    return "\n".join(str(p) for p in parts)


def unlock_button(at):
    return next(b for b in at.button if b.label == "Unlock the class poll")


def presenter(key: str = KEY, **query: str):
    at = run_page(PAGE, present="true", **query)
    at.text_input(key=f"poll_key_{QUIZ}").input(key)
    unlock_button(at).click().run()
    assert not at.exception
    return at


def student(**query: str):
    at = run_page(PAGE, **query)
    assert not at.exception
    return at


def button(at, name: str):
    return at.button(key=f"poll_{QUIZ}_{name}")


def poll_radio(at):
    found = [r for r in at.radio if r.key and r.key.startswith(f"poll_{QUIZ}_choice_")]
    return found[0] if found else None


def send(at, option: str):
    poll_radio(at).set_value(option)
    button(at, "send").click().run()
    assert not at.exception
    return at


def answered(at) -> int:
    next_tick(at)
    return int(next(m for m in at.metric if m.label == "Answered").value)


def open_round(**query: str):
    lecturer = presenter(**query)
    button(lecturer, "open").click().run()
    assert not lecturer.exception
    return lecturer


def next_tick(at):
    """The student's fragment running again once the process's reading of the version has aged out."""
    time.sleep(poll_services.VERSION_MAX_AGE_S + 0.1)
    at.run()
    assert not at.exception
    return at


def the_answer(at) -> tuple[str, str]:
    """(the computed answer, a wrong option) of the page's own quiz."""
    store = poll_services.services().store
    current = store.current_round(QUIZ)
    wrong = next(o for o in current.question.options if o != current.question.answer)
    return current.question.answer, wrong


def test_with_no_round_open_a_students_page_is_as_before():
    at = student()
    assert poll_radio(at) is None and "Class poll" not in texts(at)
    assert at.radio(key=f"quiz_{QUIZ}_choice").value is None  # the student's own quiz is there as always


def test_the_lecturer_proves_the_key_in_a_password_field_before_any_control():
    at = run_page(PAGE, present="true")
    field = at.text_input(key=f"poll_key_{QUIZ}")
    assert field.proto.type == field.proto.PASSWORD
    assert not any(b.key == f"poll_{QUIZ}_open" for b in at.button)
    field.input("not-the-key-at-all")
    unlock_button(at).click().run()
    assert "That is not the presenter key." in texts(at)
    assert not any(b.key == f"poll_{QUIZ}_open" for b in at.button)
    at.text_input(key=f"poll_key_{QUIZ}").input(KEY)
    unlock_button(at).click().run()
    assert button(at, "open") is not None
    assert at.session_state[f"poll_key_{QUIZ}"] == ""  # the typed key does not stay in the page's state
    assert KEY not in texts(at)


def test_ten_wrong_keys_lock_the_address_out_even_for_the_right_key():
    guard = poll_services.services().guard
    now = [1000.0]
    guard._clock = lambda: now[0]  # each try after the wait the last one set
    at = run_page(PAGE, present="true")
    for _ in range(10):
        at.text_input(key=f"poll_key_{QUIZ}").input("a-wrong-key-typed-again")
        unlock_button(at).click().run()
        assert not at.exception and ("That is not the presenter key." in texts(at)
                                      or "Too many wrong presenter keys from this address" in texts(at))
        now[0] += 61
        at.run()
    assert "the next try is in 14 minutes" in texts(at) and unlock_button(at).disabled  # 900 s, less 61
    with pytest.raises(PresenterKeyThrottledError):
        guard.check("address this server", KEY)  # the right key is not even compared
    assert not any(b.key == f"poll_{QUIZ}_open" for b in at.button)


def test_an_open_round_reaches_students_and_one_browser_counts_once():
    lecturer = open_round()
    assert lecturer.get("image"), "the join link's QR code"
    answer, wrong = the_answer(lecturer)
    first, second = student(), student()
    assert "Class poll, round 1" in texts(first)
    send(first, wrong)
    assert f"Answer recorded: **{wrong}**" in texts(first)
    assert answered(lecturer) == 1
    send(first, answer)  # changed, not added
    assert answered(lecturer) == 1
    send(second, answer)
    assert answered(lecturer) == 2
    (spec, frames), = [c for c in chart_specs(lecturer) if "The class's answers" in str(c[0])]
    table = next(iter(frames.values()))
    assert dict(zip(table["option"], table["votes"], strict=True)) == {o: (2 if o == answer else 0)
                                                          for o in table["option"]}
    assert not table["right"].any()  # not marked before the reveal


def test_a_student_who_opens_late_sees_their_recorded_answer_after_a_reload():
    open_round()
    at = student()
    answer, _ = the_answer(at)
    send(at, answer)
    token = at.session_state["_poll_token"]
    again = AppTest.from_file(APP, default_timeout=TIMEOUT)  # a reload: a new session, the same cookie's token
    again.switch_page(PAGE)
    again.session_state["_poll_token"] = token
    again.run()
    assert poll_radio(again).value == answer


def test_a_vote_after_lock_is_refused_and_not_counted():
    lecturer = open_round()
    late = student()  # the page still shows the open round
    button(lecturer, "lock").click().run()
    _, wrong = the_answer(lecturer)
    send(late, wrong)
    assert "Your answer was not recorded." in texts(late)
    assert "locked" in texts(late)
    assert answered(lecturer) == 0
    assert poll_radio(late).disabled and not any(b.key == f"poll_{QUIZ}_send" for b in late.button)


def test_the_reveal_reaches_the_student_with_the_explanation_and_marks_the_right_bar():
    lecturer = open_round()
    at = student()
    answer, wrong = the_answer(lecturer)
    send(at, wrong)
    button(lecturer, "reveal").click().run()
    next_tick(at)
    assert f"you answered **{wrong}**; the computed answer is **{answer}**" in texts(at)
    explanation = poll_services.services().store.current_round(QUIZ).question.explanation
    assert explanation in texts(at)
    (_, frames), = [c for c in chart_specs(lecturer) if "The class's answers" in str(c[0])]
    table = next(iter(frames.values()))
    assert list(table.loc[table["right"], "option"]) == [answer]


def test_a_new_round_starts_from_zero_and_a_stale_page_is_told():
    lecturer = open_round()
    at = student()
    answer, _ = the_answer(lecturer)
    send(at, answer)
    assert answered(lecturer) == 1
    button(lecturer, "new").click().run()
    assert answered(lecturer) == 0 and "round 2" in texts(lecturer)
    poll_radio(at).set_value(answer)  # the page still shows round 1
    button(at, "send").click().run()
    assert "Your answer was not recorded." in texts(at) and answered(lecturer) == 0
    at.run()
    assert "Class poll, round 2" in texts(at)
    assert "Your answer was not recorded." in texts(at)  # said on the round that replaced it
    next_tick(lecturer)
    send(at, answer)
    button(lecturer, "new").click().run()
    next_tick(at)
    assert "Class poll, round 3" in texts(at) and "Answer recorded" not in texts(at)  # round 2's, not round 3's


def test_the_round_is_fixed_at_the_lecturers_settings_and_links_to_them():
    open_round(temp="2")
    at = student()  # the student's own sliders are at the defaults
    assert "](?temp=2)" in texts(at)  # the link to the lecturer's settings
    assert "`temp` = 2" in texts(at)
    assert "present" not in poll_services.services().store.current_round(QUIZ).question.settings


def test_closing_the_poll_gives_students_their_page_back():
    lecturer = open_round()
    at = student()
    assert poll_radio(at) is not None
    button(lecturer, "close").click().run()
    next_tick(at)
    assert poll_radio(at) is None and not at.exception


def test_the_database_away_mid_round_is_said_and_recovers_without_a_restart(monkeypatch):
    lecturer = open_round()
    at = student()
    answer, _ = the_answer(lecturer)
    store = poll_services.services().store
    real_vote = store.vote

    def unavailable(*args, **kwargs):
        raise DatabaseUnavailableError("The poll's database cannot be reached right now; try again in a moment.")

    monkeypatch.setattr(store, "vote", unavailable)
    send(at, answer)
    assert "Your answer was not recorded. The poll's database cannot be reached" in texts(at)
    assert at.radio(key=f"quiz_{QUIZ}_choice") is not None  # the rest of the page is as it was
    monkeypatch.setattr(store, "vote", real_vote)
    send(at, answer)
    assert "Answer recorded" in texts(at) and answered(lecturer) == 1


def test_a_question_too_long_to_poll_is_refused_with_a_message_and_nothing_opened(monkeypatch):
    lecturer = presenter()
    store = poll_services.services().store

    def invalid(*args, **kwargs):
        Question(quiz=QUIZ, text="x" * 100_000, options=("a", "b"), answer="a", explanation="")

    monkeypatch.setattr(store, "open_round", invalid)
    button(lecturer, "open").click().run()
    assert not lecturer.exception and "Not done: The question is too long" in texts(lecturer)
    assert store.current_round(QUIZ) is None


@pytest.mark.parametrize("value, kept", [("A" * 43, True), ("short", False), ("x" * 500, False),
                                         ("bad token with spaces and more", False), (None, False)])
def test_only_a_well_formed_cookie_token_is_used(value, kept):
    assert (class_poll.token_from_cookie(value) is not None) is kept


def test_a_generated_key_is_logged_once_at_start_and_a_configured_one_never(monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    assert poll_services.announce_presenter_key() is None  # configured in the environment (the fixture)
    assert KEY not in caplog.text
    monkeypatch.delenv("ATTENTION_PRESENTER_KEY")
    line = poll_services.announce_presenter_key()
    generated = poll_services.services().key
    assert generated.source == "generated" and generated.value in line


def test_the_qr_code_is_an_svg_made_offline_and_sent_inline():
    assert poll_presenter.qr_image("http://localhost:8501/soft_lookup?temp=2").startswith("data:image/svg+xml")


def test_an_unwritable_database_is_said_to_the_lecturer_and_a_students_page_is_unaffected(monkeypatch):
    monkeypatch.setenv("ATTENTION_POLL_DATABASE_URL", "sqlite:////proc/attention-poll.sqlite3")  # not even root writes
    lecturer = presenter()
    assert not lecturer.exception
    assert "Class poll: The poll's storage cannot be used right now" in texts(lecturer)
    at = student()
    assert poll_radio(at) is None and at.radio(key=f"quiz_{QUIZ}_choice") is not None


def test_an_oversized_key_is_a_wrong_key_not_an_error():
    at = run_page(PAGE, present="true")
    at.text_input(key=f"poll_key_{QUIZ}").input("k" * 100_000)
    unlock_button(at).click().run()
    assert not at.exception and "That is not the presenter key." in texts(at)


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own, to stop and start again (skipped without Debian's binaries)."""
    yield from running_postgres()


def test_postgresql_stopped_mid_round_is_said_and_the_poll_recovers_without_a_restart(own_postgres, monkeypatch):
    monkeypatch.setenv("ATTENTION_POLL_DATABASE_URL", own_postgres.url)
    lecturer = open_round()
    first, second = student(), student()
    answer, wrong = the_answer(lecturer)
    send(first, answer)
    own_postgres.stop()
    send(second, wrong)
    assert "Your answer was not recorded." in texts(second) and "cannot be reached" in texts(second)
    assert first.radio(key=f"quiz_{QUIZ}_choice") is not None  # the rest of the page is as it was
    next_tick(lecturer)
    assert "Class poll: " in texts(lecturer) and not lecturer.exception
    own_postgres.start()
    next_tick(second)  # the round is back on the student's page
    send(second, wrong)
    assert "Answer recorded" in texts(second)
    assert answered(lecturer) == 2


def test_a_clickers_next_key_locks_then_reveals_and_is_on_one_button_at_a_time():
    lecturer = open_round()

    def shortcuts() -> dict[str, str]:
        return {name: button(lecturer, name).proto.shortcut.lower() for name in ("lock", "reveal", "new", "close")}

    key = poll_presenter.NEXT_STEP_KEY.lower()
    assert shortcuts() == {"lock": key, "reveal": "", "new": "", "close": ""}
    button(lecturer, "lock").click().run()
    assert shortcuts() == {"lock": "", "reveal": key, "new": "", "close": ""}
    button(lecturer, "reveal").click().run()
    assert set(shortcuts().values()) == {""}


def test_two_tabs_of_one_browser_show_the_answer_counted_not_their_own_last_pick():
    lecturer = open_round()
    answer, wrong = the_answer(lecturer)
    first = student()
    second = AppTest.from_file(APP, default_timeout=TIMEOUT)  # a second tab: a new session, the same cookie's token
    second.switch_page(PAGE)
    second.session_state["_poll_token"] = first.session_state["_poll_token"]
    second.run()
    send(first, answer)
    send(second, wrong)  # replaces the first tab's answer
    assert answered(lecturer) == 1
    button(lecturer, "lock").click().run()
    next_tick(first)
    assert poll_radio(first).value == wrong  # what was counted, not this tab's last pick
    button(lecturer, "reveal").click().run()
    next_tick(first)
    assert f"you answered **{wrong}**" in texts(first)


def test_postgresql_stopped_is_said_to_a_student_who_voted_in_one_sentence_and_so_is_its_return(own_postgres,
                                                                                                 monkeypatch):
    monkeypatch.setenv("ATTENTION_POLL_DATABASE_URL", own_postgres.url)
    lecturer = open_round()
    at = student()
    answer, _ = the_answer(lecturer)
    send(at, answer)
    own_postgres.stop()
    next_tick(at)  # the watcher's next tick: the route answers 503, the fragment runs
    assert class_poll.POLL_DOWN in texts(at) and "you can change it" not in texts(at)
    assert not at.exception and at.radio(key=f"quiz_{QUIZ}_choice") is not None
    next_tick(at)
    assert class_poll.POLL_DOWN in texts(at) and class_poll.POLL_BACK not in texts(at)
    own_postgres.start()
    next_tick(at)
    assert class_poll.POLL_BACK in texts(at) and class_poll.POLL_DOWN not in texts(at)
    assert poll_radio(at).value == answer
    next_tick(at)
    assert class_poll.POLL_BACK not in texts(at)  # said once


def test_wrong_keys_are_charged_to_the_address_so_a_reload_still_waits_and_is_told_how_long():
    poll_services.services().guard._clock = lambda: 1000.0  # the 2-s wait lasts however slow the runs are
    at = run_page(PAGE, present="true")
    for _ in range(4):  # three free tries, then a wait
        at.text_input(key=f"poll_key_{QUIZ}").input("a-wrong-key-typed-again")
        unlock_button(at).click().run()
    again = run_page(PAGE, present="true")  # a reload: a new session, no cookie
    assert "Too many wrong presenter keys from this address: the next try is in" in texts(again)
    assert unlock_button(again).disabled
