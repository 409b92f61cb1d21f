"""The class poll on every predict-then-reveal question: what both sides read, and the students' round.

`ui.quiz.predict_then_reveal` calls `student_round` above its own quiz, or `ui.poll_presenter.presenter_panel` under
it in presenter mode. The store's page is the quiz's key: each quiz has its own current round.

* **Student**: while a round is open the quiz shows it above the student's own question, with the settings it was
  asked at, and "Send my answer". Nothing is drawn when no round is open: the page is as before.
* **Lecturer** (`ui.poll_presenter`): behind the presenter key, opens the quiz to the class and runs the round.

Both are small fragments that rerun alone. A student's reruns only when the round's state changed (open, locked,
revealed, closed): its browser asks a small HTTP route for that state every few seconds and reruns the fragment
when it moved (`ui.poll_watch`), so an idle class costs the server no script runs. A run reads the quiz's version
through the process's `VersionCache` (one database read per quiz per half second, whatever the number of
students) and reads the round and counts only when the version moved. The page's charts never rerun for the poll.

One vote per browser per round: the browser keeps a random token in the `VOTER_COOKIE` cookie, written by the
watcher at the page's first visit and read back by every later session of that browser: a reload or a second
tab; the store only sees its keyed hash (`poll.VoterHasher`). A second browser is a second voter, as in every web
poll.

Every refusal or fault is a `poll.PollError` whose message is shown as it is; nothing else of the page changes.
"""

from __future__ import annotations

import urllib.parse

import streamlit as st

from poll import Counts, PollError, Round, new_browser_token, round_state
from poll.limits import BROWSER_TOKEN
from ui.poll_services import services, voter_hasher
from ui.poll_watch import BrowserCookie, watch_round
from ui.url_state import QUERY_KEYS, query_snapshot

#: The cookie that holds a browser's voter token (random; the server stores only its keyed hash).
VOTER_COOKIE = "attention_voter"
#: What a student who was answering a round reads while the poll's database cannot be reached, and once it can.
POLL_DOWN = ("The class poll cannot reach its database just now, so no answer can be sent; this box will say when "
             "it works again.")
POLL_BACK = "The class poll works again."
#: A year: the token outlives a lecture, so a student who comes back is the same voter.
COOKIE_MAX_AGE_S = 365 * 24 * 3600


# --- the browser's voter token ----------------------------------------------------------------------------------

def token_from_cookie(value: object) -> str | None:
    """The cookie's token if it is one `poll.new_browser_token` could have made (else None: a new one is made)."""
    if isinstance(value, str) and len(value) <= 128 and BROWSER_TOKEN.fullmatch(value):
        return value
    return None


def browser_token() -> str:
    """This browser's voter token: from its cookie, else made now (and written to the cookie, see `voter_cookie`)."""
    token = st.session_state.get("_poll_token")
    if token is None:
        token = st.session_state["_poll_token"] = (token_from_cookie(st.context.cookies.get(VOTER_COOKIE))
                                                   or new_browser_token())
    return token


def voter_cookie() -> BrowserCookie:
    """The cookie that keeps this session's token in the browser (`ui.poll_watch` writes it at the first visit)."""
    return BrowserCookie(VOTER_COOKIE, browser_token(), COOKIE_MAX_AGE_S)


def adopt_token(value: str) -> None:
    """The browser holds another token (a tab opened at the same moment wrote its own first): take the browser's,
    so that all its tabs are one voter, and read this session's recorded answers again under it."""
    token = token_from_cookie(value)
    if token is not None and token != st.session_state.get("_poll_token"):
        st.session_state["_poll_token"] = token
        for key in [k for k in st.session_state if k.startswith("_poll_") and k.endswith("_mine")]:
            del st.session_state[key]


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


def feedback(quiz: str, round_id: str | None = None) -> None:
    """The last message this session got about `quiz`'s poll, if any (only if it was about round `round_id`, when
    given: a new round starts without the last round's "Answer recorded")."""
    shown = st.session_state.get(f"_poll_{quiz}_feedback")
    if shown is not None and round_id in (None, shown[0]):
        _, kind, text = shown
        getattr(st, kind)(text, icon={"success": ":material/check_circle:", "error": ":material/error:",
                                      "warning": ":material/warning:"}[kind])


def say(quiz: str, kind: str, text: str, round_id: str | None = None) -> None:
    st.session_state[f"_poll_{quiz}_feedback"] = (round_id, kind, text)


# --- the student ------------------------------------------------------------------------------------------------

@st.fragment
def student_round(quiz: str) -> None:
    """The round open on `quiz`, if any: its question, the student's answer, and after the reveal, the answer.
    Reruns when the round's state changes (`ui.poll_watch.watch_round`)."""
    state = "unavailable"
    down_key = f"_poll_{quiz}_down"
    try:
        current = current_round(quiz)
        state = round_state(current)
        if current is not None:
            _student_view(quiz, current, back=st.session_state.pop(down_key, False))
    except PollError:  # the database is away: said only to a student who was answering a round
        seen = st.session_state.get(f"_poll_{quiz}_seen")
        if seen is not None and seen[1] is not None:
            st.session_state[down_key] = True
            _outage_view(quiz, seen[1])
    watch_round(quiz, state, voter_cookie(), adopt_token)


def _student_view(quiz: str, current: Round, back: bool = False) -> None:
    with st.container(border=True):
        round_heading(current, "Class poll")
        if back:
            st.success(POLL_BACK, icon=":material/cloud_done:")
        recorded = _answer_control(quiz, current)
        shown = st.session_state.get(f"_poll_{quiz}_feedback")
        if current.accepts_votes or (shown is not None and shown[1] != "success"):  # "you can change it" is over
            feedback(quiz, current.id)
        if current.is_revealed:
            _verdict(current, recorded)
        elif not current.accepts_votes:
            st.info("The lecturer has locked this round: answers are closed. Wait for the reveal.",
                    icon=":material/lock:")


def _outage_view(quiz: str, last: Round) -> None:
    """The round last seen, its question replaced by one sentence on the outage (and what became of a send that
    failed in it); the watcher reruns the fragment every interval meanwhile, so the student sees it end."""
    with st.container(border=True):
        round_heading(last, "Class poll")
        st.warning(POLL_DOWN, icon=":material/cloud_off:")
        shown = st.session_state.get(f"_poll_{quiz}_feedback")
        if shown is not None and shown[1] == "error":
            feedback(quiz)


def round_heading(current: Round, title: str) -> None:
    st.markdown(f"**{title}, round {current.number}**")
    settings = current.question.settings
    st.caption(f"Asked at the lecturer's settings: {settings_note(settings)}. "
               f"[Open the page at these settings]({settings_link(settings)}) to see the same numbers.")


def _answer_control(quiz: str, current: Round) -> str | None:
    """The round's options and "Send my answer" while it accepts answers; returns the student's recorded answer."""
    recorded = _recorded_answer(quiz, current)
    choice_key = f"poll_{quiz}_choice_{current.id}"
    options = list(current.question.options)
    if not current.accepts_votes or (choice_key not in st.session_state and recorded in options):
        st.session_state[choice_key] = recorded if recorded in options else None  # once closed: what was counted
    st.radio(current.question.text, options, index=None, key=choice_key, disabled=not current.accepts_votes)
    if current.accepts_votes:
        st.button("Send my answer", key=f"poll_{quiz}_send", on_click=_send, args=(quiz, current.id, choice_key),
                  type="primary", icon=":material/send:",
                  help="You can change your answer until the lecturer locks the round.")
    return recorded


def _recorded_answer(quiz: str, current: Round) -> str | None:
    """This browser's recorded answer in the round: read from the store once per stage of the round (open, locked,
    revealed) per session, so a locked or revealed round shows what was counted, whichever tab sent it."""
    mine = st.session_state.setdefault(f"_poll_{quiz}_mine", {})
    stage = (current.id, round_state(current))
    if stage not in mine:
        poll = services()
        mine[stage] = poll.store.vote_of(current.id, voter_hasher(poll.store).voter(browser_token()))
    return mine[stage]


def _send(quiz: str, round_id: str, choice_key: str) -> None:
    """Record the picked answer (a callback: it runs before the page, so a click after a lock is refused, not lost)."""
    choice = st.session_state.get(choice_key)
    if choice is None:
        say(quiz, "warning", "Pick an answer first, then send it.", round_id)
        return
    try:
        poll = services()
        poll.store.vote(round_id, voter_hasher(poll.store).voter(browser_token()), choice)
    except PollError as error:
        # Said on the round the page shows next: a locked round, or the one that replaced it.
        say(quiz, "error", f"Your answer was not recorded. {error}", _round_now(quiz, round_id))
        forget_round(quiz)
        return
    mine = st.session_state.setdefault(f"_poll_{quiz}_mine", {})
    for stage in [stage for stage in mine if stage[0] == round_id]:
        mine[stage] = choice
    say(quiz, "success", f"Answer recorded: **{choice}**. You can change it until the lecturer locks the round.",
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


