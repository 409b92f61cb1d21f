"""The layout for a bigger class (`devtools.cluster`, `deploy/nginx.conf.template`): two app processes behind
nginx, spoken to as browsers would, over Streamlit's own websocket protocol (the load benchmark's `Student`).

What it rests on: a Streamlit session and the files it made live in one process, so nginx must send every request
of one browser to the same process (its route cookie), and different browsers to different processes. Which
process answered is read from nginx's access log (`upstream=` and `route=` on every line), and the download test
also shows it from the app side: the other process does not have the file.
"""

from __future__ import annotations

import asyncio
import gzip
import random
import re
import time
import urllib.error
import urllib.request
from collections import Counter

import pytest
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.protocol import ANSWER_TIMEOUT_S, Student, page_hashes, run_coroutine
from devtools.appserver import router_pages
from devtools.cluster import INSTALL_HINT, ROUTE_COOKIE, Cluster, nginx_binary
from tests.helpers.registry import declarations

LOG_LINE = re.compile(r'"(?P<method>\S+) (?P<path>\S+) [^"]*" (?P<status>\d+) \d+ '
                      r'upstream=(?P<upstream>\S+) route=(?P<route>\S+)')
#: The route cookies the tests try, in this order, until each process has enough of them: fixed values, so a run
#: is reproducible for a given pair of ports; with consistent hashing over two processes, 64 values leave one
#: process without any only with a probability of about 2**-63.
CANDIDATE_ROUTES = [f"student-{k:02d}" for k in range(64)]
SPREAD = 4  # students per process in the spread test
PER_PROCESS = SPREAD + 2  # and one route each for the session test and the download test
#: The pages the spread test's students open (url paths; "" is the landing page): the concept pages, which draw
#: from cached NumPy results only (no sandbox, model or training run; ``concept`` of their `PageTests`).
PAGE_TESTS = declarations()
CONCEPT_PAGES = [page.url_path for page in router_pages() if page.name in PAGE_TESTS and PAGE_TESTS[page.name].concept]


class RecordingSocket:
    """A websocket that also notes what the tests need from the messages `Student` reads: the session's id (every
    full run starts with a `new_session` message carrying it) and the deferred download buttons drawn."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.session_id = ""
        self.downloads: dict[str, str] = {}  # button label -> deferred file id

    async def send(self, data: bytes) -> None:
        await self.ws.send(data)

    async def close(self) -> None:
        await self.ws.close()

    async def recv(self) -> bytes:
        raw = await self.ws.recv()
        fm = ForwardMsg.FromString(raw)
        kind = fm.WhichOneof("type")
        if kind == "new_session":
            self.session_id = fm.new_session.initialize.session_id
        elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            element = fm.delta.new_element
            if element.WhichOneof("type") == "download_button" and element.download_button.deferred_file_id:
                self.downloads[element.download_button.label] = element.download_button.deferred_file_id
        return raw


class Browser(Student):
    """A student whose browser holds nginx's route cookie, and can reconnect to its session as Streamlit's front
    end does after a dropped connection (the session's id as the third websocket subprotocol entry)."""

    def __init__(self, url: str, page_hash: str, route: str, query: dict[str, str] | None = None) -> None:
        super().__init__(url, page_hash, random.Random(0))
        self.route = route
        self.query = dict(query or {})

    async def connect(self, resume: str = "") -> None:
        protocols = ["streamlit", "PLACEHOLDER_AUTH_TOKEN", resume] if resume else ["streamlit"]
        self.ws = RecordingSocket(await websockets.connect(
            self.ws_url, subprotocols=protocols, additional_headers={"Cookie": f"{ROUTE_COOKIE}={self.route}"},
            max_size=2**27))

    async def deferred_file_url(self, file_id: str) -> str:
        """Ask the session to make a deferred download, as a click on its button does; return the file's URL."""
        msg = BackMsg()
        request = msg.backend_operation_request
        request.request_id, request.session_id, request.deferred_file.file_id = "test", self.ws.session_id, file_id
        await self.ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg.FromString(await asyncio.wait_for(self.ws.recv(), ANSWER_TIMEOUT_S))
            if fm.WhichOneof("type") == "backend_operation_response":
                assert not fm.backend_operation_response.error_msg, fm.backend_operation_response.error_msg
                return fm.backend_operation_response.deferred_file.url


def http_get(url: str, route: str | None = None, gzip_ok: bool = False,
             timeout_s: float = 30) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names; repeated ones joined by newlines) and raw body of a GET."""
    headers = {"Accept-Encoding": "gzip" if gzip_ok else "identity"}
    if route is not None:
        headers["Cookie"] = f"{ROUTE_COOKIE}={route}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s) as r:
            status, head, body = r.status, r.headers, r.read()
    except urllib.error.HTTPError as exc:
        status, head, body = exc.code, exc.headers, exc.read()
    joined: dict[str, str] = {}
    for name, value in head.items():
        joined[name.lower()] = f"{joined[name.lower()]}\n{value}" if name.lower() in joined else value
    return status, joined, body


def logged(cluster: Cluster, route: str, path: str, count: int) -> list[str]:
    """The app processes (their pids) that answered `route`'s requests for `path`, once `count` are logged.

    nginx logs a request when it ends (a websocket when it closes), so the lines may come a moment late.
    """
    pid_of = dict(zip(cluster.app_addresses, cluster.app_pids, strict=True))
    deadline = time.monotonic() + 10
    while True:
        found = [m for m in map(LOG_LINE.search, cluster.access_log.read_text().splitlines())
                 if m and m["route"] == route and m["path"].split("?")[0] == path]
        if len(found) >= count or time.monotonic() > deadline:
            assert len(found) == count, f"{route} {path}: {len(found)} requests logged, {count} expected"
            return [pid_of.get(m["upstream"], m["upstream"]) for m in found]
        time.sleep(0.1)


@pytest.fixture(scope="module")
def cluster():
    if nginx_binary() is None:
        pytest.skip(INSTALL_HINT)
    with Cluster(processes=2) as started:
        yield started


@pytest.fixture(scope="module")
def hashes(cluster) -> dict[str, str]:
    return page_hashes(cluster.url)


@pytest.fixture(scope="module")
def routes(cluster) -> dict[int, list[str]]:
    return routes_by_process(cluster, PER_PROCESS)


def routes_by_process(cluster: Cluster, per_process: int) -> dict[int, list[str]]:
    """Route cookies by the app process (pid) they reach: the first `per_process` of `CANDIDATE_ROUTES` for each,
    each asked twice for the page and answered by one process both times."""
    found: dict[int, list[str]] = {pid: [] for pid in cluster.app_pids}
    for route in CANDIDATE_ROUTES:
        for _ in range(2):
            assert http_get(cluster.url + "/", route)[0] == 200
        (pid,) = set(logged(cluster, route, "/", 2))
        found[pid].append(route)
        if min(map(len, found.values())) >= per_process:
            return {pid: found[pid][:per_process] for pid in found}
    pytest.fail(f"{len(CANDIDATE_ROUTES)} route cookies did not reach both processes: {found}")


def share_links(markdown: list[str]) -> list[str]:
    return [m for m in markdown if "seed=" in m]


def test_nginx_and_the_app_processes_run(cluster):
    assert len(cluster.app_pids) == 2 and cluster.nginx_pid
    status, _, body = http_get(cluster.url + "/_stcore/health")
    assert (status, body) == (200, b"ok")


@pytest.mark.router_wide  # every concept page in one test: docs/adding-a-page.md's quick check selects it
def test_students_with_different_cookies_are_spread_over_both_processes(cluster, hashes, routes):
    students = [(route, pid) for pid, rs in routes.items() for route in rs[:SPREAD]]
    pages = [page for page in CONCEPT_PAGES if page in hashes] or [""]

    async def visit(k: int, route: str) -> tuple[str, list[str], bool]:
        browser = Browser(cluster.url, hashes[pages[k % len(pages)]], route)
        await browser.connect()
        try:
            _, seen = await browser.rerun()
            texts = seen.exception_texts or ["(an exception without text)"] * seen.exceptions
            return browser.ws.session_id, texts, bool(seen.markdown)
        finally:
            await browser.ws.close()

    async def hall() -> list[tuple[str, list[str], bool]]:
        return await asyncio.gather(*(visit(k, route) for k, (route, _) in enumerate(students)))

    visits = run_coroutine(hall())
    assert all(not exceptions and drew for _, exceptions, drew in visits), visits  # the texts say which
    assert len({session for session, _, _ in visits}) == len(students)  # one session each
    answered = {route: logged(cluster, route, "/_stcore/stream", 1)[0] for route, _ in students}
    assert answered == dict(students)  # each websocket reached the process its cookie's page requests reached
    assert Counter(answered.values()) == {pid: SPREAD for pid in cluster.app_pids}


def test_a_session_keeps_its_process_and_state_across_reruns_a_reconnect_and_a_reload(cluster, hashes, routes):
    route = routes[cluster.app_pids[1]][SPREAD]
    home = hashes[""]  # the worked example: its seed slider is in the share link

    async def scenario() -> None:
        student = Browser(cluster.url, home, route)
        await student.connect()
        _, seen = await student.rerun()
        student.absorb(seen)
        session = student.ws.session_id
        seed = next(s for s in student.sliders.values() if s.query_key == "seed")
        for value in (3, 4, 5):  # three slider steps, each a rerun of the slider's fragment
            student.widget_values[seed.id] = [float(value)]
            student.query["seed"] = str(value)
            _, seen = await student.rerun(seed.fragment_id)
            assert seen.exceptions == 0 and share_links(seen.markdown), seen.exception_texts
            assert all(f"seed={value}" in link for link in share_links(seen.markdown))
        await student.ws.close()

        # The connection drops and comes back: the front end asks for its session by id, and gets it back only
        # from the process that holds it.
        await student.connect(resume=session)
        _, seen = await student.rerun()
        assert student.ws.session_id == session
        assert seen.exceptions == 0 and all("seed=5" in link for link in share_links(seen.markdown))
        assert share_links(seen.markdown)
        await student.ws.close()

        # A reload: a new session, from the URL alone (no widget state), on the same process.
        reloaded = Browser(cluster.url, home, route, query={"seed": "5"})
        await reloaded.connect()
        _, seen = await reloaded.rerun()
        assert reloaded.ws.session_id not in ("", session)
        assert seen.exceptions == 0 and share_links(seen.markdown)
        assert all("seed=5" in link for link in share_links(seen.markdown))
        await reloaded.ws.close()

    run_coroutine(scenario())
    assert logged(cluster, route, "/_stcore/stream", 3) == [cluster.app_pids[1]] * 3


def test_a_download_made_in_a_session_is_served_through_nginx_to_that_browser(cluster, hashes, routes):
    mine, other = routes[cluster.app_pids[0]][SPREAD + 1], routes[cluster.app_pids[1]][SPREAD + 1]
    # 64 x 64 cells: the table is drawn as one image, with CSV and LaTeX downloads made on click.
    student = Browser(cluster.url, hashes["positional_encoding"], mine, query={"positions": "64", "d_model": "64"})

    async def make_file() -> str:
        await student.connect()
        try:
            _, seen = await student.rerun()
            assert seen.exceptions == 0, seen.exception_texts
            return await student.deferred_file_url(student.ws.downloads["PE table as CSV"])
        finally:
            await student.ws.close()

    path = run_coroutine(make_file())
    assert path.startswith("/media/") and path.endswith(".csv")
    status, headers, body = http_get(cluster.url + path, mine, gzip_ok=True)
    assert status == 200
    assert headers["content-type"].startswith("text/csv")
    assert 'filename="pe_table.csv"' in headers["content-disposition"]
    assert headers.get("content-encoding") == "gzip"  # nginx compresses text downloads too
    rows = gzip.decompress(body).decode().splitlines()
    assert len(rows) == 1 + 64 and len(rows[1].split(",")) == 1 + 64  # a header row and a label column
    # The file exists only in the process that made it: another browser's route reaches the other process.
    assert http_get(cluster.url + path, other)[0] == 404
    assert logged(cluster, mine, path, 1) == [cluster.app_pids[0]]
    assert logged(cluster, other, path, 1) == [cluster.app_pids[1]]


def test_the_front_end_is_served_gzip_compressed_and_the_route_cookie_set_once(cluster):
    status, headers, page = http_get(cluster.url + "/", gzip_ok=True)
    assert status == 200 and headers["content-encoding"] == "gzip"
    cookie = re.fullmatch(rf"{ROUTE_COOKIE}=(\w+); Path=/; HttpOnly; SameSite=Lax", headers["set-cookie"])
    assert cookie, headers["set-cookie"]
    route = cookie.group(1)
    assert ROUTE_COOKIE not in http_get(cluster.url + "/", route)[1].get("set-cookie", "")  # a browser with one

    script = re.search(r'src="\./(static/js/index\.[\w-]+\.js)"', gzip.decompress(page).decode())
    assert script, "the page names no main script"
    plain = http_get(f"{cluster.url}/{script.group(1)}", route)
    packed = http_get(f"{cluster.url}/{script.group(1)}", route, gzip_ok=True)
    assert plain[0] == packed[0] == 200
    assert "content-encoding" not in plain[1]
    assert packed[1]["content-encoding"] == "gzip" and "Accept-Encoding" in packed[1]["vary"]
    assert packed[1]["content-type"].startswith(("application/javascript", "text/javascript"))
    assert gzip.decompress(packed[2]) == plain[2]
    assert len(packed[2]) < len(plain[2]) / 2
