"""How a student's page learns that the lecturer opened, locked, revealed or closed a round, without a script run.

A fragment with ``run_every`` would cost the server a fragment run per student per interval, round or not, and a
class is mostly idle. Instead the browser asks a small HTTP route, `ROUND_STATE_PATH`, for the quiz's
`poll.round_state` every `STUDENT_EVERY_S` seconds. The route answers from the process's `poll.RoundStates`
(no script, no session; the store at most once per quiz per `ui.poll_services.VERSION_MAX_AGE_S`). Only when the
answer differs from the state the page was drawn at does `watch_round` set its trigger, which reruns the student's
poll fragment alone (`ui.class_poll.student_round`); the page's charts never rerun.

Where the route cannot be reached (an error status, or a host that does not pass it on), every tick reruns the
fragment instead, which is what ``run_every`` did: slower for the server, never wrong for the student. A tab in
the background does not ask.
"""

from __future__ import annotations

import dataclasses
import functools
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from poll import MalformedInputError, PollError
from poll.limits import checked_name
from ui.poll_results import EXERCISE_RESULTS_PATH, RESULTS_PATH, exercise_results_endpoint, results_endpoint
from ui.poll_services import services

#: The route's path: under the app's root, beside the pages (and its ``server.baseUrlPath``, if one is set).
ROUND_STATE_PATH = "api/poll/round-state"
#: The same for the exercise's class round (`poll.exercise_state`), asked with ``?quiz=`` the round's page.
EXERCISE_STATE_PATH = "api/poll/exercise-state"
#: The start of every watcher's widget key (`ui.accessibility` hides their empty boxes).
WATCH_KEY_PREFIX = "poll_watch_"
#: How often a student's browser asks whether its round changed (seconds).
STUDENT_EVERY_S = 2.0

#: Streamlit calls the component's function again on every run of its fragment, without calling the cleanup the
#: last call returned (that runs only when the element is removed). So the timer is kept per watcher in the page
#: (`window.__attentionPollWatch`, by the quiz's name): each call stops the one before, and one timer asks at a time,
#: always against the state just drawn.
_WATCH_JS = """
export default function ({ data, setTriggerValue }) {
  const cookie = data.cookie;
  if (cookie) {
    const kept = document.cookie.split("; ").find((pair) => pair.startsWith(cookie.name + "="));
    if (!kept) {
      document.cookie = `${cookie.name}=${cookie.value}; Path=/; Max-Age=${cookie.max_age_s}; SameSite=Lax`
        + (location.protocol === "https:" ? "; Secure" : "");
    } else if (kept.slice(cookie.name.length + 1) !== cookie.value) {
      setTriggerValue("cookie", kept.slice(cookie.name.length + 1));
    }
  }
  const timers = (window.__attentionPollWatch ??= new Map());
  clearInterval(timers.get(data.url));
  let asking = false;
  const timer = setInterval(async () => {
    if (asking || document.hidden) return;
    asking = true;
    try {
      const response = await fetch(data.url, { cache: "no-store" });
      const state = response.ok ? (await response.text()).trim() : null;
      if (timers.get(data.url) === timer && state !== data.state) setTriggerValue("changed", state ?? "unknown");
    } catch (error) {
      if (timers.get(data.url) === timer) setTriggerValue("changed", "unreachable");
    } finally {
      asking = false;
    }
  }, data.every_ms);
  timers.set(data.url, timer);
  return () => {
    clearInterval(timer);
    if (timers.get(data.url) === timer) timers.delete(data.url);
  };
}
"""

_watch = st.components.v2.component("attention_poll_watch", js=_WATCH_JS)


def route_path(path: str = ROUND_STATE_PATH) -> str:
    """`path` (a route's, under the app's root) from the server's root, under ``server.baseUrlPath`` if set."""
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/{path}" if base else f"/{path}"


@dataclass(frozen=True)
class BrowserCookie:
    """A cookie the browser must hold: written at once if it has none; if it holds another value, the browser's
    value wins (`watch_round`'s `on_cookie` gets it, before the fragment's next run)."""

    name: str
    value: str
    max_age_s: int


def watch_round(quiz: str, state: str, cookie: BrowserCookie | None = None,
                on_cookie: Callable[[str], None] | None = None, path: str = ROUND_STATE_PATH) -> None:
    """Rerun the enclosing fragment when `quiz`'s round state is no longer `state` (the one just drawn), and keep
    `cookie` in the browser (see `BrowserCookie`).

    Call it inside the fragment, on every run. `path` is the route asked (`EXERCISE_STATE_PATH` for the exercise's
    round, whose page `quiz` then names). Its URL is relative to the page (every page's path is one segment
    under the app's root), so it also reaches the app behind a proxy that serves it under a prefix.
    """
    key = f"{WATCH_KEY_PREFIX}{quiz}"
    url = f"{path}?{urllib.parse.urlencode({'quiz': quiz})}"
    data = {"url": url, "state": state, "every_ms": int(STUDENT_EVERY_S * 1000),
            "cookie": dataclasses.asdict(cookie) if cookie is not None else None}
    _watch(key=key, data=data, height=0, on_changed_change=_noop,
           on_cookie_change=functools.partial(_cookie_seen, key, on_cookie or (lambda value: None)))


def _noop() -> None:
    """A trigger needs a callback to be a trigger; the rerun it causes is all that is wanted."""


def _cookie_seen(key: str, on_cookie: Callable[[str], None]) -> None:
    value = st.session_state[key].get("cookie")
    if isinstance(value, str):
        on_cookie(value)


async def round_state_endpoint(request: Request) -> Response:
    """``GET ROUND_STATE_PATH?quiz=NAME``: the quiz's `poll.round_state`, as plain text, never cached.

    400 for a malformed name, 503 while the poll's database cannot be read. The answer is what every student's
    screen shows anyway (no round, or its number and stage), so it needs no key.
    """
    return await _state_answer(request, exercise=False)


async def exercise_state_endpoint(request: Request) -> Response:
    """``GET EXERCISE_STATE_PATH?quiz=PAGE``: the page's `poll.exercise_state`, as `round_state_endpoint` answers."""
    return await _state_answer(request, exercise=True)


async def _state_answer(request: Request, exercise: bool) -> Response:
    try:
        quiz = checked_name(request.query_params.get("quiz", ""), "quiz")
    except MalformedInputError as error:
        return PlainTextResponse(str(error), status_code=400)
    try:
        states = services().exercise_states if exercise else services().states
        state = states.fresh(quiz)
        if state is None:  # an old reading: the store is asked off the event loop
            state = await run_in_threadpool(states.state, quiz)
    except PollError:
        return PlainTextResponse("poll unavailable", status_code=503, headers={"Cache-Control": "no-store"})
    return PlainTextResponse(state, headers={"Cache-Control": "no-store"})


def poll_routes() -> list[Route]:
    """The routes `streamlit_app.py` adds to its `st.App`: the round's state (a quiz's, the exercise's), and the
    lecturer's results (`ui.poll_results`)."""
    return [Route(route_path(), round_state_endpoint, methods=["GET"]),
            Route(route_path(EXERCISE_STATE_PATH), exercise_state_endpoint, methods=["GET"]),
            Route(route_path(RESULTS_PATH), results_endpoint, methods=["GET"]),
            Route(route_path(EXERCISE_RESULTS_PATH), exercise_results_endpoint, methods=["GET"])]
