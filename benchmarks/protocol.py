"""Streamlit's websocket protocol spoken as a browser tab does, for the benchmarks: no browser, no front end.

A `Student` is one tab: it loads the page's HTML (for its cookies, as a browser does), opens the websocket, sends
the `BackMsg` protobufs the front end sends (a rerun of the page or of one fragment, with every widget's state and
the query string) and reads the `ForwardMsg`s back until the run is finished. `HttpConnection` is the tab's
keep-alive connection for plain GETs (the class poll's route). `page_hashes` and `page_sliders` read what the
router and the pages draw; `cpu_s` and `peak_rss_mb` read a server process's CPU and memory from /proc.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import random
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from ui.poll_watch import WATCH_KEY_PREFIX

T = TypeVar("T")
ANSWER_TIMEOUT_S = 60.0


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


@dataclass
class Switch:
    """A radio (its options' texts) or a toggle (``["false", "true"]``) as the server drew it: enough to flip it
    as the browser would."""

    id: str
    label: str
    options: list[str]
    value: str  # the chosen option's text
    fragment_id: str
    query_key: str

    @property
    def is_toggle(self) -> bool:
        return self.options == TOGGLE_OPTIONS

    def state(self) -> WidgetState:
        """The widget's state as the browser sends it with every rerun: a radio's option text, a toggle's bool."""
        if self.is_toggle:
            return WidgetState(id=self.id, bool_value=self.value == "true")
        return WidgetState(id=self.id, string_value=self.value)


#: A toggle's two values, as the URL writes them.
TOGGLE_OPTIONS = ["false", "true"]


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
    switches: dict[str, Switch] = field(default_factory=dict)  # radios and toggles inside fragments
    exceptions: int = 0
    exception_texts: list[str] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)
    fragments: set[str] = field(default_factory=set)  # the fragments that ran
    ran: str = ""  # the fragment the rerun asked for ("" for the whole page)
    spans: dict[str, list[int]] = field(default_factory=dict)  # a fragment's first and last message, in order
    interrupted: int = 0  # runs that stopped early for another (an `st.rerun`, or a newer request)
    widgets: dict[str, tuple[str, str]] = field(default_factory=dict)  # a button's or text area's label: id, fragment
    watcher: dict | None = None  # the class poll's watcher (`ui.poll_watch`) as drawn: its data (url, every_ms)
    started_s: float = float("nan")  # from sending the rerun to its run's start (the server's `new_session`)


class HttpConnection:
    """One keep-alive HTTP/1.1 connection, as a browser keeps to its server: ``await get(path)`` -> (status, body)."""

    def __init__(self, url: str, cookies: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port, self.cookies = parts.hostname, parts.port or 80, cookies
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, str]:
        status, body = await self.get_bytes(path)
        return status, body.decode()

    async def get_bytes(self, path: str) -> tuple[int, bytes]:
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
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


#: Connections a browser keeps to one HTTP/1.1 server at once.
BROWSER_CONNECTIONS = 6


async def fetch_front_end(url: str, paths: list[str], cookies: str = "") -> int:
    """Fetch `paths` over `BROWSER_CONNECTIONS` kept-alive connections, each taking the next path as it is free.
    Returns the bytes received; a status other than 200 raises OSError."""
    todo = iter(paths)
    received = 0

    async def one_connection() -> None:
        nonlocal received
        http = HttpConnection(url, cookies)
        try:
            for path in todo:
                status, body = await http.get_bytes(path)
                if status != 200:
                    raise OSError(f"GET {path}: HTTP {status}")
                received += len(body)
        finally:
            http.close()

    await asyncio.gather(*(one_connection() for _ in range(BROWSER_CONNECTIONS)))
    return received


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
        self.switches: dict[str, Switch] = {}
        self.switch_states: dict[str, WidgetState] = {}  # the switches this student flipped, sent with every rerun
        self.extra_states: list = []  # other widgets' states (WidgetState protos), sent with the next rerun only
        self.cookies = ""  # what the page came with (behind nginx, its route cookie)
        self.ws = None
        self.source_address = ""  # the local address the websocket comes from ("": the system's choice)
        self.front_end_bytes = 0  # what `connect` fetched of the front end
        self.parents: dict[str, str] = {}  # a fragment -> the fragment it was drawn in, as seen so far

    def _nested_in(self, fragment: str, ran: str) -> bool:
        """Whether `fragment` was drawn inside the fragment `ran` (any fragment, for a run of the whole page)."""
        if not ran:
            return True
        while fragment in self.parents:
            fragment = self.parents[fragment]
            if fragment == ran:
                return True
        return False

    async def connect(self, front_end: Sequence[str] = ()) -> None:
        """Load the page and the front end's files `front_end` (`benchmarks.front_end`), as a browser does before
        it opens the websocket, and open the websocket with the cookies the page came with (behind nginx, the
        route cookie that keeps this student on one process)."""
        self.cookies = cookies = await asyncio.to_thread(self.load_page)
        if front_end:
            self.front_end_bytes = await fetch_front_end(self.http_url, list(front_end), cookies)
        local = {"local_addr": (self.source_address, 0)} if self.source_address else {}
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=2**27,
                                           additional_headers={"Cookie": cookies} if cookies else None, **local)

    def load_page(self) -> str:
        """GET the app's page (its HTML only; a browser would then fetch the front end's files): its cookies."""
        with urllib.request.urlopen(self.http_url + "/", timeout=ANSWER_TIMEOUT_S) as response:
            response.read()
            return "; ".join(c.split(";", 1)[0] for c in response.headers.get_all("Set-Cookie") or [])

    async def rerun(self, fragment_id: str = "",
                    heard: Callable[[float, ForwardMsg], None] | None = None) -> tuple[float, RunSeen]:
        """Send a rerun (of the page, or of one fragment) and read until the run is finished; `heard` is told of
        every message as it comes, with its time (``time.perf_counter()``)."""
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
        state.widget_states.widgets.extend(self.switch_states.values())
        state.widget_states.widgets.extend(self.extra_states)
        self.extra_states = []
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        seen = RunSeen(ran=fragment_id)
        for number in itertools.count():
            try:
                raw = await asyncio.wait_for(self.ws.recv(), ANSWER_TIMEOUT_S)
            except TimeoutError as exc:  # say which run never ended, for the failure's report
                raise TimeoutError(f"no end of the run of page {self.page_hash}, fragment {fragment_id or '(none)'}, "
                                   f"within {ANSWER_TIMEOUT_S:g} s, after {number} messages of it") from exc
            fm = ForwardMsg.FromString(raw)
            if heard is not None:
                heard(time.perf_counter(), fm)
            kind = fm.WhichOneof("type")
            if kind == "new_session" and math.isnan(seen.started_s):  # the first run this request started
                seen.started_s = time.perf_counter() - t0
            if kind == "delta" and fm.delta.fragment_id:
                seen.fragments.add(fm.delta.fragment_id)
                seen.spans.setdefault(fm.delta.fragment_id, [number, number])[1] = number
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
                elif which in ("radio", "checkbox") and fm.delta.fragment_id:
                    w = getattr(element, which)
                    if which == "radio":
                        options = list(w.options)
                        chosen = w.raw_value if w.HasField("raw_value") else options[w.default]
                    else:
                        on = w.value if w.set_value else w.default  # `value` is sent only when the server sets it
                        options, chosen = list(TOGGLE_OPTIONS), "true" if on else "false"
                    seen.switches[w.id] = Switch(w.id, w.label, options, chosen, fm.delta.fragment_id,
                                                 w.query_param_key)
                    if w.set_value:
                        self.switch_states.pop(w.id, None)
            elif kind == "page_info_changed":  # the server rewrote the URL, as it does when it changes a widget
                self.query = dict(parse_qsl(fm.page_info_changed.query_string))
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:  # another run follows: wait for it
                    seen.interrupted += 1
                    continue
                return time.perf_counter() - t0, seen

    async def check_code(self, source: str) -> RunSeen:
        """On the exercise page: a first run, then `source` in the editor and "Check my code" pressed (its run)."""
        _, seen = await self.rerun()
        editor = next(v for k, v in seen.widgets.items() if k.startswith("Your `scaled_dot_product_attention`"))
        button_id, fragment = seen.widgets["Check my code"]
        self.extra_states = [WidgetState(id=editor[0], string_value=source),
                             WidgetState(id=button_id, trigger_value=True)]
        _, seen = await self.rerun(fragment)
        return seen

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

    def set_switch(self, switch: Switch, value: str) -> None:
        """Flip `switch` to `value` (an option's text, or a toggle's ``"true"``/``"false"``), in its state and the URL."""
        switch.value = value
        self.switch_states[switch.id] = switch.state()
        if switch.query_key:
            self.query[switch.query_key] = value

    def absorb(self, seen: RunSeen) -> None:
        """Take over the sliders and switches as the server last drew them (range, options, value), as the browser
        does. A slider or switch that a fragment which ran did not draw again is gone (a slider's id changes with
        its range), and so is its state; so is one of a fragment nested in the one that ran, if this run did not
        draw that fragment at all (a section shown only at some settings). The server ignores a rerun asked of a
        fragment it no longer holds, so a tab that kept such a control would wait for an answer that never comes."""
        for inner, (first, last) in seen.spans.items():  # drawn between an outer fragment's first and last message
            outer = [f for f, (a, b) in seen.spans.items() if a < first and last < b]
            if outer:
                self.parents[inner] = min(outer, key=lambda f: seen.spans[f][1] - seen.spans[f][0])
        for held, drawn, states in ((self.sliders, seen.sliders, self.widget_values),
                                    (self.switches, seen.switches, self.switch_states)):
            for widget_id, widget in list(held.items()):
                inside = widget.fragment_id in seen.fragments or self._nested_in(widget.fragment_id, seen.ran)
                if inside and widget_id not in drawn:
                    del held[widget_id]
                    states.pop(widget_id, None)
        for slider_id, slider in seen.sliders.items():
            if slider_id in self.widget_values and slider_id in self.sliders:
                slider.value = self.sliders[slider_id].value  # the value this student set
            self.sliders[slider_id] = slider
        for switch_id, switch in seen.switches.items():
            if switch_id in self.switch_states and switch_id in self.switches:
                switch.value = self.switches[switch_id].value  # the value this student set
            self.switches[switch_id] = switch



async def first_run(url: str, page_hash: str) -> RunSeen:
    """A new student opens the page, sees its first run, and leaves: what that run sent."""
    student = Student(url, page_hash, random.Random(0))
    await student.connect()
    try:
        _, seen = await student.rerun()
    finally:
        await student.ws.close()
    return seen


def page_sliders(url: str, hashes: dict[str, str]) -> dict[str, list[Slider]]:
    """Every page's sliders as drawn at its defaults (page script hash -> sliders), for random links."""
    async def every_page() -> dict[str, list[Slider]]:
        return {h: list((await first_run(url, h)).sliders.values()) for h in hashes.values()}
    return run_coroutine(every_page())



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


#: Pages that show their controls only once something is trained: their url path and the button that trains it.
TRAINED_BEFORE_CLASS = {"decoder": "Train"}


def train_before_class(url: str, hashes: dict[str, str], tries: int = 1) -> None:
    """Press each page's train button at its default settings, as a lecturer does before class, so that students
    find the controls that follow it (those of them among `hashes`). Behind nginx each try may reach another
    process: `tries` of them."""

    async def press(page_hash: str, label: str) -> None:
        student = Student(url, page_hash, random.Random(0))
        await student.connect()
        try:
            _, seen = await student.rerun()
            if label in seen.widgets:  # else trained already: the button reads "Trained"
                button_id, fragment_id = seen.widgets[label]
                student.extra_states = [WidgetState(id=button_id, trigger_value=True)]
                await student.rerun(fragment_id)
        finally:
            await student.ws.close()

    async def every_page() -> None:
        for path, label in TRAINED_BEFORE_CLASS.items():
            for _ in range(tries if path in hashes else 0):
                await press(hashes[path], label)
    run_coroutine(every_page())


def process_cpu_clock(pid: int) -> int:
    """The clock id of process `pid`'s CPU time, every thread's, live or ended (Linux's ``clock_getcpuclockid``:
    ``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``), read in nanoseconds by ``time.clock_gettime_ns``."""
    return (~pid << 3) | 2


def cpu_s(pid: int) -> float:
    """Process `pid`'s CPU time in seconds, all its threads' (those that ended included): from the scheduler's
    nanosecond clock where the kernel lets us read it, else ``utime + stime`` from /proc, in clock ticks (10 ms)."""
    try:
        return time.clock_gettime_ns(process_cpu_clock(pid)) / 1e9
    except OSError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")

