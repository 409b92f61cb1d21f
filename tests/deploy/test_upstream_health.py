"""nginx takes a dead app process out of service, and never a busy one (`deploy/nginx.conf.template`'s upstream).

A busy process is played by one stopped with SIGSTOP: alive (the kernel still accepts its connections) but answering
nothing until SIGCONT. Its students' requests must wait for it and be answered by it, and it must never be taken out.
The shipped config waits an hour for a connected process, far past nginx's default of 60 s, beyond which a loaded
process's answer would count as a failure; that is checked in the config itself. The stall is played within seconds:
the cluster's nginx is given a shorter wait (`render_config`'s `process_wait`), and the process is stopped for less
than that but past uvicorn's keep-alive, so every other part of the config (which failures count, how many take a
process out, the kept connections) meets a stall as it would at full length. A process killed with SIGKILL refuses
every connection: its students' requests go to the other process and, after a few, nginx takes it out (they then go
straight to the other one).
"""

from __future__ import annotations

import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from devtools.cluster import INSTALL_HINT, PROCESS_WAITS, Cluster, nginx_binary, render_config
from tests.deploy.test_cluster import CANDIDATE_ROUTES, http_get

#: nginx's own wait for a connected process (proxy_read_timeout and proxy_send_timeout) when a config sets none.
NGINX_DEFAULT_WAIT_S = 60
#: The wait the stalled-process test's nginx is given, and how long its busy process answers nothing: longer than
#: uvicorn's keep-alive (5 s), so the process wakes to connections it accepted and then let lapse.
TEST_WAIT_S, STALL_S = 40, 10
#: Requests waiting on the stalled process: more than any `max_fails` a deployment would choose.
WAITING = 4
TAKEN_OUT = "upstream server temporarily disabled"
#: One access-log line: the path, status, the processes tried in order ("A, B" when A failed first) and the route.
LINE = re.compile(r'"GET (?P<path>\S+) [^"]*" (?P<status>\d+) \d+ upstream=(?P<upstream>.*?) route=(?P<route>\S+)')


@pytest.fixture
def cluster():
    if nginx_binary() is None:
        pytest.skip(INSTALL_HINT)
    with Cluster(processes=2, process_wait=f"{TEST_WAIT_S}s") as started:
        yield started


def seconds(nginx_time: str) -> float:
    """An nginx time ("90", "500ms", "10s", "5m", "1h", "1d") in seconds."""
    number, unit = re.fullmatch(r"(\d+)(ms|s|m|h|d)?", nginx_time).groups()
    return int(number) * {"ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit or "s"]


def tried(cluster: Cluster, route: str) -> list[list[str]]:
    """For each logged request of `route`, the processes nginx tried, in order (as "127.0.0.1:PORT")."""
    return [m["upstream"].split(", ") for m in map(LINE.search, cluster.access_log.read_text().splitlines())
            if m and m["route"] == route]


def logged(cluster: Cluster, requests: dict[str, int]) -> None:
    """Wait until the access log has `requests[route]` lines of each route: nginx logs a request as it ends."""
    deadline = time.monotonic() + 10
    while any(len(tried(cluster, route)) < n for route, n in requests.items()) and time.monotonic() < deadline:
        time.sleep(0.05)


def routes_to(cluster: Cluster, address: str, count: int) -> list[str]:
    """`count` route cookies that nginx sends to the process at `address` (each asked for the page once)."""
    found = []
    for route in CANDIDATE_ROUTES:
        assert http_get(cluster.url + "/", route)[0] == 200
        logged(cluster, {route: 1})
        if tried(cluster, route) == [[address]]:
            found.append(route)
            if len(found) == count:
                return found
    pytest.fail(f"{len(CANDIDATE_ROUTES)} routes gave {len(found)} to {address}")


def test_the_cluster_reads_nginx_answers_and_failures_from_its_logs(tmp_path):
    """What the load benchmark reports behind nginx: statuses from the access log, processes taken out and errors
    by kind from the error log."""
    cluster = Cluster(processes=1, run_dir=tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "access.log").write_text(
        '127.0.0.1 [05/Dec/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 891 upstream=127.0.0.1:1 route=a cache=- gzip=-\n'
        '127.0.0.1 [05/Dec/2026:10:00:01 +0000] "GET /x HTTP/1.1" 502 150 upstream=127.0.0.1:1 route=a cache=- gzip=-\n'
        '127.0.0.1 [05/Dec/2026:10:00:02 +0000] "GET / HTTP/1.1" 200 891 upstream=127.0.0.1:1, 127.0.0.1:2 route=b '
        'cache=- gzip=-\n')
    (tmp_path / "logs" / "error.log").write_text(
        '2026/12/05 10:00:01 [error] 7#7: *3 recv() failed (104: Connection reset by peer) while reading response '
        'header from upstream, client: 127.0.0.1, upstream: "http://127.0.0.1:1/"\n'
        '2026/12/05 10:00:01 [warn] 7#7: *3 upstream server temporarily disabled while reading response header from '
        'upstream, client: 127.0.0.1, upstream: "http://127.0.0.1:1/"\n')
    assert cluster.statuses() == {200: 2, 502: 1}
    assert cluster.processes_taken_out() == 1
    assert cluster.upstream_errors() == {"recv() failed (104: Connection reset by peer)": 1,
                                         TAKEN_OUT: 1}


def test_the_shipped_config_waits_an_hour_for_a_connected_process_and_a_test_can_shorten_that():
    """A loaded process may take longer than nginx's default wait to answer: the shipped config waits as long as for
    a websocket's next message, an hour, so the test below's shortened wait stands for that hour."""
    shipped = render_config("127.0.0.1:1", ["127.0.0.1:2"])
    waits = re.findall(r"^\s*proxy_(read|send)_timeout (\S+);", shipped, re.M)
    assert sorted(kind for kind, _ in waits) == ["read", "send"], waits
    assert all(seconds(value) >= 3600 > NGINX_DEFAULT_WAIT_S for _, value in waits), waits
    shortened = render_config("127.0.0.1:1", ["127.0.0.1:2"], process_wait=f"{TEST_WAIT_S}s")
    assert re.findall(r"^\s*proxy_(?:read|send)_timeout (\S+);", shortened, re.M) == [f"{TEST_WAIT_S}s"] * 2
    assert PROCESS_WAITS.sub("", shortened) == PROCESS_WAITS.sub("", shipped)  # and nothing else


def test_a_stalled_process_keeps_its_students_and_is_never_taken_out(cluster):
    busy, other = cluster.app_addresses
    waiting = routes_to(cluster, busy, WAITING)
    (control,) = routes_to(cluster, other, 1)
    pid = cluster.app_pids[0]
    seen = {route: len(tried(cluster, route)) for route in waiting}
    os.kill(pid, signal.SIGSTOP)
    try:
        with ThreadPoolExecutor(WAITING) as pool:
            answers = [pool.submit(http_get, cluster.url + "/", route, timeout_s=TEST_WAIT_S + 60) for route in waiting]
            assert http_get(cluster.url + "/", control)[0] == 200  # the other process's students are not held up
            time.sleep(STALL_S)
            assert not any(a.done() for a in answers), "answered while the process was stopped: nginx gave up on it"
            os.kill(pid, signal.SIGCONT)
            statuses = [a.result()[0] for a in answers]
    finally:
        os.kill(pid, signal.SIGCONT)
    assert statuses == [200] * WAITING
    logged(cluster, {route: n + 1 for route, n in seen.items()})  # and the stalled one
    # Each waiting request went to its own process first. On waking, uvicorn may close a connection it accepted while
    # stopped (its keep-alive clock ran on), and nginx passes that one request on: an error, never a take-out.
    for route in waiting:
        assert tried(cluster, route)[-1][0] == busy, (route, tried(cluster, route))
    assert TAKEN_OUT not in cluster.nginx_log
    # Still in service: a later request goes to it first (a connection nginx kept across the stall may be closed
    # under it, and that request is passed on as above).
    assert http_get(cluster.url + "/", waiting[0])[0] == 200 and tried(cluster, waiting[0])[-1][0] == busy


def test_a_killed_process_is_taken_out_and_its_students_go_to_the_other(cluster):
    dead, other = cluster.app_addresses
    routes = routes_to(cluster, dead, 3)
    proc = cluster.apps[0].proc
    seen = {route: len(tried(cluster, route)) for route in routes}
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    for k in range(12):  # one request at a time, spread over the dead process's routes
        assert http_get(cluster.url + "/", routes[k % len(routes)])[0] == 200
    logged(cluster, {route: n + 12 // len(routes) for route, n in seen.items()})
    attempts = [t for route in routes for t in tried(cluster, route)[1:]]  # after each route's first, healthy, visit
    assert all(t[-1] == other for t in attempts), attempts
    assert re.search(TAKEN_OUT + r".*upstream: \"http://" + re.escape(dead), cluster.nginx_log), cluster.nginx_log
    straight = [t for t in attempts if t == [other]]  # not even tried: out of service
    assert len(straight) >= 6, attempts
