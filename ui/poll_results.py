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

from poll import MalformedInputError, PollError, results_csv
from poll.limits import checked_name
from ui.poll_services import services, voter_hasher

#: The route's path, under the app's root (`ui.poll_watch.poll_routes` serves it).
RESULTS_PATH = "api/poll/results.csv"
#: How long a link given to the lecturer's session works (seconds): a lecture and then some.
LINK_LIFETIME_S = 12 * 3600


def _signature(quiz: str, until: int) -> str:
    secret = voter_hasher(services().store).secret
    key = hmac.new(secret, b"poll results link", hashlib.sha256).digest()
    return hmac.new(key, f"{quiz}\n{until}".encode(), hashlib.sha256).hexdigest()


def results_link(quiz: str) -> str:
    """The link to `quiz`'s CSV, relative to the page; the same on every run of the session (so the button the
    panel draws each second is the same element), renewed once it is past half its life."""
    kept = st.session_state.setdefault("_poll_results_links", {})
    until = kept.get(quiz)
    if until is None or until - time.time() < LINK_LIFETIME_S / 2:
        until = kept[quiz] = int(time.time()) + LINK_LIFETIME_S
    return f"{RESULTS_PATH}?quiz={quiz}&until={until}&sig={_signature(quiz, until)}"


def results_button(quiz: str) -> None:
    st.link_button("Download results", results_link(quiz), icon=":material/download:",
                   help=f"Every round of this question as CSV (poll-{quiz}.csv).")


async def results_endpoint(request: Request) -> Response:
    """``GET RESULTS_PATH?quiz=…&until=…&sig=…``: the quiz's CSV as an attachment, never cached. 400 for a
    malformed name, 403 for a link that is not signed or has expired, 503 while the database cannot be read."""
    try:
        quiz = checked_name(request.query_params.get("quiz", ""), "quiz")
    except MalformedInputError as error:
        return PlainTextResponse(str(error), status_code=400)
    until = request.query_params.get("until", "")
    sig = request.query_params.get("sig", "")
    try:
        valid = until.isdigit() and len(until) <= 12 and int(until) > time.time()
        if valid:
            expected = await run_in_threadpool(_signature, quiz, int(until))
            valid = hmac.compare_digest(sig.encode(), expected.encode())
        if not valid:
            return PlainTextResponse("This download link is not valid (or has expired): open the presenter panel "
                                     "again for a new one.", status_code=403)
        csv = await run_in_threadpool(results_csv, services().store, quiz)
    except PollError as error:
        return PlainTextResponse(str(error), status_code=503, headers={"Cache-Control": "no-store"})
    return Response(csv, media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="poll-{quiz}.csv"', "Cache-Control": "no-store"})
