"""A lecture hall on one server: simulated students speaking Streamlit's own websocket protocol.

    python -m benchmarks.load [--students 60] [--minutes 2] [--arrival 5] [--repeats 1] [--processes 1 2]
                              [--out benchmarks/load_results.json] [--profile FILE]

No browser: each student is a websocket client (the `websockets` package Streamlit already depends on) that
sends the `BackMsg` protobufs the front end sends and reads the `ForwardMsg`s back. Students arrive within
`--arrival` seconds, spread over every page of the router, open their page, then make slider steps with
1–3 s pauses until the time is up. A step is what the browser sends for a slider inside a page's fragment:
a rerun of that fragment only, with every widget's state and the new query string.

A student whose page has a quiz also asks the class poll's route for the round's state every 2 s, as its
browser does (`ui.poll_watch`). With ``--poll-round`` a lecturer, in presenter mode on the scaled-attention page,
keeps a round of the poll open for the whole run, its panel rerunning every second.

A first visit starts with a GET of the page's HTML, as in a browser (which would then load the front end's files:
not fetched here), and the websocket is opened with the cookies that came with it. With ``--processes 1 2`` each
repeat runs one `streamlit run` process, then two behind nginx (`devtools.cluster`, which routes by that cookie),
and the table puts the layouts side by side.

Reported (per repeat; medians over repeats):

* step latency, from sending the step to the server's ``script_finished``: p50, p95, max (a run that the
  server ends early for another, such as an ``st.rerun``, is followed to the end of the run that replaces it);
* first visit, from the page's GET to the first run's ``script_finished``: p50, p95;
* the app processes' CPU time per step and first visit (all their threads, from /proc), and the largest
  process's peak RSS;
* exception boxes sent, and sessions that failed (no answer, a closed connection, or an error status);
* behind nginx: its answers with a 5xx status (``nginx_5xx``), the times it took an app process out of service
  (``taken_out``: every process is alive throughout, so the target is 0) and its errors about the processes, by
  kind (``upstream_errors``, in the JSON);
* cross-talk: two extra students on the worked example, seeds 1 and 2, each step their own seed slider and
  must each get back the share link for their own seed.
* the machine's speed just before the run: how long a fixed pure-Python loop takes
  (`benchmarks.timing.python_loop_s`). This shared machine's speed changes from hour to hour, and CPU per
  step with it; compare runs alongside this figure, or alternate A and B.

With ``--profile FILE``, `py-spy` (a development requirement) samples the (first) app process for the whole
run, only the thread holding the interpreter lock, so the samples show where the server's CPU goes. The
stacks go to FILE in the "collapsed" format (a line per stack and its sample count) for a flame-graph tool;
``python -m benchmarks.load --summarise FILE`` sums them by function.

Targets (issue #24, 60 students on one process): p50 <= 250 ms, p95 <= 1 s, CPU <= 20 ms per step,
0 exceptions, 0 failed sessions, RSS <= 1 GB, no cross-talk. Nothing asserts on time: the table says
which targets are met.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.timing import percentile, python_loop_s
from devtools.appserver import AppServer
from devtools.cluster import Cluster
from ui.poll_watch import WATCH_KEY_PREFIX

T = TypeVar("T")
TARGETS = {"step_p50_ms": 250.0, "step_p95_ms": 1000.0, "cpu_ms_per_step": 20.0, "rss_mb": 1024.0,
           "first_visit_p95_s": 5.0}
#: Server CPU for a step to a setting never computed, median over the pages' sliders (issue #33).
NEW_SETTING_CPU_MS = 20.0
ANSWER_TIMEOUT_S = 60.0
#: The presenter key of the benchmark's servers (`--poll-round`).
POLL_KEY = "the-benchmark-lecturers-key"


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` in a thread of its own: the calling thread may already be running an event loop
    (under pytest, Playwright's synchronous API leaves one behind), and asyncio allows one loop per thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@dataclass
class Slider:
    """A slider as the server drew it: enough to step it as the browser would."""

    id: str
    label: str
    value: list[float]
    low: float
    high: float
    step: float
    fragment_id: str
    query_key: str
    options: list[str]


def grid(slider: Slider) -> list[float]:
    """Every value `slider` can take: its options' indices, or its range on its step."""
    if slider.options:
        return [float(i) for i in range(len(slider.options))]
    n = int(round((slider.high - slider.low) / slider.step))
    return [round(slider.low + k * slider.step, 10) for k in range(n + 1)]


def option_text(slider: Slider, value: float) -> str:
    """What the URL holds for `value`: a select slider's option, or the number as the browser writes it."""
    if slider.options:
        return slider.options[int(value)]
    return str(int(value)) if float(value).is_integer() else str(value)


def next_value(slider: Slider, regime: str, rng: random.Random) -> float:
    """The value a student moves `slider` to: the neighbouring notch (``notch``) or any other value (``jump``)."""
    current = slider.value[0]
    if regime == "notch":
        up = current + slider.step <= slider.high and (current - slider.step < slider.low or rng.random() < 0.5)
        return current + slider.step if up else current - slider.step
    others = [v for v in grid(slider) if abs(v - current) > 1e-9]
    return rng.choice(others) if others else current


@dataclass
class RunSeen:
    """What one rerun sent back."""

    sliders: dict[str, Slider] = field(default_factory=dict)
    exceptions: int = 0
    exception_texts: list[str] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)
    fragments: set[str] = field(default_factory=set)  # the fragments that ran
    interrupted: int = 0  # runs that stopped early for another (an `st.rerun`, or a newer request)
    widgets: dict[str, tuple[str, str]] = field(default_factory=dict)  # a button's or text area's label: id, fragment
    watcher: dict | None = None  # the class poll's watcher (`ui.poll_watch`) as drawn: its data (url, every_ms)


class HttpConnection:
    """One keep-alive HTTP/1.1 connection, as a browser keeps to its server: ``await get(path)`` -> (status, body)."""

    def __init__(self, url: str, cookies: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port, self.cookies = parts.hostname, parts.port or 80, cookies
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, str]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        cookie = f"Cookie: {self.cookies}\r\n" if self.cookies else ""
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{cookie}\r\n".encode())
        await self.writer.drain()
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        headers = dict(line.lower().split(": ", 1) for line in head[1:] if ": " in line)
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection") == "close":
            self.close()
        return status, body.decode()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Student:
    """One browser tab, as Streamlit's server sees it."""

    def __init__(self, url: str, page_hash: str, rng: random.Random) -> None:
        self.http_url = url
        self.ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.page_hash = page_hash
        self.rng = rng
        self.query: dict[str, str] = {}
        self.widget_values: dict[str, list[float] | list[str]] = {}
        self.sliders: dict[str, Slider] = {}
        self.extra_states: list = []  # other widgets' states (WidgetState protos), sent with the next rerun only
        self.cookies = ""  # what the page came with (behind nginx, its route cookie)
        self.ws = None

    async def connect(self) -> None:
        """Load the page, as a browser does before it opens the websocket, and open the websocket with the
        cookies the page came with (behind nginx, the route cookie that keeps this student on one process)."""
        self.cookies = cookies = await asyncio.to_thread(self.load_page)
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=2**27,
                                           additional_headers={"Cookie": cookies} if cookies else None)

    def load_page(self) -> str:
        """GET the app's page (its HTML only; a browser would then fetch the front end's files): its cookies."""
        with urllib.request.urlopen(self.http_url + "/", timeout=ANSWER_TIMEOUT_S) as response:
            response.read()
            return "; ".join(c.split(";", 1)[0] for c in response.headers.get_all("Set-Cookie") or [])

    async def rerun(self, fragment_id: str = "") -> tuple[float, RunSeen]:
        """Send a rerun (of the page, or of one fragment) and read until the run is finished."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = urlencode(self.query)
        state.page_script_hash = self.page_hash
        state.fragment_id = fragment_id
        for widget_id, value in self.widget_values.items():
            w = state.widget_states.widgets.add()
            w.id = widget_id
            if isinstance(value[0], str):  # a select slider: its option's text
                w.string_array_value.data.extend(value)
            else:
                w.double_array_value.data.extend(value)
        state.widget_states.widgets.extend(self.extra_states)
        self.extra_states = []
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        seen = RunSeen()
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), ANSWER_TIMEOUT_S)
            fm = ForwardMsg.FromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.fragment_id:
                seen.fragments.add(fm.delta.fragment_id)
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                which = element.WhichOneof("type")
                if which == "exception":
                    seen.exceptions += 1
                    where = " | ".join(line.strip() for line in element.exception.stack_trace[-2:])
                    text = f"{element.exception.type}: {element.exception.message} ({where})"
                    seen.exception_texts.append(text[:600])
                elif which == "markdown":
                    seen.markdown.append(element.markdown.body)
                elif which in ("button", "text_area"):
                    widget = getattr(element, which)
                    seen.widgets[widget.label] = (widget.id, fm.delta.fragment_id)
                elif which == "bidi_component" and WATCH_KEY_PREFIX in element.bidi_component.id:
                    seen.watcher = json.loads(element.bidi_component.json)
                elif which == "slider" and fm.delta.fragment_id:
                    s = element.slider
                    value = list(s.value) or list(s.default)
                    seen.sliders[s.id] = Slider(s.id, s.label, value, s.min, s.max, s.step or 1.0,
                                                fm.delta.fragment_id, s.query_param_key, list(s.options))
                    if s.set_value:  # the server set the widget's value: the browser takes it over
                        self.widget_values.pop(s.id, None)
            elif kind == "page_info_changed":  # the server rewrote the URL, as it does when it changes a widget
                self.query = dict(parse_qsl(fm.page_info_changed.query_string))
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:  # another run follows: wait for it
                    seen.interrupted += 1
                    continue
                return time.perf_counter() - t0, seen

    def step_slider(self, regime: str = "notch") -> str:
        """Move a random slider, as an arrow key does (``notch``: to a neighbouring value) or as a click on its
        track does (``jump``: to any other value); return the fragment to rerun."""
        slider = self.rng.choice(list(self.sliders.values()))
        new = next_value(slider, regime, self.rng)
        self.set_slider(slider, new)
        return slider.fragment_id

    def set_slider(self, slider: Slider, new: float) -> None:
        """Give `slider` the value `new` (an option's index for a select slider), in its state and the URL."""
        slider.value = [new]
        text = option_text(slider, new)
        # a select slider's state is its option's text, a slider's its number
        self.widget_values[slider.id] = [text] if slider.options else [new]
        if slider.query_key:
            self.query[slider.query_key] = text

    def absorb(self, seen: RunSeen) -> None:
        """Take over the sliders as the server last drew them (range, value), as the browser does. A slider that
        a fragment which ran did not draw again is gone (its id changes with its range), and so is its state."""
        for slider_id, slider in list(self.sliders.items()):
            if slider.fragment_id in seen.fragments and slider_id not in seen.sliders:
                del self.sliders[slider_id]
                self.widget_values.pop(slider_id, None)
        for slider_id, slider in seen.sliders.items():
            if slider_id in self.widget_values and slider_id in self.sliders:
                slider.value = self.sliders[slider_id].value  # the value this student set
            self.sliders[slider_id] = slider


async def student_session(url: str, page_hash: str, seed: int, arrive_s: float, end_at: float,
                          results: dict, regime: str = "notch", link: dict[str, str] | None = None) -> None:
    """One student: arrive, open the page (at `link`'s values, if given), then step sliders until `end_at`."""
    rng = random.Random(seed)
    await asyncio.sleep(arrive_s)
    student = Student(url, page_hash, rng)
    student.query = dict(link or {})
    asking = None
    try:
        arrived = time.perf_counter()
        await student.connect()
        _, seen = await student.rerun()
        results["first_visit_s"].append(time.perf_counter() - arrived)
        record(results, seen, page_hash)
        student.absorb(seen)
        if seen.watcher is not None:
            asking = asyncio.create_task(ask_round_state(student, seen.watcher, end_at, results))
        while student.sliders and time.monotonic() < end_at:
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            fragment = student.step_slider("notch" if regime == "notch" else "jump")
            took, seen = await student.rerun(fragment)
            results["step_s"].append(took)
            record(results, seen, page_hash)
            student.absorb(seen)
        if asking is not None:
            await asking
    except (TimeoutError, websockets.ConnectionClosed, websockets.InvalidStatus, OSError) as exc:
        results["failed"].append(f"{type(exc).__name__}: {exc}"[:200])
    finally:
        if asking is not None:
            asking.cancel()
        if student.ws is not None:
            await student.ws.close()


async def ask_round_state(student: Student, watcher: dict, end_at: float, results: dict) -> None:
    """What the browser does for a page with the class poll's watcher (`ui.poll_watch`): ask its route for the
    quiz's round state every interval until `end_at` (a state other than the one drawn would rerun the poll's
    fragment; this benchmark's rounds, if any, open before the students arrive, so none is expected)."""
    http = HttpConnection(student.http_url, student.cookies)
    interval = watcher["every_ms"] / 1000
    try:
        while time.monotonic() + interval < end_at:
            await asyncio.sleep(interval)
            status, state = await asyncio.wait_for(http.get("/" + watcher["url"]), ANSWER_TIMEOUT_S)
            results["round_state_asks"] = results.get("round_state_asks", 0) + 1
            if status != 200 or state != watcher["state"]:
                results["round_state_changes"] = results.get("round_state_changes", 0) + 1
    finally:
        http.close()


def record(results: dict, seen: RunSeen, page_hash: str) -> None:
    """Add a run's exception boxes and early ends to the hall's results."""
    results["exceptions"] += seen.exceptions
    results["exception_texts"] += [f"{page_hash[:6]} {t}" for t in seen.exception_texts]
    results["interrupted_runs"] += seen.interrupted


def page_sliders(url: str, hashes: dict[str, str]) -> dict[str, list[Slider]]:
    """Every page's sliders as drawn at its defaults (page script hash -> sliders), for random links."""
    async def visit(page_hash: str) -> list[Slider]:
        student = Student(url, page_hash, random.Random(0))
        await student.connect()
        try:
            _, seen = await student.rerun()
            return list(seen.sliders.values())
        finally:
            await student.ws.close()

    async def every_page() -> dict[str, list[Slider]]:
        return {h: await visit(h) for h in hashes.values()}
    return run_coroutine(every_page())


def random_link(sliders: list[Slider], rng: random.Random) -> dict[str, str]:
    """A link's query with a random valid value for each of a page's URL-bound sliders (as drawn at the defaults:
    a slider whose range follows another's may get a value the page then replaces, as a real link may)."""
    return {s.query_key: option_text(s, rng.choice(grid(s))) for s in sliders if s.query_key}


async def cross_talk(url: str, page_hash: str) -> bool:
    """Two students on the worked example move their seed sliders to different seeds at once: each must get
    back the share link for their own seed, and not the other's."""
    async def own_link(wanted: int) -> list[str]:
        student = Student(url, page_hash, random.Random(wanted))
        await student.connect()
        try:
            _, seen = await student.rerun()
            seed = next(s for s in seen.sliders.values() if s.query_key == "seed")
            student.widget_values[seed.id] = [float(wanted)]
            student.query["seed"] = str(wanted)
            _, seen = await student.rerun(seed.fragment_id)
            return [m for m in seen.markdown if "seed=" in m]
        finally:
            await student.ws.close()

    links = dict(zip((1, 2), await asyncio.gather(own_link(1), own_link(2)), strict=True))
    return all(any(f"seed={wanted}" in m for m in found) and not any(f"seed={3 - wanted}" in m for m in found)
               for wanted, found in links.items())


def page_hashes(url: str) -> dict[str, str]:
    """Every page of the router: its url path -> its page script hash (from a first run's navigation)."""
    async def fetch() -> dict[str, str]:
        student = Student(url, "", random.Random(0))
        await student.connect()
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        await student.ws.send(msg.SerializeToString())
        try:
            while True:
                fm = ForwardMsg.FromString(await asyncio.wait_for(student.ws.recv(), ANSWER_TIMEOUT_S))
                if fm.WhichOneof("type") == "navigation":
                    return {p.url_pathname: p.page_script_hash for p in fm.navigation.app_pages}
        finally:
            await student.ws.close()
    return run_coroutine(fetch())


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_hall(students: int, minutes: float, arrival_s: float, seed: int, profile: Path | None = None,
             processes: int = 1, regime: str = "notch", poll_round: bool = False) -> dict:
    """One run: `students` on one `streamlit run` process, or on `processes` of them behind nginx
    (`devtools.cluster`), stepping as `regime` says (`REGIMES`). CPU is summed over the app processes; RSS is
    the largest process's peak. With `poll_round`, a lecturer in presenter mode has a round of the class poll open
    on the scaled-attention page's quiz for the whole run, its panel rerunning every second as the browser does
    (`benchmarks.poll_idle.Presenter`), and the students on that page see the round."""
    machine_speed_s = python_loop_s()  # measured before the server starts, with nothing of this run going on
    with tempfile.TemporaryDirectory() as poll_data:
        env = {"ATTENTION_POLL_DATA_DIR": poll_data, "ATTENTION_PRESENTER_KEY": POLL_KEY}
        server = AppServer(env=env) if processes == 1 else Cluster(processes, env=env)
        return _one_hall(server, Path(poll_data) if poll_round else None, students, minutes, arrival_s, seed, profile,
                         processes, regime, machine_speed_s)


def _one_hall(server: AppServer | Cluster, poll_data: Path | None, students: int, minutes: float, arrival_s: float,
              seed: int, profile: Path | None, processes: int, regime: str, machine_speed_s: float) -> dict:
    with server:
        pids = [server.proc.pid] if processes == 1 else server.app_pids
        sampler = None if profile is None else subprocess.Popen(
            [str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pids[0]), "--threads", "--gil",
             "--format", "raw", "--rate", "200", "--output", str(profile)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hashes = page_hashes(server.url)
        pages = sorted(hashes)
        sliders = page_sliders(server.url, hashes) if regime == "link" else {}
        rng = random.Random(seed)
        results = {"first_visit_s": [], "step_s": [], "exceptions": 0, "exception_texts": [], "failed": [],
                   "interrupted_runs": 0, "round_state_asks": 0, "round_state_changes": 0}

        def session(k: int, end_at: float) -> Coroutine[Any, Any, None]:
            page_hash = hashes[pages[k % len(pages)]]
            link = random_link(sliders[page_hash], rng) if regime == "link" else None
            return student_session(server.url, page_hash, seed * 1000 + k, rng.uniform(0, arrival_s), end_at,
                                   results, regime, link)

        async def hall() -> bool:
            end_at = time.monotonic() + arrival_s + minutes * 60
            presenting = None if poll_data is None else await open_poll_round(server.url, hashes, poll_data, end_at,
                                                                              results)
            sessions = [session(k, end_at) for k in range(students)]
            await asyncio.gather(*sessions)
            if presenting is not None:
                await presenting
            return await cross_talk(server.url, hashes[""])

        cpu_before = sum(cpu_s(pid) for pid in pids)
        no_cross_talk = run_coroutine(hall())
        cpu_used = sum(cpu_s(pid) for pid in pids) - cpu_before
        behind_nginx = isinstance(server, Cluster)
        statuses = server.statuses() if behind_nginx else Counter()
        upstream_errors = dict(server.upstream_errors()) if behind_nginx else {}
        rss_mb = max(peak_rss_mb(pid) for pid in pids)
        if sampler is not None:  # py-spy writes its file when the process it samples exits
            server.stop()
            sampler.wait(60)
        steps = results["step_s"]
        return {
            "regime": regime, "processes": processes, "students": students, "steps": len(steps),
            "step_p50_ms": percentile(steps, 0.5) * 1e3, "step_p95_ms": percentile(steps, 0.95) * 1e3,
            "step_max_ms": max(steps, default=float("nan")) * 1e3,
            "first_visit_p50_s": percentile(results["first_visit_s"], 0.5),
            "first_visit_p95_s": percentile(results["first_visit_s"], 0.95),
            "cpu_ms_per_step": cpu_used / max(1, len(steps) + students) * 1e3,
            "rss_mb": rss_mb,
            "exceptions": results["exceptions"], "failed_sessions": len(results["failed"]),
            "interrupted_runs": results["interrupted_runs"],
            "failures": results["failed"][:5], "exception_texts": sorted(set(results["exception_texts"]))[:10],
            "no_cross_talk": no_cross_talk,
            "nginx_5xx": sum(n for status, n in statuses.items() if status >= 500),
            "nginx_502": statuses[502], "taken_out": server.processes_taken_out() if behind_nginx else 0,
            "upstream_errors": upstream_errors,
            "round_state_asks": results["round_state_asks"], "round_state_changes": results["round_state_changes"],
            "poll_round_open": poll_data is not None, "presenter_ticks": results.get("presenter_ticks", 0),
            "python_loop_s": machine_speed_s,
        }


async def open_poll_round(url: str, hashes: dict[str, str], data: Path, end_at: float, results: dict) -> asyncio.Task:
    """The lecturer unlocks the panel of the scaled-attention page's quiz, a round opens (in the store, as Open
    does), and the panel reruns on its interval until `end_at`: the task doing that."""
    from benchmarks.poll_idle import PAGE, QUESTION, QUIZ, Presenter
    from poll import open_store

    lecturer = Presenter(url, hashes[PAGE], POLL_KEY)
    await lecturer.open_page()
    await asyncio.to_thread(open_store(data_directory=data).open_round, QUIZ, QUESTION)

    async def present() -> None:
        await lecturer.tick_until(end_at)
        results["presenter_ticks"] = len(lecturer.counts)
        results["exceptions"] += lecturer.exceptions
        await lecturer.ws.close()

    return asyncio.create_task(present())


def summarise(profile: Path, top: int = 40) -> None:
    """Print the functions the server spent its samples in: own time (the innermost frame) and inclusive time
    (anywhere on the stack), as shares of all samples."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")[1:]  # the first is the thread
        if not frames:
            continue
        n = int(count)
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    print(f"{total} samples")
    for title, counter in (("own", own), ("inclusive", inclusive)):
        print(f"--- {title}")
        for frame, n in counter.most_common(top):
            print(f"{100 * n / total:6.1f}%  {frame}")


def new_settings_cpu(steps_per_slider: int = 8, seed: int = 0) -> dict[str, dict[str, float]]:
    """One student alone on a fresh server: on every page, each slider in turn makes `steps_per_slider` steps to
    values it has not had before (every other slider where the earlier ones left it), so each step asks for a
    setting the server has never computed. For each slider: the server's CPU and the wall time per step.
    Every page is visited once first, so that what a page imports on its first visit is not counted."""
    with AppServer() as server:
        hashes = page_hashes(server.url)
        page_sliders(server.url, hashes)
        pid = server.proc.pid

        async def one_page(path: str, page_hash: str, rng: random.Random) -> dict[str, dict[str, float]]:
            student = Student(server.url, page_hash, rng)
            await student.connect()
            figures = {}
            try:
                _, seen = await student.rerun()
                student.absorb(seen)
                for name in [slider_name(s) for s in seen.sliders.values()]:
                    visited: set[float] = set()
                    cpu_before, t0, steps = cpu_s(pid), time.perf_counter(), 0
                    for _ in range(steps_per_slider):
                        slider = next((s for s in student.sliders.values() if slider_name(s) == name), None)
                        if slider is None:
                            break
                        visited.add(slider.value[0])
                        unseen = [v for v in grid(slider) if v not in visited]
                        if not unseen:
                            break
                        student.set_slider(slider, rng.choice(unseen))
                        _, seen = await student.rerun(slider.fragment_id)
                        student.absorb(seen)
                        steps += 1
                    if steps:
                        figures[f"{path or '(home)'}: {name}"] = {
                            "cpu_ms": (cpu_s(pid) - cpu_before) / steps * 1e3,
                            "wall_ms": (time.perf_counter() - t0) / steps * 1e3, "steps": steps}
            finally:
                await student.ws.close()
            return figures

        async def every_page() -> dict[str, dict[str, float]]:
            rng = random.Random(seed)
            return {k: v for path, h in sorted(hashes.items()) for k, v in (await one_page(path, h, rng)).items()}
        return run_coroutine(every_page())


def slider_name(slider: Slider) -> str:
    """A slider's name that survives a new range (its id does not): its URL key, or its label."""
    return slider.query_key or slider.label


REGIMES = ("notch", "jump", "link")
KEYS = ["steps", "step_p50_ms", "step_p95_ms", "step_max_ms", "first_visit_p50_s", "first_visit_p95_s",
        "cpu_ms_per_step", "rss_mb", "exceptions", "failed_sessions", "interrupted_runs", "nginx_5xx", "taken_out",
        "python_loop_s"]


def summary_of(runs: list[dict]) -> dict:
    """The median of each figure over the runs of one layout and regime; cross-talk must be absent from every run."""
    summary = {k: statistics.median(r[k] for r in runs) for k in KEYS}
    summary["no_cross_talk"] = all(r["no_cross_talk"] for r in runs)
    return summary


def layout_name(regime: str, processes: int) -> str:
    """A column's heading: how the students step, and on how many processes."""
    return f"{regime}, " + ("1 process" if processes == 1 else f"{processes} behind nginx")


def table(summaries: dict[str, dict]) -> str:
    """The medians side by side, one column per regime and layout (`layout_name`), with the targets (which apply
    to one process)."""
    width = max(16, *(len(h) + 2 for h in summaries))
    lines = [f"  {'':<20}" + "".join(f"{h:>{width}}" for h in summaries) + "  target (one process)"]
    for k in KEYS + ["no_cross_talk"]:
        cells = "".join(f"{v[k]:>{width}.4g}" if isinstance(v[k], float) else f"{v[k]!s:>{width}}"
                        for v in summaries.values())
        target = TARGETS.get(k)
        lines.append(f"  {k:<20}{cells}" + (f"  <= {target:g}" if target is not None else ""))
    return "\n".join(lines)


def solo_table(per_slider: dict[str, dict[str, float]]) -> str:
    """The CPU and wall time of a step to a new setting, per slider, and their medians over the sliders."""
    lines = [f"  {'slider':<34}{'CPU ms':>8}{'wall ms':>9}"]
    lines += [f"  {name:<34}{f['cpu_ms']:>8.1f}{f['wall_ms']:>9.1f}" for name, f in per_slider.items()]
    cpu = statistics.median(f["cpu_ms"] for f in per_slider.values())
    wall = statistics.median(f["wall_ms"] for f in per_slider.values())
    lines.append(f"  {'median over sliders':<34}{cpu:>8.1f}{wall:>9.1f}  target: CPU <= {NEW_SETTING_CPU_MS:g}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--arrival", type=float, default=5.0, help="students arrive within this many seconds")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--regimes", nargs="+", choices=REGIMES, default=list(REGIMES),
                        help="how students step: notch (arrow keys), jump (anywhere on a slider), link (first "
                             "visit at a random link's values, then jumps)")
    parser.add_argument("--processes", type=int, nargs="+", default=[1],
                        help="layouts to compare, e.g. 1 2: one process, then two behind nginx (alternating)")
    parser.add_argument("--solo-steps", type=int, default=8,
                        help="steps to new values per slider for one student alone (0: skip that measurement)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/load_results.json"))
    parser.add_argument("--profile", type=Path, help="sample the (first) app process with py-spy into this file "
                                                     "(first repeat of the first regime and layout)")
    parser.add_argument("--poll-round", action="store_true",
                        help="a lecturer keeps a class-poll round open on the scaled-attention page, its panel "
                             "rerunning every second, for the whole run")
    parser.add_argument("--summarise", type=Path, help="print where a profile's samples went, then exit")
    args = parser.parse_args()
    if args.summarise:
        summarise(args.summarise)
        return
    columns = [(r, n) for r in args.regimes for n in args.processes]
    runs: dict[str, list[dict]] = {layout_name(r, n): [] for r, n in columns}
    solo: list[dict[str, dict[str, float]]] = []
    for seed in range(args.repeats):  # regimes and layouts alternate, so a change in the machine's load hits all
        if args.solo_steps:
            solo.append(new_settings_cpu(args.solo_steps, seed))
        for k, (regime, n) in enumerate(columns):
            profile = args.profile if seed == 0 and k == 0 else None
            runs[layout_name(regime, n)].append(
                one_hall(args.students, args.minutes, args.arrival, seed, profile, processes=n, regime=regime,
                         poll_round=args.poll_round))
    summaries = {name: summary_of(r) for name, r in runs.items()}
    print(f"{args.students} students, {args.minutes:g} min, arriving within {args.arrival:g} s, "
          f"{args.repeats} repeat(s), medians; Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(table(summaries))
    solo_median = {}
    if solo:
        solo_median = {name: {k: statistics.median(run[name][k] for run in solo if name in run) for k in ("cpu_ms",
                                                                                                        "wall_ms")}
                       for name in solo[0]}
        print(f"One student alone, {args.solo_steps} steps per slider to settings never computed, medians:")
        print(solo_table(solo_median))
    args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                    "layouts": {name: {"runs": runs[name], "median": summaries[name]} for name in runs},
                                    "new_settings": {"runs": solo, "median": solo_median}},
                                   indent=2, default=str))


if __name__ == "__main__":
    main()
