"""A lecture hall on one server: simulated students speaking Streamlit's own websocket protocol.

    python -m benchmarks.load [--students 60] [--minutes 2] [--arrival 5] [--repeats 1] [--processes 1 2]
                              [--out benchmarks/load_results.json] [--profile FILE]

No browser: each student is a websocket client (the `websockets` package Streamlit already depends on) that
sends the `BackMsg` protobufs the front end sends and reads the `ForwardMsg`s back. Students arrive within
`--arrival` seconds, spread over every page of the router, open their page, then make slider steps with
1–3 s pauses until the time is up. A step is what the browser sends for a slider inside a page's fragment:
a rerun of that fragment only, with every widget's state and the new query string.

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
* exception boxes sent, and sessions that failed (no answer, or a closed connection);
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
import time
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

T = TypeVar("T")
TARGETS = {"step_p50_ms": 250.0, "step_p95_ms": 1000.0, "cpu_ms_per_step": 20.0, "rss_mb": 1024.0}
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
class RunSeen:
    """What one rerun sent back."""

    sliders: dict[str, Slider] = field(default_factory=dict)
    exceptions: int = 0
    exception_texts: list[str] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)
    fragments: set[str] = field(default_factory=set)  # the fragments that ran
    interrupted: int = 0  # runs that stopped early for another (an `st.rerun`, or a newer request)


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
        self.ws = None

    async def connect(self) -> None:
        """Load the page, as a browser does before it opens the websocket, and open the websocket with the
        cookies the page came with (behind nginx, the route cookie that keeps this student on one process)."""
        cookies = await asyncio.to_thread(self.load_page)
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

    def step_slider(self) -> str:
        """Move a random slider one step, as an arrow key does; return the fragment to rerun."""
        slider = self.rng.choice(list(self.sliders.values()))
        current = slider.value[0]
        up = current + slider.step <= slider.high and (current - slider.step < slider.low or self.rng.random() < 0.5)
        new = current + slider.step if up else current - slider.step
        slider.value = [new]
        if slider.options:  # a select slider: the index of an option, sent as the option's text
            text = slider.options[int(new)]
            self.widget_values[slider.id] = [text]
        else:
            text = str(int(new)) if float(new).is_integer() else str(new)
            self.widget_values[slider.id] = [new]
        if slider.query_key:
            self.query[slider.query_key] = text
        return slider.fragment_id

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
                          results: dict) -> None:
    rng = random.Random(seed)
    await asyncio.sleep(arrive_s)
    student = Student(url, page_hash, rng)
    try:
        arrived = time.perf_counter()
        await student.connect()
        _, seen = await student.rerun()
        results["first_visit_s"].append(time.perf_counter() - arrived)
        results["exceptions"] += seen.exceptions
        results["exception_texts"] += seen.exception_texts
        results["interrupted_runs"] += seen.interrupted
        student.absorb(seen)
        while student.sliders and time.monotonic() < end_at:
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            fragment = student.step_slider()
            took, seen = await student.rerun(fragment)
            results["step_s"].append(took)
            results["exceptions"] += seen.exceptions
            results["exception_texts"] += [f"{page_hash[:6]} {t}" for t in seen.exception_texts]
            results["interrupted_runs"] += seen.interrupted
            student.absorb(seen)
    except (TimeoutError, websockets.ConnectionClosed, OSError) as exc:
        results["failed"].append(f"{type(exc).__name__}: {exc}"[:200])
    finally:
        if student.ws is not None:
            await student.ws.close()


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
             processes: int = 1) -> dict:
    """One run: `students` on one `streamlit run` process, or on `processes` of them behind nginx
    (`devtools.cluster`). CPU is summed over the app processes; RSS is the largest process's peak."""
    machine_speed_s = python_loop_s()  # measured before the server starts, with nothing of this run going on
    server = AppServer() if processes == 1 else Cluster(processes)
    with server:
        pids = [server.proc.pid] if processes == 1 else server.app_pids
        sampler = None if profile is None else subprocess.Popen(
            [str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pids[0]), "--threads", "--gil",
             "--format", "raw", "--rate", "200", "--output", str(profile)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hashes = page_hashes(server.url)
        pages = sorted(hashes)
        rng = random.Random(seed)
        results = {"first_visit_s": [], "step_s": [], "exceptions": 0, "exception_texts": [], "failed": [],
                   "interrupted_runs": 0}

        async def hall() -> bool:
            end_at = time.monotonic() + arrival_s + minutes * 60
            sessions = [student_session(server.url, hashes[pages[k % len(pages)]], seed * 1000 + k,
                                        rng.uniform(0, arrival_s), end_at, results) for k in range(students)]
            await asyncio.gather(*sessions)
            return await cross_talk(server.url, hashes[""])

        cpu_before = sum(cpu_s(pid) for pid in pids)
        no_cross_talk = run_coroutine(hall())
        cpu_used = sum(cpu_s(pid) for pid in pids) - cpu_before
        rss_mb = max(peak_rss_mb(pid) for pid in pids)
        if sampler is not None:  # py-spy writes its file when the process it samples exits
            server.stop()
            sampler.wait(60)
        steps = results["step_s"]
        return {
            "processes": processes, "students": students, "steps": len(steps),
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
            "python_loop_s": machine_speed_s,
        }


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


KEYS = ["steps", "step_p50_ms", "step_p95_ms", "step_max_ms", "first_visit_p50_s", "first_visit_p95_s",
        "cpu_ms_per_step", "rss_mb", "exceptions", "failed_sessions", "interrupted_runs", "python_loop_s"]


def summary_of(runs: list[dict]) -> dict:
    """The median of each figure over the runs of one layout; cross-talk must be absent from every run."""
    summary = {k: statistics.median(r[k] for r in runs) for k in KEYS}
    summary["no_cross_talk"] = all(r["no_cross_talk"] for r in runs)
    return summary


def table(summaries: dict[int, dict]) -> str:
    """The medians side by side, one column per layout, with the targets (which apply to one process)."""
    heads = [("1 process" if n == 1 else f"{n} behind nginx") for n in summaries]
    lines = [f"  {'':<20}" + "".join(f"{h:>16}" for h in heads) + "  target (one process)"]
    for k in KEYS + ["no_cross_talk"]:
        cells = "".join(f"{v[k]:>16.4g}" if isinstance(v[k], float) else f"{v[k]!s:>16}" for v in summaries.values())
        target = TARGETS.get(k)
        lines.append(f"  {k:<20}{cells}" + (f"  <= {target:g}" if target is not None else ""))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--arrival", type=float, default=5.0, help="students arrive within this many seconds")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--processes", type=int, nargs="+", default=[1],
                        help="layouts to compare, e.g. 1 2: one process, then two behind nginx (alternating)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/load_results.json"))
    parser.add_argument("--profile", type=Path, help="sample the (first) app process with py-spy into this file "
                                                     "(first repeat of the first layout)")
    parser.add_argument("--summarise", type=Path, help="print where a profile's samples went, then exit")
    args = parser.parse_args()
    if args.summarise:
        summarise(args.summarise)
        return
    runs: dict[int, list[dict]] = {n: [] for n in args.processes}
    for seed in range(args.repeats):  # the layouts alternate, so a change in the machine's load hits them alike
        for n in args.processes:
            profile = args.profile if seed == 0 and n == args.processes[0] else None
            runs[n].append(one_hall(args.students, args.minutes, args.arrival, seed, profile, processes=n))
    summaries = {n: summary_of(r) for n, r in runs.items()}
    print(f"{args.students} students, {args.minutes:g} min, arriving within {args.arrival:g} s, "
          f"{args.repeats} repeat(s), medians; Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(table(summaries))
    args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                    "layouts": {str(n): {"runs": runs[n], "median": summaries[n]} for n in runs}},
                                   indent=2, default=str))


if __name__ == "__main__":
    main()
