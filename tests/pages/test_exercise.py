"""The "Build this" page (AppTest), with code execution on and off, and the predict-then-reveal helper."""

from __future__ import annotations

import inspect

import pytest
from streamlit.testing.v1 import AppTest

import core.exercise_solution as solution
from exercise.cases import SKELETON
from exercise.demos import mistake_demo
from exercise.mistakes import Mistake
from exercise.verdicts import CHECK_NAMES, CHECK_ROWS
from tests.helpers.apptest import APP, TIMEOUT, open_code, run_page
from tests.helpers.registry import NO_NUMBERS, Case, PageTests

PAGE = "app_pages/exercise.py"
PASS_MARK, FAIL_MARK = ":green[:material/check_circle:]", ":red[:material/cancel:]"
NO_SCALING = inspect.getsource(solution).replace("/ d_k**0.5", "")
SQRT_QUIZ = "quiz_exercise_sqrt"


def texts(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


SOLUTION_TITLE = "Reference solution (core/exercise_solution.py)"


def solution_shown(at: AppTest) -> bool:
    return any(e.label == SOLUTION_TITLE for e in at.expander)


@pytest.fixture
def exec_on(monkeypatch):
    monkeypatch.delenv("ATTENTION_DISABLE_EXEC", raising=False)


def test_how_the_checker_works_quotes_the_sandboxs_memory_budget(exec_on):
    from exercise.limits import MEMORY_BUDGET_BYTES, bytes_in_words

    at = run_page(PAGE)
    text = " ".join(m.value for m in at.markdown)
    assert f"about **{bytes_in_words(MEMORY_BUDGET_BYTES)}** of memory beyond PyTorch's own" in text


def test_defaults_show_the_skeleton_and_hide_the_solution(exec_on):
    at = run_page(PAGE)
    assert not at.exception
    assert at.title[0].value.startswith("Build this")
    assert at.text_area(key="exercise_code").value == SKELETON
    assert not button(at, "Check my code").disabled
    assert not solution_shown(at)
    assert all(name in texts(at) for name in CHECK_NAMES)  # the checklist, in order
    assert not at.success and not at.get("alert")  # no quiz answer is shown before a guess


def test_checking_a_mistake_shows_the_checklist_the_diagnosis_and_then_the_solution(exec_on):
    at = run_page(PAGE)
    at.text_area(key="exercise_code").set_value(NO_SCALING)
    button(at, "Check my code").click()
    at.run(timeout=TIMEOUT + 90)
    assert not at.exception
    page = texts(at)
    assert f"{PASS_MARK} **1. The function exists and runs**" in page
    assert f"{FAIL_MARK} **4. torch.allclose with F.scaled_dot_product_attention**" in page
    assert any("No scaling" in w.value for w in at.warning)
    assert "unprivileged user" in page or "server's user" in page
    assert solution_shown(at)  # available after a first attempt
    assert not [c for c in at.code if "def scaled_dot_product_attention" in c.value]  # sent once opened
    source = next(c.value for c in open_code(at, SOLUTION_TITLE).code if "def scaled_dot_product_attention" in c.value)
    assert "masked_fill" in source and "d_k**0.5" in source
    assert any(sub.value == "Diagnosis" for sub in at.subheader)
    at.text_area(key="exercise_code").set_value(NO_SCALING + "\n# edited\n").run()
    assert "you have edited it since" in texts(at)


def test_giving_up_reveals_the_solution_and_reset_restores_the_skeleton(exec_on):
    at = run_page(PAGE)
    at.text_area(key="exercise_code").set_value("def nope(): pass").run()
    button(at, "I give up, show me").click().run()
    assert solution_shown(at)
    button(at, "Reset to the skeleton").click().run()
    assert at.text_area(key="exercise_code").value == SKELETON


def test_quiz_answers_are_computed_and_only_shown_after_reveal(exec_on):
    at = run_page(PAGE)
    demo = mistake_demo(Mistake(scale="d_k"))
    assert at.button(key=f"{SQRT_QUIZ}_reveal").disabled  # nothing picked yet
    at.radio(key=f"{SQRT_QUIZ}_choice").set_value("False").run()
    assert not at.success
    at.button(key=f"{SQRT_QUIZ}_reveal").click().run()
    assert at.success[0].value == "Right: **False**."
    assert f"{demo.max_abs_diff:.3f}" in texts(at)
    assert at.radio(key=f"{SQRT_QUIZ}_choice").disabled  # locked after the reveal

    at.radio(key="quiz_exercise_softmax_dim_choice").set_value(CHECK_NAMES[0]).run()
    at.button(key="quiz_exercise_softmax_dim_reveal").click().run()
    assert f"the computed answer is **{CHECK_ROWS}**" in " ".join(w.value for w in at.warning)


@pytest.mark.parametrize("how", ["environment", "secrets"])
def test_execution_can_be_switched_off(monkeypatch, how):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if how == "environment":
        monkeypatch.setenv("ATTENTION_DISABLE_EXEC", "1")
    else:
        monkeypatch.delenv("ATTENTION_DISABLE_EXEC", raising=False)
        at.secrets["ATTENTION_DISABLE_EXEC"] = "true"
    at.switch_page(PAGE)
    at.run()
    assert not at.exception
    assert any("switched off on this deployment" in i.value for i in at.info)
    assert button(at, "Check my code").disabled
    assert at.text_area(key="exercise_code").value == SKELETON  # the skeleton is still offered
    assert at.button(key=f"{SQRT_QUIZ}_reveal") is not None  # and the quizzes
    assert "Results" not in [h.value for h in at.header]
    button(at, "I give up, show me").click().run()
    assert solution_shown(at)  # and the reference solution


def test_a_host_that_cannot_enforce_the_sandbox_turns_checking_off_and_says_why(monkeypatch):
    """Fail closed, as a student sees it: the self-test fails, the page explains and offers the offline checks."""
    import time

    import streamlit as st

    import exercise.sandbox

    class HostWithoutFilter(exercise.sandbox.Sandbox):
        def __init__(self) -> None:
            super().__init__(filtered=False)

    monkeypatch.delenv("ATTENTION_DISABLE_EXEC", raising=False)
    monkeypatch.setattr(exercise.sandbox, "Sandbox", HostWithoutFilter)
    st.cache_resource.clear()
    try:
        at = run_page(PAGE)
        deadline = time.monotonic() + 60
        while not at.warning and time.monotonic() < deadline:  # the self-test runs in the background
            time.sleep(0.5)
            at.run()
        assert not at.exception
        notice = at.warning[0].value
        assert "off on this server" in notice and "a file could be opened" in notice
        assert "python -m exercise my_attention.py" in notice
        assert button(at, "Check my code").disabled
        assert at.text_area(key="exercise_code").value == SKELETON  # everything else still works
    finally:
        st.cache_resource.clear()  # the next tests get a real sandbox


@pytest.mark.parametrize("value", ["0", "false", ""])
def test_other_values_leave_execution_on(monkeypatch, value):
    monkeypatch.setenv("ATTENTION_DISABLE_EXEC", value)
    at = run_page(PAGE)
    assert not button(at, "Check my code").disabled


# --------------------------------------------------------------------------- ui.quiz.predict_then_reveal


def quiz_app() -> None:
    import streamlit as st

    from ui.quiz import predict_then_reveal

    st.session_state["result"] = predict_then_reveal(
        "Which is bigger?", ["2", "3"], answer=str(max(2, 3)), explanation="Because 3 > 2.", key="t")


def test_predict_then_reveal_needs_a_pick_then_shows_the_computed_answer():
    at = AppTest.from_function(quiz_app).run()
    radio = at.radio(key="quiz_t_choice")
    assert radio.value is None and at.button(key="quiz_t_reveal").disabled
    assert at.session_state["result"] is None and "Because" not in texts(at)

    radio.set_value("2").run()
    at.button(key="quiz_t_reveal").click().run()
    assert at.session_state["result"] is False
    assert "the computed answer is **3**" in at.warning[0].value and "Because 3 > 2." in texts(at)

    at.button(key="quiz_t_reset").click().run()
    assert at.radio(key="quiz_t_choice").value is None and at.session_state["result"] is None
    at.radio(key="quiz_t_choice").set_value("3").run()
    at.button(key="quiz_t_reveal").click().run()
    assert at.session_state["result"] is True and at.success[0].value == "Right: **3**."


def test_predict_then_reveal_rejects_an_answer_that_is_not_an_option():
    def bad_app() -> None:
        from ui.quiz import predict_then_reveal

        predict_then_reveal("?", ["a", "b"], answer="c", explanation="", key="bad")

    at = AppTest.from_function(bad_app).run()
    assert at.exception and "not one of the options" in at.exception[0].value


def test_the_check_gives_the_page_s_turn_back_while_the_sandbox_works(exec_on, monkeypatch):
    """The rest of the class runs while a student's code is in the sandbox (`ui.turns`): the page waits outside
    its turn."""
    import exercise.sandbox
    from ui import turns

    real, in_turn = exercise.sandbox.check_submission, []

    def check_submission(*args, **kwargs):
        in_turn.append(turns.holding())
        return real(*args, **kwargs)

    monkeypatch.setattr(exercise.sandbox, "check_submission", check_submission)
    at = run_page(PAGE)
    button(at, "Check my code").click()
    at.run(timeout=TIMEOUT + 90)
    assert not at.exception and in_turn == [False]


def test_the_sandbox_is_explained_behind_more_detail():
    """The checker's idea in two sentences on the page; how the sandbox is built in a closed "More detail"."""
    at = run_page("app_pages/exercise.py")
    (detail,) = [e for e in at.expander if e.label == "More detail: the sandbox your code runs in"]
    assert not detail.proto.expanded
    assert any("seccomp filter" in m.value for m in detail.markdown)
    visible = [m.value for m in at.markdown if "never runs inside this app" in m.value]
    assert visible and "seccomp" not in visible[0]


# ------------------------------------------------------------------- what the shared tests know of this page

SHARED = PageTests(
    probe=NO_NUMBERS,  # no page control: only presenter mode, which hides the text below
    valid=[Case("exercise", {"present": "true"}, {"present": True})],
    malformed=[Case("exercise", {"present": "maybe"}, {"present": False})],
    presenter_text="The lesson ends with an exercise",
)
