"""The class poll on every predict-then-reveal question (issue #36): the lecturer's panel and the students' round.

`ui.quiz.predict_then_reveal` calls `student_round` above its own quiz, or `presenter_panel` under it in presenter
mode. The store's page is the quiz's key: each quiz
has its own current round.

* **Lecturer** (presenter mode, ``?present=true``): proves the presenter key once per session in a password field
  (`PresenterKeyGuard` throttles wrong keys per browser), then opens the quiz to the class. The round is fixed at
  the lecturer's settings: question, options, the computed answer, the explanation and the settings' query string.
  The panel shows the join link and its QR code, how many answered, the answers' bars (the right one unmarked
  until the reveal), and Lock, Reveal, New round, Close the poll and Download results.
* **Student**: while a round is open the quiz shows it above the student's own question, with the settings it was
  asked at, and "Send my answer". Nothing is drawn when no round is open: the page is as before.

Both are small fragments that rerun alone. The lecturer's reruns on a timer, every `PRESENTER_EVERY_S`. A student's
reruns only when the round's state changed (open, locked, revealed, closed): its browser asks a small HTTP route for
that state every few seconds and reruns the fragment when it moved (`ui.poll_watch`), so an idle class costs the
server no script runs. A run reads the quiz's version through the process's `VersionCache` (one database read per
quiz per half second, whatever the number of students) and reads the round and counts only when the version moved.
The page's charts never rerun for the poll.

One vote per browser per round: the browser keeps a random token in the `VOTER_COOKIE` cookie (set by a line of
JavaScript the first time, read back by every later session of that browser: a reload or a second tab); the store
only sees its keyed hash (`poll.VoterHasher`). A second browser is a second voter, as in every web poll.

Every refusal or fault is a `poll.PollError` whose message is shown as it is; nothing else of the page changes.
"""

from __future__ import annotations

import functools
import os
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

import segno
import streamlit as st

from poll import (
    Counts,
    PollError,
    PollStore,
    PresenterKey,
    PresenterKeyGuard,
    Question,
    Round,
    RoundStates,
    VersionCache,
    VoterHasher,
    data_dir,
    new_browser_token,
    open_store,
    presenter_key,
    results_csv,
    round_state,
)
from poll.factory import DATA_DIR_ENV, DATABASE_URL_ENV
from poll.limits import BROWSER_TOKEN
from poll.presenter_key import PRESENTER_KEY_ENV
from ui.chart_names import counts_name
from ui.charts.poll import answers_part
from ui.charts.template import part_spec
from ui.display import show_chart
from ui.poll_watch import watch_round
from ui.url_state import QUERY_KEYS, query_snapshot

#: How often the lecturer's panel reads the answers (seconds): one session, so often.
PRESENTER_EVERY_S = 1.0
#: How old a quiz's version may be when a session reads it (`VersionCache`: one store read per quiz per interval).
VERSION_MAX_AGE_S = 0.5
#: The key that takes an open round one step on (Lock, then Reveal): what a presentation clicker's "next" sends.
NEXT_STEP_KEY = "PageDown"
#: The cookie that holds a browser's voter token (random; the server stores only its keyed hash).
VOTER_COOKIE = "attention_voter"
#: A year: the token outlives a lecture, so a student who comes back is the same voter.
COOKIE_MAX_AGE_S = 365 * 24 * 3600
#: The presenter-key field's length cap: longer input is no key (and is not compared character by character).
KEY_FIELD_CHARS = 200


@dataclass(frozen=True)
class PollServices:
    """One process's poll: the store, the version cache, the students' round states, the presenter key and its
    throttle."""

    store: PollStore
    versions: VersionCache
    states: RoundStates
    key: PresenterKey
    guard: PresenterKeyGuard


_services: dict[tuple[str, ...], PollServices] = {}
_hashers: dict[int, VoterHasher] = {}
_services_lock = threading.Lock()


def _secret_key() -> str | None:
    """``presenter_key`` from ``.streamlit/secrets.toml``, if there is one."""
    try:
        value = st.secrets.get("presenter_key")
    except Exception:  # noqa: BLE001 - no secrets file (or an unreadable one): the environment or a generated key
        return None
    return value if isinstance(value, str) else None


def services() -> PollServices:
    """This process's poll for its configuration, made once (raises `PollError` if it cannot be configured)."""
    config = (os.environ.get(DATABASE_URL_ENV, ""), os.environ.get(DATA_DIR_ENV, ""),
              os.environ.get(PRESENTER_KEY_ENV, ""))
    with _services_lock:
        found = _services.get(config)
        if found is None:
            store = open_store()
            key = presenter_key(_secret_key(), data_dir())
            versions = VersionCache(store, VERSION_MAX_AGE_S)
            found = PollServices(store, versions, RoundStates(store, versions), key, PresenterKeyGuard(key))
            _services[config] = found
    return found


def voter_hasher(store: PollStore) -> VoterHasher:
    """The store's hasher, read from the database once per process (a failed read is tried again next time)."""
    with _services_lock:
        found = _hashers.get(id(store))
    if found is None:
        found = store.voter_hasher()
        with _services_lock:
            _hashers[id(store)] = found
    return found


def announce_presenter_key() -> str | None:
    """At the server's start (`ui.warmup.lifespan`): log a generated presenter key once, or why there is none.

    A configured key (secrets or environment) is never logged. Returns what was logged.
    """
    from streamlit.logger import get_logger

    log = get_logger("attention")
    try:
        key = services().key
    except PollError as error:
        log.warning("Class poll: %s The poll's lecturer controls will say so.", error)
        return str(error)
    if key.source != "generated":
        return None
    line = f"Class poll: the presenter key is {key.value} (type it in presenter mode to open a quiz to the class)."
    log.warning(line)
    return line


# --- the browser's voter token ----------------------------------------------------------------------------------

def token_from_cookie(value: object) -> str | None:
    """The cookie's token if it is one `poll.new_browser_token` could have made (else None: a new one is made)."""
    if isinstance(value, str) and len(value) <= 128 and BROWSER_TOKEN.fullmatch(value):
        return value
    return None


def browser_token() -> str:
    """This browser's voter token: from its cookie, else made now (and written to the cookie, see `_keep_token`)."""
    token = st.session_state.get("_poll_token")
    if token is None:
        token = token_from_cookie(st.context.cookies.get(VOTER_COOKIE))
        st.session_state["_poll_cookie_read"] = token is not None
        token = token or new_browser_token()
        st.session_state["_poll_token"] = token
    return token


def _keep_token() -> None:
    """Write a token made in this session to the browser's cookie, once, so a reload or a second tab reuse it."""
    if st.session_state.get("_poll_cookie_read", True) or st.session_state.get("_poll_cookie_sent"):
        return
    st.session_state["_poll_cookie_sent"] = True
    secure = "; Secure" if (st.context.url or "").startswith("https:") else ""
    st.html(f"<script>document.cookie = '{VOTER_COOKIE}={st.session_state['_poll_token']}; Path=/; "
            f"Max-Age={COOKIE_MAX_AGE_S}; SameSite=Lax{secure}';</script>", unsafe_allow_javascript=True,
            width="content")


# --- what both sides read ---------------------------------------------------------------------------------------

def current_round(quiz: str) -> Round | None:
    """The quiz's current round, read again only when its version moved since this session last looked."""
    poll = services()
    version = poll.versions.version(quiz)
    seen_key = f"_poll_{quiz}_seen"
    seen = st.session_state.get(seen_key)
    if seen is not None and seen[0] == version:
        return seen[1]
    found = poll.store.current_round(quiz)
    st.session_state[seen_key] = (version, found)
    st.session_state.pop(f"_poll_{quiz}_counts", None)  # the counts are read again too
    return found


def round_counts(quiz: str, round_id: str) -> Counts:
    """The round's counts, read from the store only when the quiz's version moved (`current_round`)."""
    kept = st.session_state.get(f"_poll_{quiz}_counts")
    if kept is None or kept.round_id != round_id:
        kept = st.session_state[f"_poll_{quiz}_counts"] = services().store.counts(round_id)
    return kept


def forget_round(quiz: str) -> None:
    """After this session changed the poll: read it again on the next run (the version cache may lag). The round
    last seen is kept, so a failed read can still say what the student was answering."""
    seen = st.session_state.get(f"_poll_{quiz}_seen")
    if seen is not None:
        st.session_state[f"_poll_{quiz}_seen"] = (None, seen[1])


def settings_query() -> str:
    """The current view's settings as a query string: every documented key but presenter mode."""
    params = {k: v for k, v in query_snapshot().items() if k in QUERY_KEYS and k != "present"}
    return urllib.parse.urlencode(params, doseq=True)


def settings_link(settings: str) -> str:
    """The page at `settings` (absolute in a browser; AppTest has no address)."""
    return (st.context.url or "") + (f"?{settings}" if settings else "")


def settings_note(settings: str) -> str:
    """``d_k = 64, scaled = false`` for ``d_k=64&scaled=false`` (or the page's defaults)."""
    pairs = urllib.parse.parse_qsl(settings)
    return ", ".join(f"`{k}` = {v}" for k, v in pairs) if pairs else "the page's defaults"


def _feedback(quiz: str, round_id: str | None = None) -> None:
    """The last message this session got about `quiz`'s poll, if any (only if it was about round `round_id`, when
    given: a new round starts without the last round's "Answer recorded")."""
    shown = st.session_state.get(f"_poll_{quiz}_feedback")
    if shown is not None and round_id in (None, shown[0]):
        _, kind, text = shown
        getattr(st, kind)(text, icon={"success": ":material/check_circle:", "error": ":material/error:",
                                      "warning": ":material/warning:"}[kind])


def _say(quiz: str, kind: str, text: str, round_id: str | None = None) -> None:
    st.session_state[f"_poll_{quiz}_feedback"] = (round_id, kind, text)


# --- the student ------------------------------------------------------------------------------------------------

@st.fragment
def student_round(quiz: str) -> None:
    """The round open on `quiz`, if any: its question, the student's answer, and after the reveal, the answer.
    Reruns when the round's state changes (`ui.poll_watch.watch_round`)."""
    state = "unavailable"
    try:
        current = current_round(quiz)
        state = round_state(current)
        if current is not None:
            _student_view(quiz, current)
    except PollError as error:  # the database is away: say so only to a student who was answering a round
        seen = st.session_state.get(f"_poll_{quiz}_seen")
        if seen is not None and seen[1] is not None:
            if f"_poll_{quiz}_feedback" in st.session_state:
                _feedback(quiz)  # what became of their last send, which says why
            else:
                st.warning(f"Class poll: {error}", icon=":material/cloud_off:")
    watch_round(quiz, state)


def _student_view(quiz: str, current: Round) -> None:
    with st.container(border=True):
        _round_heading(current, "Class poll")
        recorded = _answer_control(quiz, current)
        shown = st.session_state.get(f"_poll_{quiz}_feedback")
        if current.accepts_votes or (shown is not None and shown[1] != "success"):  # "you can change it" is over
            _feedback(quiz, current.id)
        if current.is_revealed:
            _verdict(current, recorded)
        elif not current.accepts_votes:
            st.info("The lecturer has locked this round: answers are closed. Wait for the reveal.",
                    icon=":material/lock:")
    _keep_token()


def _round_heading(current: Round, title: str) -> None:
    st.markdown(f"**{title}, round {current.number}**")
    settings = current.question.settings
    st.caption(f"Asked at the lecturer's settings: {settings_note(settings)}. "
               f"[Open the page at these settings]({settings_link(settings)}) to see the same numbers.")


def _answer_control(quiz: str, current: Round) -> str | None:
    """The round's options and "Send my answer" while it accepts answers; returns the student's recorded answer."""
    recorded = _recorded_answer(quiz, current)
    choice_key = f"poll_{quiz}_choice_{current.id}"
    options = list(current.question.options)
    if choice_key not in st.session_state and recorded in options:
        st.session_state[choice_key] = recorded
    st.radio(current.question.text, options, index=None, key=choice_key, disabled=not current.accepts_votes)
    if current.accepts_votes:
        st.button("Send my answer", key=f"poll_{quiz}_send", on_click=_send, args=(quiz, current.id, choice_key),
                  type="primary", icon=":material/send:",
                  help="You can change your answer until the lecturer locks the round.")
    return recorded


def _recorded_answer(quiz: str, current: Round) -> str | None:
    """This browser's recorded answer in the round: read from the store once per round per session."""
    mine = st.session_state.setdefault(f"_poll_{quiz}_mine", {})
    if current.id not in mine:
        poll = services()
        mine[current.id] = poll.store.vote_of(current.id, voter_hasher(poll.store).voter(browser_token()))
    return mine[current.id]


def _send(quiz: str, round_id: str, choice_key: str) -> None:
    """Record the picked answer (a callback: it runs before the page, so a click after a lock is refused, not lost)."""
    choice = st.session_state.get(choice_key)
    if choice is None:
        _say(quiz, "warning", "Pick an answer first, then send it.", round_id)
        return
    try:
        poll = services()
        poll.store.vote(round_id, voter_hasher(poll.store).voter(browser_token()), choice)
    except PollError as error:
        # Said on the round the page shows next: a locked round, or the one that replaced it.
        _say(quiz, "error", f"Your answer was not recorded. {error}", _round_now(quiz, round_id))
        forget_round(quiz)
        return
    st.session_state.setdefault(f"_poll_{quiz}_mine", {})[round_id] = choice
    _say(quiz, "success", f"Answer recorded: **{choice}**. You can change it until the lecturer locks the round.",
         round_id)


def _round_now(quiz: str, round_id: str) -> str:
    """The id of `quiz`'s current round (`round_id` if it cannot be read now)."""
    try:
        current = services().store.current_round(quiz)
    except PollError:
        return round_id
    return current.id if current is not None else round_id


def _verdict(current: Round, recorded: str | None) -> None:
    answer = current.question.answer
    if recorded is None:
        st.info(f"You did not answer this round. The computed answer is **{answer}**.", icon=":material/lightbulb:")
    elif recorded == answer:
        st.success(f"Right: **{answer}**.", icon=":material/check_circle:")
    else:
        st.warning(f"Not quite: you answered **{recorded}**; the computed answer is **{answer}**.",
                   icon=":material/lightbulb:")
    st.markdown(current.question.explanation)


# --- the lecturer -----------------------------------------------------------------------------------------------

@st.fragment(run_every=PRESENTER_EVERY_S)
def presenter_panel(question: str, options: list[str], answer: str, explanation: str, quiz: str) -> None:
    """The lecturer's controls of `quiz`'s poll, behind the presenter key."""
    with st.expander("Class poll: ask the room", expanded=True, icon=":material/groups:"):
        try:
            poll = services()
        except PollError as error:
            st.error(f"The class poll cannot be used here: {error}", icon=":material/error:")
            return
        if not st.session_state.get("_poll_presenter"):
            _key_form(poll, quiz)
            return
        asked = Question(quiz=quiz, text=question, options=tuple(options), answer=answer,
                         explanation=explanation, settings=settings_query())
        try:
            current = current_round(quiz)
            _lecturer_round(poll, quiz, asked, current)
        except PollError as error:
            st.error(f"Class poll: {error}", icon=":material/cloud_off:")
        _feedback(quiz)


def _key_form(poll: PollServices, quiz: str) -> None:
    """The presenter-key field (a password field, emptied after every try; the key is never sent back). One per
    quiz on the page; any of them unlocks them all, for the session."""
    with st.form(f"poll_key_form_{quiz}", border=False):
        st.text_input("Presenter key", type="password", key=f"poll_key_{quiz}", max_chars=KEY_FIELD_CHARS,
                      help="From .streamlit/secrets.toml (presenter_key), the ATTENTION_PRESENTER_KEY environment "
                           "variable, or the server's log at start-up. Asked once per session.")
        st.form_submit_button("Unlock the class poll", on_click=_check_key, args=(poll, f"poll_key_{quiz}"),
                              icon=":material/key:")
    shown = st.session_state.get("_poll_key_error")
    if shown and shown[0] == quiz:
        st.error(shown[1], icon=":material/lock:")


def _check_key(poll: PollServices, field: str) -> None:
    attempt = st.session_state.get(field) or ""
    st.session_state[field] = ""  # the typed key does not stay in the page's state
    try:
        poll.guard.check(browser_token(), attempt[:KEY_FIELD_CHARS + 1])
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
        _round_heading(current, "Round open to the class" if current.accepts_votes else "Round locked")
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
        st.download_button("Download results", data=lambda: results_csv(poll.store, quiz),
                           file_name=f"poll-{quiz}.csv", mime="text/csv", key=f"poll_{quiz}_csv",
                           icon=":material/download:", on_click="ignore")


def _act(quiz: str, action: str, target: Any) -> None:
    """A lecturer's button (a callback); refused unless this session proved the presenter key."""
    if not st.session_state.get("_poll_presenter"):
        _say(quiz, "error", "Only the lecturer can do that: enter the presenter key first.")
        return
    store = services().store
    try:
        {"open": lambda: store.open_round(quiz, target), "lock": lambda: store.lock(target),
         "reveal": lambda: store.reveal(target), "new": lambda: store.new_round(target),
         "close": lambda: store.end_round(target)}[action]()
    except PollError as error:
        _say(quiz, "error", f"Not done: {error}")
        return
    st.session_state.pop(f"_poll_{quiz}_feedback", None)
    forget_round(quiz)


@functools.lru_cache(maxsize=64)
def qr_image(link: str) -> str:
    """The link as a QR code, an SVG data URI made here (no network), once per link. A data URI, not image bytes:
    bytes become a media file per run, and a ticking fragment's earlier file may be gone before the browser asks."""
    return segno.make(link, error="m").svg_data_uri(scale=6, border=2)
