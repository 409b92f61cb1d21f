"""The lecturer's "Download results": the quiz's CSV from the app's own HTTP route, behind a signed link.

A download that goes through a Streamlit widget is a file the session's script run registers; the lecturer's panel
reruns every second, and a run replaces the files of the run before, so a click that reaches the server after the
next run has begun finds no file. A link to a route has nothing to replace: the browser fetches it on its own, the
route reads the store, whatever the panel is doing.

The route needs no session, so the link carries its own proof: ``quiz``, ``until`` (a Unix time) and ``sig``, an
HMAC-SHA256 of both under a key derived from the store's secret (the same for every process sharing the store).
Only a session that proved the presenter key is given a link, and a link lasts `LINK_LIFETIME_S`.
"""

from __future__ import annotations

import hashlib
import hmac
import time

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from poll import MalformedInputError, PollError, exercise_results_csv, results_csv
from poll.limits import checked_name
from ui.poll_services import services, voter_hasher

#: The route's path, under the app's root (`ui.poll_watch.poll_routes` serves it).
RESULTS_PATH = "api/poll/results.csv"
#: The exercise's rounds (`poll.exercise_results_csv`), its link signed the same way for the round's page.
EXERCISE_RESULTS_PATH = "api/poll/exercise-results.csv"
#: How long a link given to the lecturer's session works (seconds): a lecture and then some.
LINK_LIFETIME_S = 12 * 3600


def _signature(quiz: str, until: int, what: bytes = b"poll results link") -> str:
    secret = voter_hasher(services().store).secret
    key = hmac.new(secret, what, hashlib.sha256).digest()
    return hmac.new(key, f"{quiz}\n{until}".encode(), hashlib.sha256).hexdigest()


#: What each route's links are signed for, so that a quiz's link never opens the exercise's results.
_SIGNED_FOR = {RESULTS_PATH: b"poll results link", EXERCISE_RESULTS_PATH: b"exercise results link"}


def results_link(quiz: str, path: str = RESULTS_PATH) -> str:
    """The link to `quiz`'s CSV (at `path`: a quiz's, or the exercise's for its page), relative to the page; the
    same on every run of the session (so the button the panel draws each second is the same element), renewed once
    it is past half its life."""
    kept = st.session_state.setdefault("_poll_results_links", {})
    until = kept.get((path, quiz))
    if until is None or until - time.time() < LINK_LIFETIME_S / 2:
        until = kept[(path, quiz)] = int(time.time()) + LINK_LIFETIME_S
    return f"{path}?quiz={quiz}&until={until}&sig={_signature(quiz, until, _SIGNED_FOR[path])}"


def results_button(quiz: str, path: str = RESULTS_PATH) -> None:
    what = "Every round of the exercise" if path == EXERCISE_RESULTS_PATH else "Every round of this question"
    st.link_button("Download results", results_link(quiz, path), icon=":material/download:",
                   help=f"{what} as CSV ({_file_name(quiz, path)}).")


def _file_name(quiz: str, path: str) -> str:
    return f"exercise-{quiz}.csv" if path == EXERCISE_RESULTS_PATH else f"poll-{quiz}.csv"


async def results_endpoint(request: Request) -> Response:
    """``GET RESULTS_PATH?quiz=…&until=…&sig=…``: the quiz's CSV as an attachment, never cached. 400 for a
    malformed name, 403 for a link that is not signed or has expired, 503 while the database cannot be read."""
    return await _csv_answer(request, RESULTS_PATH, results_csv)


async def exercise_results_endpoint(request: Request) -> Response:
    """``GET EXERCISE_RESULTS_PATH?quiz=PAGE&until=…&sig=…``: the exercise's rounds on the page, as
    `results_endpoint` answers."""
    return await _csv_answer(request, EXERCISE_RESULTS_PATH, exercise_results_csv)


async def _csv_answer(request: Request, path: str, make_csv) -> Response:
    try:
        quiz = checked_name(request.query_params.get("quiz", ""), "quiz")
    except MalformedInputError as error:
        return PlainTextResponse(str(error), status_code=400)
    until = request.query_params.get("until", "")
    sig = request.query_params.get("sig", "")
    try:
        valid = until.isdigit() and len(until) <= 12 and int(until) > time.time()
        if valid:
            expected = await run_in_threadpool(_signature, quiz, int(until), _SIGNED_FOR[path])
            valid = hmac.compare_digest(sig.encode(), expected.encode())
        if not valid:
            return PlainTextResponse("This download link is not valid (or has expired): open the presenter panel "
                                     "again for a new one.", status_code=403)
        csv = await run_in_threadpool(make_csv, services().store, quiz)
    except PollError as error:
        return PlainTextResponse(str(error), status_code=503, headers={"Cache-Control": "no-store"})
    return Response(csv, media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="{_file_name(quiz, path)}"', "Cache-Control": "no-store"})
