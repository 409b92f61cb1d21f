"""The lecturer's side of the class poll (presenter mode, ``?present=true``), under every quiz.

The lecturer proves the presenter key once per session in a password field (`PresenterKeyGuard` throttles wrong
keys), then opens the quiz to the class. The round is fixed at the lecturer's settings: question, options, the
computed answer, the explanation and the settings' query string (`ui.class_poll.settings_query`). The panel shows
the join link and its QR code, how many answered, the answers' bars (the right one unmarked until the reveal), and
Lock, Reveal, New round, Close the poll and Download results.

The panel is a fragment that reruns on a timer, every `PRESENTER_EVERY_S`: one session, so often. It reads the
round and counts through `ui.class_poll` (only when the quiz's version moved).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import segno
import streamlit as st

from poll import PollError, Question, Round
from poll.key_guard import wait_text
from poll.limits import CLIENT_ID_CHARS
from poll.presenter_key import TRUSTED_PROXIES_ENV
from ui.chart_names import counts_name
from ui.charts.poll import answers_part
from ui.charts.template import part_spec
from ui.class_poll import (
    current_round,
    feedback,
    forget_round,
    round_counts,
    round_heading,
    say,
    settings_link,
    settings_query,
)
from ui.display import show_chart
from ui.poll_results import results_button
from ui.poll_services import PollServices, services

#: How often the lecturer's panel reads the answers (seconds): one session, so often.
PRESENTER_EVERY_S = 1.0
#: The key that takes an open round one step on (Lock, then Reveal): what a presentation clicker's "next" sends.
NEXT_STEP_KEY = "PageDown"
#: The presenter-key field's length cap: longer input is no key (and is not compared character by character).
KEY_FIELD_CHARS = 200


# --- the lecturer -----------------------------------------------------------------------------------------------

@st.fragment(run_every=PRESENTER_EVERY_S)
def presenter_panel(question: str, options: list[str], answer: str, explanation: str, quiz: str) -> None:
    """The lecturer's controls of `quiz`'s poll, behind the presenter key."""
    with st.expander("Class poll: ask the room", expanded=True, icon=":material/groups:"):
        poll = unlocked_services(quiz, "The class poll")
        if poll is None:
            return
        asked = Question(quiz=quiz, text=question, options=tuple(options), answer=answer,
                         explanation=explanation, settings=settings_query())
        try:
            current = current_round(quiz)
            _lecturer_round(poll, quiz, asked, current)
        except PollError as error:
            st.error(f"Class poll: {error}", icon=":material/cloud_off:")
        feedback(quiz)


def unlocked_services(quiz: str, what: str) -> PollServices | None:
    """The process's poll for a session that proved the presenter key; else None, the key's form (or why the poll
    cannot be used, `what` naming it) drawn in its place."""
    try:
        poll = services()
    except PollError as error:
        st.error(f"{what} cannot be used here: {error}", icon=":material/error:")
        return None
    if not st.session_state.get("_poll_presenter"):
        key_form(poll, quiz)
        return None
    return poll


def key_form(poll: PollServices, quiz: str) -> None:
    """The presenter-key field (a password field, emptied after every try; the key is never sent back). One per
    quiz on the page; any of them unlocks them all, for the session.

    The browser empties the field itself when the form is sent (`clear_on_submit`): the panel's timer keeps
    sending the field's value, and a tick sent before the try's answer arrives would otherwise put the key back
    into the field for good. Such a tick can still put it back into the session's state, until the next tick."""
    wait = poll.guard.wait_s(presenter_client())
    with st.form(f"poll_key_form_{quiz}", clear_on_submit=True, border=False):
        st.text_input("Presenter key", type="password", key=f"poll_key_{quiz}", max_chars=KEY_FIELD_CHARS,
                      help="From .streamlit/secrets.toml (presenter_key), the ATTENTION_PRESENTER_KEY environment "
                           "variable, or the server's log at start-up. Asked once per session.")
        st.form_submit_button("Unlock the class poll", on_click=_check_key, args=(poll, f"poll_key_{quiz}"),
                              icon=":material/key:", disabled=wait > 0)
    shown = st.session_state.get("_poll_key_error")
    if wait > 0:  # from this address, whatever the session: the panel's timer counts it down
        st.warning(f"Too many wrong presenter keys from this address: the next try is in {wait_text(wait)}.",
                   icon=":material/timer:")
    elif shown and shown[0] == quiz:
        st.error(shown[1], icon=":material/lock:")


def presenter_client() -> str:
    """Whom a presenter key is charged to: the client's address, which a reload, a new session or a dropped cookie
    keep. Behind a proxy (a loopback peer, which Streamlit reports as no address, or one of the addresses in
    `TRUSTED_PROXIES_ENV`) it is the address the proxy appended last to X-Forwarded-For; a client's own header is
    believed from no one else. With neither, every such client is one (the server as a whole)."""
    address = st.context.ip_address
    if not isinstance(address, str) or not address or address in trusted_proxies():
        forwarded = st.context.headers.get("X-Forwarded-For")
        address = (forwarded.rsplit(",", 1)[-1].strip() if isinstance(forwarded, str) else "") or "this server"
    return f"address {address}"[:CLIENT_ID_CHARS]


def trusted_proxies() -> frozenset[str]:
    """The proxies on other machines whose X-Forwarded-For is believed (`TRUSTED_PROXIES_ENV`: addresses separated
    by commas or spaces)."""
    return frozenset(os.environ.get(TRUSTED_PROXIES_ENV, "").replace(",", " ").split())


def _check_key(poll: PollServices, field: str) -> None:
    attempt = st.session_state.get(field) or ""
    st.session_state[field] = ""  # the typed key does not stay in the page's state
    try:
        poll.guard.check(presenter_client(), attempt[:KEY_FIELD_CHARS + 1])
    except PollError as error:
        st.session_state["_poll_key_error"] = (field.removeprefix("poll_key_"), str(error))
        return
    st.session_state["_poll_key_error"] = None
    st.session_state["_poll_presenter"] = True


def _lecturer_round(poll: PollServices, quiz: str, asked: Question, current: Round | None) -> None:
    """Open / the open round's link, QR, counts and controls."""
    if current is None:
        st.caption("Open this question to the class: students answer it at your current settings, on their phones.")
        st.button("Open to the class", key=f"poll_{quiz}_open", on_click=_act, args=(quiz, "open", asked),
                  type="primary", icon=":material/campaign:")
        _download(poll, quiz)
        return
    link = settings_link(current.question.settings)
    left, right = st.columns([1, 2])
    with left:
        round_heading(current, "Round open to the class" if current.accepts_votes else "Round locked")
        st.image(qr_image(link or "?"), caption="Scan to join", width=220)
        st.code(link or "(this page)", language=None, wrap_lines=True)
    with right:
        counts = round_counts(quiz, current.id)
        st.metric("Answered", counts.total)
        shown_answer = current.question.answer if current.is_revealed else None
        show_chart(part_spec(answers_part(counts.options, counts.votes, shown_answer, n_options=len(counts.options))),
                   export=False, alt=counts_name("The class's answers", counts.options, counts.votes))
        if current.is_revealed:
            st.success(f"The computed answer: **{current.question.answer}**.", icon=":material/check_circle:")
            st.markdown(current.question.explanation)
    _round_buttons(poll, quiz, asked, current)


def _round_buttons(poll: PollServices, quiz: str, asked: Question, current: Round) -> None:
    lock, reveal, again, close, download = st.columns(5)
    # A presentation clicker's "next" key (PageDown) takes the round one step on: lock, then reveal.
    next_step = "lock" if current.accepts_votes else None if current.is_revealed else "reveal"
    lock.button("Lock", key=f"poll_{quiz}_lock", on_click=_act, args=(quiz, "lock", current.id),
                disabled=not current.accepts_votes, icon=":material/lock:",
                shortcut=NEXT_STEP_KEY if next_step == "lock" else None,
                help=f"No more answers; the question stays. Key: {NEXT_STEP_KEY} (a clicker's next).")
    reveal.button("Reveal", key=f"poll_{quiz}_reveal", on_click=_act, args=(quiz, "reveal", current.id),
                  disabled=current.is_revealed, type="primary", icon=":material/visibility:",
                  shortcut=NEXT_STEP_KEY if next_step == "reveal" else None,
                  help="Show the computed answer and its explanation here and on every student's screen. "
                       f"Key: {NEXT_STEP_KEY} once the round is locked.")
    again.button("New round", key=f"poll_{quiz}_new", on_click=_act, args=(quiz, "new", current.id),
                 icon=":material/replay:", help="The same question again, counts from zero (this round is kept).")
    close.button("Close the poll", key=f"poll_{quiz}_close", on_click=_act, args=(quiz, "close", current.id),
                 icon=":material/stop_circle:", help="Students' pages go back to their own quiz (rounds are kept).")
    with download:
        _download(poll, quiz)
    if asked != current.question:
        st.caption("Your settings changed since this round opened: it still asks the question as it was then.")
        st.button("Open at my current settings", key=f"poll_{quiz}_reopen", on_click=_act,
                  args=(quiz, "open", asked), icon=":material/campaign:")


def _download(poll: PollServices, quiz: str) -> None:
    if poll.store.rounds(quiz):
        results_button(quiz)


def _act(quiz: str, action: str, target: Any) -> None:
    """A lecturer's button (a callback); refused unless this session proved the presenter key."""
    if not st.session_state.get("_poll_presenter"):
        say(quiz, "error", "Only the lecturer can do that: enter the presenter key first.")
        return
    store = services().store
    try:
        {"open": lambda: store.open_round(quiz, target), "lock": lambda: store.lock(target),
         "reveal": lambda: store.reveal(target), "new": lambda: store.new_round(target),
         "close": lambda: store.end_round(target)}[action]()
    except PollError as error:
        say(quiz, "error", f"Not done: {error}")
        return
    st.session_state.pop(f"_poll_{quiz}_feedback", None)
    forget_round(quiz)


@functools.lru_cache(maxsize=64)
def qr_image(link: str) -> str:
    """The link as a QR code, an SVG data URI made here (no network), once per link. A data URI, not image bytes:
    bytes become a media file per run, and a ticking fragment's earlier file may be gone before the browser asks."""
    return segno.make(link, error="m").svg_data_uri(scale=6, border=2)
