"""Two "machines" (network namespaces, `devtools.hosts`) of two app processes each, behind one nginx, the class poll
on PostgreSQL in a third namespace: spoken to from outside, through nginx, as browsers would (`benchmarks.poll_idle`'s
`WatchingStudent`, `benchmarks.lecturer`'s `Presenter`), each browser pinned to one app process by its route cookie.

What it rests on: no machine keeps any of the poll. The rounds, the votes and the secret that turns a browser's token
into a voter live in the one PostgreSQL server, and every process is given the same presenter key. So a round opened
on one machine takes votes on every process of both, every process shows the class's totals, a browser that lands on
the other machine (its process died) brings its voter cookie and is the same voter there, and the one key unlocks
the lecturer's panel everywhere.

Run as root (CI is); skipped otherwise, or where nginx, PostgreSQL, iproute2 or setpriv is missing, with the reason.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.lecturer import PAGE, QUIZ, Presenter
from benchmarks.poll_idle import WatchingStudent
from benchmarks.protocol import ANSWER_TIMEOUT_S, RunSeen, page_hashes, run_coroutine
from devtools.appserver import ROOT
from devtools.cluster import ROUTE_COOKIE
from devtools.hosts import Hosts, missing_requirements
from poll.presenter_key import PRESENTER_KEY_ENV
from tests.deploy.test_upstream_health import LINE
from tests.helpers.unprivileged import CAN_SWITCH_USER, IS_ROOT, as_user, python_installations

KEY = "the-hosts-tests-presenter-key"
NOBODY = 65534  # the user id and group id the refusal runs as, under root
#: Route cookies tried, in order, until every app process has `ROUTES_EACH` of them.
CANDIDATE_ROUTES = [f"hosts-{k:03d}" for k in range(256)]
ROUTES_EACH = 8
#: A round, a vote or a count reaches every process's screens well within this (each reads the store at most
#: every 0.5 s: `ui.poll_services.VERSION_MAX_AGE_S`).
SEEN_WITHIN_S = 20.0
UNLOCK, OPEN, NEW_ROUND, LOCK = "Unlock the class poll", "Open to the class", "New round", "Lock"


class HeldCookies:
    """A browser's cookie jar: it loads the page, and opens the websocket, with every cookie it holds (its route, and
    its voter token once the page has written it)."""

    jar: dict[str, str]
    http_url: str

    def load_page(self) -> str:
        cookies = "; ".join(f"{name}={value}" for name, value in self.jar.items())
        request = urllib.request.Request(self.http_url + "/", headers={"Cookie": cookies})
        with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as response:
            response.read()
        return cookies


class Tab(HeldCookies, WatchingStudent):
    """A student's tab in a browser whose cookies are `jar`; it notes the answer its screen shows as already recorded
    (the poll's radio, set by the server)."""

    def __init__(self, url: str, page_hash: str, jar: dict[str, str]) -> None:
        super().__init__(url, page_hash, 0)
        self.jar = jar
        self.shown_answer: str | None = None

    async def connect(self) -> None:
        await super().connect()
        raw_recv = self.ws.recv

        async def recv(*args, **kwargs):
            raw = await raw_recv(*args, **kwargs)
            fm = ForwardMsg.FromString(raw)
            if fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element":
                radio = fm.delta.new_element.radio
                if f"poll_{QUIZ}_choice_" in radio.id and radio.set_value:
                    self.shown_answer = radio.raw_value
            return raw

        self.ws.recv = recv

    async def open_round(self) -> None:
        """Open the page, keep the voter cookie it writes (as its script does), and reload until the open round is
        on the screen."""
        await self.open_page()
        cookie = self.watcher["cookie"]
        self.jar.setdefault(cookie["name"], cookie["value"])
        deadline = time.monotonic() + SEEN_WITHIN_S
        while "send" not in self.vote_widgets:
            assert time.monotonic() < deadline, f"no open round reached the page through {self.cookies}"
            await asyncio.sleep(0.5)
            await self.rerun()


class Lecturer(HeldCookies, Presenter):
    """The lecturer's browser, pinned to one process by `route`, unlocked with `key`."""

    def __init__(self, url: str, page_hash: str, route: str, key: str = KEY) -> None:
        super().__init__(url, page_hash, key)
        self.jar = {ROUTE_COOKIE: route}

    async def panel(self) -> RunSeen:
        _, seen = await self.rerun()
        assert seen.exceptions == 0 and self.exceptions == 0, seen.exception_texts
        return seen


def shown_counts(seen: RunSeen) -> dict[str, int] | None:
    """The counts per option the lecturer's chart names ("'A', 4; 'B', 0."), if it was drawn."""
    for text in seen.markdown:
        pairs = re.findall(r"'([^']*)', (\d+)[;.]", text)
        if pairs:
            return {option: int(n) for option, n in pairs}
    return None


async def open_a_round(lecturer: Lecturer) -> list[str]:
    """Open a round of the page's quiz from the panel (a new one if one is open); its options."""
    await lecturer.open_page()
    seen = await lecturer.panel()
    widget, fragment = seen.widgets[OPEN] if OPEN in seen.widgets else seen.widgets[NEW_ROUND]
    lecturer.extra_states = [WidgetState(id=widget, trigger_value=True)]
    _, seen = await lecturer.rerun(fragment)
    counts = shown_counts(seen)
    assert counts is not None and sum(counts.values()) == 0, seen.markdown
    await lecturer.ws.close()
    return list(counts)


async def totals_shown(url: str, page_hash: str, route: str, expected: tuple[int, dict[str, int]]):
    """What the lecturer's panel shows on `route`'s process: ("Answered", counts per option), read again until it
    is `expected` or `SEEN_WITHIN_S` passed."""
    lecturer = Lecturer(url, page_hash, route)
    await lecturer.open_page()
    deadline = time.monotonic() + SEEN_WITHIN_S
    try:
        while True:
            seen = await lecturer.panel()
            shown = (lecturer.counts[-1][1] if lecturer.counts else None, shown_counts(seen))
            if shown == expected or time.monotonic() > deadline:
                return shown
            await asyncio.sleep(0.5)
    finally:
        await lecturer.ws.close()


def answered(hosts: Hosts, route: str, path: str = "/") -> list[str]:
    """The app process ("HOST:PORT") that finally answered each logged request of `route` for `path`."""
    return [m["upstream"].split(", ")[-1] for m in map(LINE.search, hosts.cluster.access_log.read_text().splitlines())
            if m and m["route"] == route and m["path"].split("?")[0] == path]


def reaches(hosts: Hosts, route: str) -> str:
    """Ask for the page with `route`; the app process that answered (nginx logs a request as it ends)."""
    before = len(answered(hosts, route))
    request = urllib.request.Request(hosts.url + "/", headers={"Cookie": f"{ROUTE_COOKIE}={route}"})
    with urllib.request.urlopen(request, timeout=ANSWER_TIMEOUT_S) as response:
        assert response.status == 200
    deadline = time.monotonic() + 10
    while len(found := answered(hosts, route)) == before:
        assert time.monotonic() < deadline, f"nginx logged no request of {route}"
        time.sleep(0.05)
    return found[-1]


def skip_unless_possible() -> None:
    problems = missing_requirements()
    if problems:
        pytest.skip("; ".join(problems))


@pytest.fixture(scope="module")
def hosts():
    skip_unless_possible()
    with Hosts(machines=2, processes=2, env={PRESENTER_KEY_ENV: KEY}) as started:
        yield started


@pytest.fixture(scope="module")
def page_hash(hosts) -> str:
    return page_hashes(hosts.url)[PAGE]


@pytest.fixture(scope="module")
def routes(hosts) -> dict[str, list[str]]:
    """`ROUTES_EACH` route cookies for each app process ("HOST:PORT"), by the process nginx sends them to."""
    found: dict[str, list[str]] = {address: [] for address in hosts.cluster.app_addresses}
    for route in CANDIDATE_ROUTES:
        found[reaches(hosts, route)].append(route)
        if min(map(len, found.values())) >= ROUTES_EACH:
            return {address: rs[:ROUTES_EACH] for address, rs in found.items()}
    pytest.fail(f"{len(CANDIDATE_ROUTES)} route cookies did not give every process {ROUTES_EACH}: {found}")


def test_votes_through_every_process_of_both_machines_are_counted_exactly_on_each(hosts, page_hash, routes):
    addresses = hosts.cluster.app_addresses
    assert sorted(hosts.machine_of(a) for a in addresses) == ["m1", "m1", "m2", "m2"]
    voters = [route for address in addresses for route in routes[address][1:4]]  # three browsers per process
    rng = random.Random(51)

    async def scenario():
        options = await open_a_round(Lecturer(hosts.url, page_hash, routes[addresses[0]][0]))
        tabs = [Tab(hosts.url, page_hash, {ROUTE_COOKIE: route}) for route in voters]
        await asyncio.gather(*(tab.open_round() for tab in tabs))
        last = []
        for k, tab in enumerate(tabs):  # every third browser changes its answer once
            for option in rng.sample(options, 2 if k % 3 == 0 else 1):
                await tab.vote(option)
            last.append(tab.votes[-1].option)
            await tab.ws.close()
        assert all(vote.recorded_at is not None for tab in tabs for vote in tab.votes)
        expected = (len(tabs), {option: last.count(option) for option in options})
        shown = {address: await totals_shown(hosts.url, page_hash, routes[address][0], expected)
                 for address in addresses}
        return expected, shown

    expected, shown = run_coroutine(scenario())
    assert shown == dict.fromkeys(addresses, expected)
    # The votes went through every process: each browser's websocket (its last, this test's) reached the process
    # its route leads to.
    assert {route: answered(hosts, route, "/_stcore/stream")[-1] for route in voters} == {
        route: address for address in addresses for route in routes[address][1:4]}


def test_a_browser_moved_to_the_other_machine_by_its_process_dying_is_still_one_voter(hosts, page_hash, routes):
    addresses = hosts.cluster.app_addresses
    doomed = addresses[0]
    others = [a for a in addresses if a != doomed]
    lecturer_route = routes[next(a for a in others if hosts.machine_of(a) != hosts.machine_of(doomed))][0]
    browsers = [{ROUTE_COOKIE: route} for route in routes[doomed][1:]]  # each jar is one browser's cookies
    bystanders = [{ROUTE_COOKIE: routes[a][4]} for a in others]

    async def scenario():
        first, second, *_ = options = await open_a_round(Lecturer(hosts.url, page_hash, lecturer_route))
        tabs = [Tab(hosts.url, page_hash, jar) for jar in browsers + bystanders]
        await asyncio.gather(*(tab.open_round() for tab in tabs))
        for tab in tabs:
            await tab.vote(first)
        hosts.kill(doomed)  # with the pages open: their process is gone, the browsers reload
        for tab in tabs:
            await tab.ws.close()
        again = [Tab(hosts.url, page_hash, jar) for jar in browsers]
        await asyncio.gather(*(tab.open_round() for tab in again))
        shown_before = [tab.shown_answer for tab in again]
        for tab in again:
            await tab.vote(second)
            await tab.ws.close()
        assert all(vote.recorded_at is not None for tab in tabs + again for vote in tab.votes)
        expected = (len(browsers) + len(bystanders),
                    {option: {first: len(bystanders), second: len(browsers)}.get(option, 0) for option in options})
        survivor = routes[next(a for a in others if hosts.machine_of(a) == hosts.machine_of(doomed))][0]
        shown = {route: await totals_shown(hosts.url, page_hash, route, expected)
                 for route in (survivor, *(routes[a][0] for a in others if a != survivor))}
        return first, shown_before, expected, shown

    try:
        first, shown_before, expected, shown = run_coroutine(scenario())
        moved_to = [answered(hosts, jar[ROUTE_COOKIE], "/_stcore/stream")[-1] for jar in browsers]
    finally:
        hosts.cluster.restart_dead_apps()
        deadline = time.monotonic() + 60  # nginx tries a process again 10 s after taking it out
        while reaches(hosts, routes[doomed][0]) != doomed and time.monotonic() < deadline:
            time.sleep(1)
    assert doomed not in moved_to
    assert any(hosts.machine_of(a) != hosts.machine_of(doomed) for a in moved_to), (
        f"none of {len(browsers)} browsers went to the other machine: {moved_to}")
    assert list(shown.values()) == [expected] * 3  # on the dead one's machine and on the other
    assert shown_before == [first] * len(browsers)  # their new process showed the answer they had given


def test_the_presenter_key_unlocks_the_panel_on_every_process_of_both_machines(hosts, page_hash, routes):
    async def unlocked(route: str, key: str) -> bool:
        lecturer = Lecturer(hosts.url, page_hash, route, key)
        await lecturer.open_page()
        try:
            seen = await lecturer.panel()
        finally:
            await lecturer.ws.close()
        controls = bool({OPEN, LOCK} & seen.widgets.keys())
        assert controls != (UNLOCK in seen.widgets), list(seen.widgets)
        return controls

    async def every_process() -> dict[str, tuple[bool, bool]]:
        # The wrong key first: one wrong key costs nothing, and the right one clears the client's record.
        return {address: (await unlocked(rs[5], "not-" + KEY), await unlocked(rs[5], KEY))
                for address, rs in routes.items()}

    assert run_coroutine(every_process()) == dict.fromkeys(routes, (False, True))


def test_wrong_keys_from_one_browser_do_not_lock_the_lecturer_out_of_a_process_on_another_machine(
        hosts, page_hash, routes):
    """The app processes see nginx's address for every browser; nginx is named to them as a trusted proxy, so a wrong
    key is charged to the address nginx saw (here: a stranger at 127.0.0.2, the lecturer at 127.0.0.3)."""
    async def unlocked(route: str, key: str, source: str) -> bool:
        lecturer = Lecturer(hosts.url, page_hash, route, key)
        lecturer.source_address = source
        await lecturer.open_page()
        try:
            seen = await lecturer.panel()
        finally:
            await lecturer.ws.close()
        return bool({OPEN, LOCK, NEW_ROUND} & seen.widgets.keys())

    async def every_process() -> dict[str, tuple[list[bool], bool]]:
        outcome = {}
        for address, rs in routes.items():
            strangers = [await unlocked(rs[6], f"guess-{k}", "127.0.0.2") for k in range(4)]
            outcome[address] = (strangers, await unlocked(rs[7], KEY, "127.0.0.3"))
        return outcome

    assert run_coroutine(every_process()) == dict.fromkeys(routes, ([False] * 4, True))


def test_the_tool_refuses_to_start_without_root_and_says_why():
    """As root, the tool is started as `nobody`, with this Python and the app reachable (`tests.helpers.unprivileged`:
    an interpreter under /root, 0700, cannot otherwise load its own libpython as that user)."""
    command = [sys.executable, "-m", "devtools.hosts"]
    if IS_ROOT:
        if not CAN_SWITCH_USER:
            pytest.skip("as root, the refusal needs setpriv and unshare (util-linux) to run as nobody")
        command = as_user(NOBODY, command, [*python_installations(), ROOT])
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr[-3000:]
    assert "must run as root" in done.stderr and "Traceback" not in done.stderr
    assert not [d for d in Path(tempfile.gettempdir()).glob("attention-hosts-*") if d.stat().st_uid == NOBODY]


def test_a_failed_start_leaves_nothing_behind():
    """A start that fails (its app process never answers in time) removes what it had made: processes, namespaces,
    links, data directories."""
    skip_unless_possible()
    failing = Hosts(machines=1, processes=1, startup_timeout_s=0.01)
    with pytest.raises(RuntimeError, match="did not answer"):
        failing.start()
    names = [m.netns for m in (*failing.machines, failing.database)]
    assert not set(names) & set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    assert failing.bridge not in subprocess.run(["ip", "link", "show"], capture_output=True, text=True).stdout
    assert not failing.base.exists() and not failing.postgres.base.exists()
    assert all(app.proc.poll() is not None for app in failing.cluster.apps)
