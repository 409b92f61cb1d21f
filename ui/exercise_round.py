"""The exercise's class round on a student's page, and what a "Check my code" records in it.

* **Recording** (`record_check`): the page calls it with the report its own `check_submission` just returned, so
  what is counted is always the server's checker's result (`exercise.verdicts.ExerciseReport.outcome`), never a
  value from the browser: no widget, callback or query parameter carries a result. Only the outcome's kind, failed
  check and mistake's kind are sent, with the student's keyed browser token (`ui.class_poll.browser_token`: two tabs
  of one browser are one student). A check is recorded only while the process's reading of the round's state
  (`PollServices.exercise_states`, at most 0.5 s old) says a round is open; then it is one write.
* **A database that is away**: the check's result stays in the session, with the number of checks not yet counted,
  and the student reads that the count is paused; the next check, or the next run of the box (its watcher reruns
  it every interval while the route answers 503), sends them in one record. Results recorded before are in the
  database and stay there.
* **The box** (`class_round_box`, a fragment with the poll's watcher on `EXERCISE_STATE_PATH`): nothing without a
  round; while one is open, one line saying checks are counted; once the lecturer showed the class, the share who
  pass and the three most common mistakes with the checker's one-line explanations, as read when the box ran.
"""

from __future__ import annotations

import streamlit as st

from exercise.mistake_kinds import CheckOutcome, outcome_line
from exercise.verdicts import CHECK_NAMES, ExerciseReport
from poll import CheckResult, ExerciseRound, PollError, RoundSummary, exercise_state, summarise
from poll.exercise_rounds import MAX_ATTEMPTS_AT_ONCE
from ui.class_poll import adopt_token, browser_token, voter_cookie
from ui.layout import as_markdown
from ui.poll_services import services, voter_hasher
from ui.poll_watch import EXERCISE_STATE_PATH, watch_round
from ui.wording.exercise_round import shown_share

#: The store's page of the exercise's class round (beside the quizzes' names, which are the quizzes' keys).
PAGE = "exercise_class"
#: What a student reads while a check's result cannot be counted.
COUNT_PAUSED = ("The class count is paused: the lecturer's count cannot reach its database just now. Your result is "
                "kept here and counted when it is back.")
#: How many mistakes the class is shown.
SHOWN_MISTAKES = 3
_KNOWN = "_exround_known"  # the id of the open round this session last saw, or None
_PENDING = "_exround_pending"  # (round id last seen or None, checks not yet counted, the latest CheckResult)
_SEEN = "_exround_seen"  # (state, round, summary or None): the box's last reading


def stored_result(outcome: CheckOutcome) -> CheckResult:
    return CheckResult(outcome.kind, outcome.failed_check, outcome.mistake)


def result_line(result: CheckResult) -> str:
    """The checker's one line for a stored result (a row the checker no longer knows reads as its kind)."""
    try:
        return outcome_line(CheckOutcome(result.kind, result.failed_check, result.mistake), CHECK_NAMES)
    except ValueError:
        return result.kind.replace("_", " ").capitalize() + "."


def record_check(report: ExerciseReport) -> None:
    """Count the report's outcome in the open round, if there is one (see the module's docstring)."""
    if report.outcome is None:  # the checker, not the code, stopped the run: nothing to count
        return
    pending = st.session_state.get(_PENDING)
    checks = 1 + (pending[1] if pending else 0)
    known = pending[0] if pending else st.session_state.get(_KNOWN)
    _send(stored_result(report.outcome), min(checks, MAX_ATTEMPTS_AT_ONCE), known)


def _send(result: CheckResult, checks: int, known: str | None) -> None:
    try:
        poll = services()
        if "-open" not in poll.exercise_states.state(PAGE):
            st.session_state.pop(_PENDING, None)
            return
        recorded = poll.store.record_check(PAGE, voter_hasher(poll.store).voter(browser_token()), result,
                                           attempts=checks, attempts_round=known)
    except PollError:
        if known is not None:  # a round was open when the session last looked: keep the result for it
            st.session_state[_PENDING] = (known, checks, result)
        return
    st.session_state.pop(_PENDING, None)
    st.session_state[_KNOWN] = recorded.id if recorded is not None and recorded.is_open else None


def flush_pending() -> None:
    """Send the checks kept while the database was away (one record), if any."""
    pending = st.session_state.get(_PENDING)
    if pending is not None:
        _send(pending[2], pending[1], pending[0])


def count_paused() -> bool:
    return st.session_state.get(_PENDING) is not None


def _reading() -> tuple[str, ExerciseRound | None, RoundSummary | None]:
    """The round's state, the round and (once shown) its summary, read again only when the state moved."""
    poll = services()
    state = poll.exercise_states.state(PAGE)
    seen = st.session_state.get(_SEEN)
    if seen is None or seen[0] != state:
        current = poll.store.exercise_round(PAGE)
        summary = summarise(poll.store.exercise_results(current.id)) if current and current.is_shown else None
        seen = st.session_state[_SEEN] = (exercise_state(current), current, summary)
    return seen


@st.fragment
def class_round_box() -> None:
    """The class round as a student sees it; reruns when its state changes (the poll's watcher)."""
    state = "unavailable"
    try:
        flush_pending()
        state, current, summary = _reading()
        if current is not None:
            st.session_state[_KNOWN] = current.id if current.is_open else None
            _student_view(current, summary)
    except PollError:
        if st.session_state.get(_KNOWN) is not None:
            st.warning(COUNT_PAUSED, icon=":material/cloud_off:")
    watch_round(PAGE, state, voter_cookie(), adopt_token, path=EXERCISE_STATE_PATH)


def _student_view(current: ExerciseRound, summary: RoundSummary | None) -> None:
    with st.container(border=True):
        if current.is_open:
            st.markdown(f"**Class round {current.number} is open.** Each **Check my code** counts what your check "
                        "came to for the lecturer (passed, or the first check that failed and the kind of mistake), "
                        "never your code.")
        else:
            st.markdown(f"**Class round {current.number} is closed**: checks are no longer counted.")
        if count_paused():
            st.warning(COUNT_PAUSED, icon=":material/cloud_off:")
        if summary is not None:
            show_summary(summary)


def show_summary(summary: RoundSummary) -> None:
    """What the lecturer showed the class: the share who pass and the most common mistakes, anonymous."""
    st.markdown("**The class so far:** " + shown_share(summary))
    top = summary.top(SHOWN_MISTAKES)
    if top:
        st.markdown("The most common mistakes now:\n" + "\n".join(
            f"{i}. {as_markdown(result_line(result))} ({n} {'student' if n == 1 else 'students'})"
            for i, (result, n) in enumerate(top, start=1)))
