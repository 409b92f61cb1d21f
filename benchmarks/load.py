"""A lecture hall on one server: simulated students speaking Streamlit's own websocket protocol.

    python -m benchmarks.load [--students 60] [--minutes 2] [--arrival 5] [--repeats 1]
                              [--out benchmarks/load_results.json]

No browser: each student is a websocket client (the `websockets` package Streamlit already depends on) that
sends the `BackMsg` protobufs the front end sends and reads the `ForwardMsg`s back. Students arrive within
`--arrival` seconds, spread over every page of the router, open their page, then make slider steps with
1–3 s pauses until the time is up. A step is what the browser sends for a slider inside a page's fragment:
a rerun of that fragment only, with every widget's state and the new query string.

Reported (per repeat; medians over repeats):

* step latency, from sending the step to the server's ``script_finished``: p50, p95, max;
* first visit, from the first message to ``script_finished``: p50, p95;
* the server process's CPU time per step (all its threads, from /proc), and its peak RSS;
* exception boxes sent, and sessions that failed (no answer, or a closed connection);
* cross-talk: two extra students on the worked example, seeds 1 and 2, each step their own seed slider and
  must each get back the share link for their own seed.

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
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from devtools.appserver import AppServer

TARGETS = {"step_p50_ms": 250.0, "step_p95_ms": 1000.0, "cpu_ms_per_step": 20.0, "rss_mb": 1024.0}
ANSWER_TIMEOUT_S = 60.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


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


class Student:
    """One browser tab, as Streamlit's server sees it."""

    def __init__(self, url: str, page_hash: str, rng: random.Random) -> None:
        self.ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.page_hash = page_hash
        self.rng = rng
        self.query: dict[str, str] = {}
        self.widget_values: dict[str, list[float] | list[str]] = {}
        self.sliders: dict[str, Slider] = {}
        self.ws = None

    async def connect(self) -> None:
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=2**27)

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
        await student.connect()
        first, seen = await student.rerun()
        results["first_visit_s"].append(first)
        results["exceptions"] += seen.exceptions
        results["exception_texts"] += seen.exception_texts
        student.absorb(seen)
        while student.sliders and time.monotonic() < end_at:
            await asyncio.sleep(rng.uniform(1.0, 3.0))
            fragment = student.step_slider()
            took, seen = await student.rerun(fragment)
            results["step_s"].append(took)
            results["exceptions"] += seen.exceptions
            results["exception_texts"] += [f"{page_hash[:6]} {t}" for t in seen.exception_texts]
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
    return asyncio.run(fetch())


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_hall(students: int, minutes: float, arrival_s: float, seed: int) -> dict:
    with AppServer() as server:
        hashes = page_hashes(server.url)
        pages = sorted(hashes)
        rng = random.Random(seed)
        results = {"first_visit_s": [], "step_s": [], "exceptions": 0, "exception_texts": [], "failed": []}

        async def hall() -> bool:
            end_at = time.monotonic() + arrival_s + minutes * 60
            sessions = [student_session(server.url, hashes[pages[k % len(pages)]], seed * 1000 + k,
                                        rng.uniform(0, arrival_s), end_at, results) for k in range(students)]
            await asyncio.gather(*sessions)
            return await cross_talk(server.url, hashes[""])

        cpu_before = cpu_s(server.proc.pid)
        no_cross_talk = asyncio.run(hall())
        cpu_used = cpu_s(server.proc.pid) - cpu_before
        steps = results["step_s"]
        return {
            "students": students, "steps": len(steps),
            "step_p50_ms": percentile(steps, 0.5) * 1e3, "step_p95_ms": percentile(steps, 0.95) * 1e3,
            "step_max_ms": max(steps, default=float("nan")) * 1e3,
            "first_visit_p50_s": percentile(results["first_visit_s"], 0.5),
            "first_visit_p95_s": percentile(results["first_visit_s"], 0.95),
            "cpu_ms_per_step": cpu_used / max(1, len(steps) + students) * 1e3,
            "rss_mb": peak_rss_mb(server.proc.pid),
            "exceptions": results["exceptions"], "failed_sessions": len(results["failed"]),
            "failures": results["failed"][:5], "exception_texts": sorted(set(results["exception_texts"]))[:10],
            "no_cross_talk": no_cross_talk,
        }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--arrival", type=float, default=5.0, help="students arrive within this many seconds")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/load_results.json"))
    args = parser.parse_args()
    runs = [one_hall(args.students, args.minutes, args.arrival, seed) for seed in range(args.repeats)]
    keys = ["steps", "step_p50_ms", "step_p95_ms", "step_max_ms", "first_visit_p50_s", "first_visit_p95_s",
            "cpu_ms_per_step", "rss_mb", "exceptions", "failed_sessions"]
    summary = {k: statistics.median(r[k] for r in runs) for k in keys}
    summary["no_cross_talk"] = all(r["no_cross_talk"] for r in runs)
    print(f"{args.students} students, {args.minutes:g} min, arriving within {args.arrival:g} s, "
          f"{args.repeats} repeat(s), Python {platform.python_version()}")
    for k in keys + ["no_cross_talk"]:
        target = TARGETS.get(k)
        met = "" if target is None else ("  met" if summary[k] <= target else f"  target <= {target:g}: not met")
        print(f"  {k:<20} {summary[k]:>10.4g}{met}" if isinstance(summary[k], float) else f"  {k:<20} {summary[k]}")
    args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "runs": runs, "median": summary},
                                   indent=2, default=str))


if __name__ == "__main__":
    main()
