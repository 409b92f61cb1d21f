"""The lecturer's side of the exercise's class round (presenter mode, ``?present=true``), on the exercise page.

Behind the poll's presenter key (the same field, the same throttle: `ui.poll_presenter.key_form`), the lecturer
opens a round and sees the room's code at a glance: how many checked, how many pass now, the checks a first pass
took (median and spread), and the latest results that do not pass as bars, largest first, each labelled with the
checker's one-line explanation. "Show the class" puts the share who pass and the three most common mistakes on every
student's page, and "Hide from the class" takes them off again; "New round" counts from zero (the round before is
kept); "Download results" is the signed CSV route.

The panel is a fragment that reruns on a timer, every `PRESENTER_EVERY_S`: one session. It reads the round and its
rows only when the page's version moved (a recorded result moves it), through the process's `VersionCache`.
"""

from __future__ import annotations

import streamlit as st

from poll import ExerciseRound, PollError, RoundSummary, summarise
from ui.chart_names import counts_name
from ui.charts.exercise_round import mistakes_part
from ui.charts.template import part_spec
from ui.display import show_chart
from ui.exercise_round import PAGE, SHOWN_MISTAKES, result_line, show_summary
from ui.poll_presenter import PRESENTER_EVERY_S, unlocked_services
from ui.poll_results import EXERCISE_RESULTS_PATH, results_button
from ui.poll_services import services
from ui.wording.exercise_round import attempts_to_pass, passing

_READ = "_exround_panel"  # (version, round, summary): the panel's last reading
_SAID = "_exround_panel_said"  # the last refusal of an action, shown under the buttons


@st.fragment(run_every=PRESENTER_EVERY_S)
def exercise_panel() -> None:
    """The lecturer's controls of the exercise's class round, behind the presenter key."""
    with st.expander("Class round: the room's code at a glance", expanded=True, icon=":material/groups:"):
        if unlocked_services(PAGE, "The class round") is None:
            return
        try:
            current, summary = _reading()
            _round_view(current, summary)
        except PollError as error:
            st.error(f"Class round: {error}", icon=":material/cloud_off:")
        said = st.session_state.get(_SAID)
        if said:
            st.error(said, icon=":material/error:")


def _reading() -> tuple[ExerciseRound | None, RoundSummary | None]:
    """The page's round and its summary, read again only when the page's version moved."""
    poll = services()
    version = poll.versions.version(PAGE)
    kept = st.session_state.get(_READ)
    if kept is None or kept[0] != version:
        current = poll.store.exercise_round(PAGE)
        summary = None if current is None else summarise(poll.store.exercise_results(current.id))
        kept = st.session_state[_READ] = (version, current, summary)
    return kept[1], kept[2]


def _round_view(current: ExerciseRound | None, summary: RoundSummary | None) -> None:
    if current is None or summary is None:
        st.caption("Open a class round: while it is open, every student's **Check my code** counts what it came to "
                   "(never the code), and this panel shows the room.")
        st.button("Open a class round", key="exround_open", on_click=_act, args=("open", None), type="primary",
                  icon=":material/campaign:")
        return
    status = "open: checks are counted" if current.is_open else "closed"
    st.markdown(f"**Class round {current.number}**, {status}" + (" · shown to the class" if current.is_shown else ""))
    checked, passed, median = st.columns(3)
    checked.metric("Checked", summary.checked)
    passed.metric("Pass now", summary.passed)
    median.metric("Checks to pass (median)", "–" if summary.median_attempts is None else f"{summary.median_attempts:g}")
    st.caption(passing(summary) + " " + attempts_to_pass(summary))
    if summary.not_passing:
        labels = [result_line(result) for result, _ in summary.not_passing]
        counts = [n for _, n in summary.not_passing]
        show_chart(part_spec(mistakes_part(labels, counts, n_bars=len(labels))), export=False,
                   alt=counts_name("The room's mistakes now", labels, counts))
    if current.is_shown:
        st.caption(f"Every student's page shows the share who pass and the {SHOWN_MISTAKES} most common mistakes:")
        show_summary(summary)
    _buttons(current)


def _buttons(current: ExerciseRound) -> None:
    close, show, again, download = st.columns(4)
    close.button("Close the round", key="exround_close", on_click=_act, args=("close", current.id),
                 disabled=not current.is_open, icon=":material/stop_circle:",
                 help="Checks are no longer counted; the counts stay.")
    if current.is_shown:
        show.button("Hide from the class", key="exround_hide", on_click=_act, args=("hide", current.id),
                    icon=":material/visibility_off:", help="The students' pages no longer show the class's summary.")
    else:
        show.button("Show the class", key="exround_show", on_click=_act, args=("show", current.id), type="primary",
                    icon=":material/visibility:",
                    help=f"Every student's page shows the share who pass and the {SHOWN_MISTAKES} most common "
                         "mistakes, with their explanations: counts only, never a name or code.")
    again.button("New round", key="exround_new", on_click=_act, args=("open", None), icon=":material/replay:",
                 help="Counts from zero (this round is kept, and in the download).")
    with download:
        results_button(PAGE, EXERCISE_RESULTS_PATH)


def _act(action: str, round_id: str | None) -> None:
    """A lecturer's button (a callback); refused unless this session proved the presenter key."""
    if not st.session_state.get("_poll_presenter"):
        st.session_state[_SAID] = "Only the lecturer can do that: enter the presenter key first."
        return
    store = services().store
    try:
        {"open": lambda: store.open_exercise_round(PAGE), "close": lambda: store.close_exercise_round(round_id),
         "show": lambda: store.show_exercise_round(round_id),
         "hide": lambda: store.hide_exercise_round(round_id)}[action]()
    except PollError as error:
        st.session_state[_SAID] = f"Not done: {error}"
        return
    st.session_state[_SAID] = None
    st.session_state.pop(_READ, None)  # read again at once (the version cache may lag)
